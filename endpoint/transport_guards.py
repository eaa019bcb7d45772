"""Limits below the application that uvicorn's own HTTP/1.1 (h11) and WebSocket protocols do not apply, for a server on
an open network.

A connection must finish its headers within ``header_timeout_s`` (slowloris); heads are capped at
``max_header_bytes``; connections per address and in all follow the fair rule (``endpoint.fair_admission``), the
evicted told why; an address whose junk budget is empty gets 429 before the handshake; malformed requests get a JSON
400; a send to a client that stopped reading, or an unanswered ping or close, aborts the transport after
``send_timeout_s``. ``guarded_protocols`` makes the classes per server, with its settings."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from http import HTTPStatus
from typing import Any

import h11
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.utils import ClientDisconnected
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from voicedesk.endpoint.fair_admission import LINGER_S, admit, evicted
from voicedesk.endpoint.log_safety import CountLog, refusal_log
from voicedesk.endpoint.settings import ServerSettings
from voicedesk.engine.errors import ErrorCode, VoicedeskError, close_code_for, error_body, http_status_for
from voicedesk.engine.events import Closed, Error
from voicedesk.engine.limits import JunkByAddress, ReadPacing
from voicedesk.engine.protocol import encode_event

log = logging.getLogger(__name__)


CONTROL_SLICE_BYTES = 4096
"""How much of a read is parsed before the ping budget is looked at again (a few hundred pings at most)."""


class TimedFlowControl(FlowControl):
    """uvicorn's write flow control, but a drain that waits too long aborts the transport."""

    def __init__(self, transport: asyncio.Transport, send_timeout_s: float) -> None:
        super().__init__(transport)
        self._send_timeout_s = send_timeout_s

    async def drain(self) -> None:
        try:
            async with asyncio.timeout(self._send_timeout_s):
                await self._is_writable_event.wait()
        except TimeoutError:
            log.info("a client stopped reading for %.0f s; connection aborted", self._send_timeout_s)
            self._transport.abort()
            self.resume_writing()


class GuardedH11Protocol(H11Protocol):
    settings: ServerSettings
    refusals: CountLog
    junk_by_address: JunkByAddress | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.flow = TimedFlowControl(transport, self.settings.send_timeout_s)
        self._header_timer: asyncio.TimerHandle | None = None
        self._timed_cycle: object | None = None
        self._lingering = False
        """The request cycle that was current when the timer was armed: a new one means a head arrived."""
        self.last_active = time.monotonic()
        """When the client last sent bytes (the idlest connection is the one closed to make room)."""
        refusal = self._over_cap()
        if refusal is not None:
            self.refusals.add({refusal: 1})
            transport.abort()
            return
        if self._refuse_junk_address():
            return
        self._arm_header_timer()

    def _refuse_junk_address(self) -> bool:
        """An address whose junk budget is empty is told so before its request is read (later and later: ``hold_s``)."""
        host = self.client[0] if self.client else None
        by_address = self.junk_by_address
        now = time.monotonic()
        wait_s = by_address.refusal_s(host, now) if by_address is not None and host else 0.0
        if wait_s <= 0:
            return False
        self.refusals.add({"junk budget of the address (frames not understood, or reconnecting into its cap)": 1})
        hold_s = by_address.hold_s(host, now)  # type: ignore[union-attr,arg-type]
        wait_s = max(0.1, wait_s - hold_s)
        error = VoicedeskError(
            ErrorCode.RATE_LIMITED,
            "Your address was refused too often here: its connections sent frames that could not be understood, or "
            f"it kept reconnecting beyond its session cap. Connect again in {wait_s:.1f} s and send valid JSON "
            "commands; an address that reconnects at once is answered later and later.",
        )
        error.details = {"retry_after_s": round(wait_s, 1)}  # type: ignore[attr-defined]
        if hold_s <= 0:
            self.evict(error)
        else:  # its request is never read: the answer is the same whatever it says
            self.transport.pause_reading()
            self.loop.call_later(hold_s, self._answer_held, error)
        return True

    def _answer_held(self, error: VoicedeskError) -> None:
        if not self.transport.is_closing():
            self.evict(error)
            self.transport.resume_reading()  # the lingering close reads and drops what it sent

    def _over_cap(self) -> str | None:
        """The fair rule (``endpoint.fair_admission``); a connection closed to make room is told why first."""
        settings = self.settings
        host = self.client[0] if self.client else None
        others = [c for c in self.connections if c is not self and hasattr(c, "last_active")]
        admission = admit(others, host, settings.max_connections, settings.max_connections_per_client)
        if admission.refused is not None:
            return "per-client connection cap" if admission.refused == "per-client cap" else "connection cap"
        if (victim := admission.victim) is not None:
            self.connections.discard(victim)  # counted out now; its connection_lost comes later
            victim.evict(evicted("connections", settings.max_connections))  # type: ignore[attr-defined]
            self.refusals.add({"fair share (a connection of a busier address, closed to make room)": 1})
        return None

    @property
    def speaking(self) -> bool:
        """A request is in progress (an idle or slow-header connection makes room first)."""
        return self.cycle is not None and not self.cycle.response_complete

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request h11 cannot parse (malformed, or headers over ``max_header_bytes``)."""
        message = (
            f"The HTTP request could not be parsed: it is malformed, or its request line and headers are over "
            f"{self.settings.max_header_bytes:,} bytes."
        )
        body = json.dumps(error_body(VoicedeskError(ErrorCode.BAD_MESSAGE, message))).encode()
        headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
        for event in (h11.Response(status_code=400, headers=headers), h11.Data(data=body), h11.EndOfMessage()):
            self.transport.write(self.conn.send(event))
        self._linger_close()

    def evict(self, error: VoicedeskError) -> None:
        """Closed to make room: an idle connection is told why in JSON, one with a request in progress is aborted."""
        if self._lingering or self.transport.is_closing():  # already on its way out (refused, or answered)
            return
        if self.cycle is not None and not self.cycle.response_complete:
            self.transport.abort()
            return
        status = http_status_for(error.code)
        body = json.dumps(error_body(error)).encode()
        head = (
            f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        )
        self.transport.write(head.encode() + body)
        self._linger_close()

    def _linger_close(self) -> None:
        # A lingering close: closing with the client's bytes unread would reset the connection, and the reset
        # can destroy the answer before the client reads it. Stop sending, drop what still comes, abort soon.
        self._lingering = True
        self._cancel_header_timer()
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(LINGER_S, self.transport.abort)

    def data_received(self, data: bytes) -> None:
        if self._lingering:
            return
        self.last_active = time.monotonic()
        super().data_received(data)
        if self.cycle is not self._timed_cycle:
            self._cancel_header_timer()  # a new request's head is complete

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_header_timer()  # the next request's head must come in time too

    def handle_websocket_upgrade(self, event: Any) -> None:
        self._cancel_header_timer()
        super().handle_websocket_upgrade(event)

    def _arm_header_timer(self) -> None:
        self._cancel_header_timer()
        self._timed_cycle = self.cycle
        self._header_timer = self.loop.call_later(self.settings.header_timeout_s, self._header_timeout)

    def _cancel_header_timer(self) -> None:
        timer = getattr(self, "_header_timer", None)
        if timer is not None:
            timer.cancel()
            self._header_timer = None

    def _header_timeout(self) -> None:
        self._header_timer = None
        if self.cycle is None or self.cycle.response_complete:
            self.transport.abort()


class GuardedWebSocketProtocol(WebSocketsSansIOProtocol):
    settings: ServerSettings

    speaking = True
    """An upgraded WebSocket holds a session (whose own fairness is the session's); idle HTTP connections go first."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self.last_active = time.monotonic()
        limits = self.settings.connection
        self._control = ReadPacing(limits.frames_per_s, limits.frame_burst, self.last_active)
        self._control_paused = False
        self._held = b""
        """Bytes read but not yet parsed while pings wait for the frame budget (order kept)."""
        super().connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self.last_active = time.monotonic()
        if self._control_paused:  # uvicorn resumed reading for a message meanwhile: hold it, read no more
            self._held += data
            self.transport.pause_reading()
            return
        self._feed(data)

    def _feed(self, data: bytes) -> None:
        """Parses ``data`` a slice at a time, so a burst of pings in one read is paced too."""
        for start in range(0, len(data), CONTROL_SLICE_BYTES):
            super().data_received(data[start : start + CONTROL_SLICE_BYTES])
            if self._control_paused:
                self._held = data[start + CONTROL_SLICE_BYTES :]
                return

    def handle_ping(self) -> None:
        super().handle_ping()
        self._control_frame()

    def handle_pong(self, event: Any) -> None:
        super().handle_pong(event)
        self._control_frame()

    def _control_frame(self) -> None:
        """Pings and pongs are read no faster than frames (``max_frame_rate``): a flood of them slows its sender."""
        now = time.monotonic()
        self._control.frame_read(now)
        delay = self._control.delay(now)
        if delay > 0 and not self._control_paused and not self.transport.is_closing():
            self._control_paused = True
            self.transport.pause_reading()
            self.loop.call_later(delay, self._resume_control)

    def _resume_control(self) -> None:
        self._control_paused = False
        held, self._held = self._held, b""
        if held and not self.transport.is_closing():
            self._feed(held)
        if not self._control_paused and not self.read_paused and not self.transport.is_closing():
            self.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        # An evicted connection was counted out when it was chosen (``_over_cap``); uvicorn removes it again.
        self.connections.add(self)
        super().connection_lost(exc)

    def evict(self, error: VoicedeskError) -> None:
        """Closed to make room, told why as an evicted session is (fatal ``error``, ``closed``, its close code)."""
        if self.transport.is_closing():
            return
        if not self.handshake_complete or self.initial_response is not None or self.close_sent:
            self.transport.abort()
            return
        code, close_code = str(error.code), close_code_for(error.code)
        for frame in [*encode_event(Error(code, error.message, fatal=True)), *encode_event(Closed(code))]:
            self.conn.send_text(frame.encode() if isinstance(frame, str) else frame)
        self.conn.send_close(close_code, code)
        self.transport.write(b"".join(self.conn.data_to_send()))
        self.close_sent = True
        self.disconnected = True  # the application's next send raises ClientDisconnected
        self.queue.put_nowait({"type": "websocket.disconnect", "code": close_code, "reason": code})
        self.stop_keepalive()
        self.close_timer = self.loop.call_later(self.close_timeout, self._end_closing_handshake)

    async def send(self, message: Any) -> None:
        if not self.writable.is_set():
            try:
                async with asyncio.timeout(self.settings.send_timeout_s):
                    await self.writable.wait()
            except TimeoutError:
                log.info("a WebSocket client stopped reading for %.0f s; aborted", self.settings.send_timeout_s)
                self.transport.abort()
                raise ClientDisconnected() from None
        await super().send(message)
        if message["type"] == "websocket.close" and self.close_timer is not None:
            self.close_timer.cancel()
            self.close_timer = self.loop.call_later(self.close_timeout, self._end_closing_handshake)

    def _end_closing_handshake(self, unsent: int | None = None) -> None:
        """The client did not answer our close frame: uvicorn's ``transport.close()`` would wait forever for a client
        that stopped reading, so close once nothing is left to send, and abort once it took nothing for
        ``send_timeout_s``."""
        self.close_timer = None
        size = self.transport.get_write_buffer_size()
        if size == 0:
            self.transport.close()
        elif unsent is not None and size >= unsent:
            log.info("a WebSocket client stopped reading while closing (%.0f s); aborted", self.settings.send_timeout_s)
            self.transport.abort()
        else:
            self.close_timer = self.loop.call_later(self.settings.send_timeout_s, self._end_closing_handshake, size)

    def keepalive_timeout(self) -> None:
        super().keepalive_timeout()
        self.transport.abort()  # close() alone waits for unsent data the client will never read


def guarded_protocols(
    settings: ServerSettings, junk_by_address: JunkByAddress | None = None
) -> tuple[type[GuardedH11Protocol], type[GuardedWebSocketProtocol]]:
    attributes = {"settings": settings, "refusals": refusal_log(log), "junk_by_address": junk_by_address}
    http = type("VoicedeskHttpProtocol", (GuardedH11Protocol,), attributes)
    ws = type("VoicedeskWebSocketProtocol", (GuardedWebSocketProtocol,), {"settings": settings})
    return http, ws
