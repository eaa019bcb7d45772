"""``WS /invocations-bidirectional-stream``: one persistent ``LocalSession`` per connection.

A receive loop decodes every client frame, text or binary (SageMaker delivers binary unless the client set
``DataType=UTF8``, so ``receive_text()`` would fail in production), and drives the session; a sender task
forwards the session's events as frames (audio binary, control JSON). A frame that cannot be understood gets
a structured error and the session keeps serving. ``close`` finishes what was asked, then ``closed`` and close
code 1000; a disconnect drops the session's pending synthesis at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from starlette.websockets import WebSocket, WebSocketDisconnect

from endpoint.runtime import EndpointRuntime
from engine.errors import ErrorCode, VoicedeskError
from engine.events import Closed, Error, Event, SentenceFinished, SentenceStarted
from engine.local import LocalSession
from engine.protocol import (
    WHOLE_REQUEST_TAG,
    Cancel,
    Close,
    Command,
    Configure,
    Flush,
    Frame,
    ProtocolError,
    SendText,
    ServerProtocol,
    SynthesizeRequest,
)
from engine.session import MAX_SPEED, MIN_SPEED, validate_speed

log = logging.getLogger(__name__)

BIDI_PATH = "/invocations-bidirectional-stream"

WS_NORMAL = 1000
WS_GOING_AWAY = 1001
WS_INTERNAL_ERROR = 1011
WS_TRY_AGAIN_LATER = 1013

_REFUSAL_CLOSE_CODES = {
    ErrorCode.TOO_MANY_SESSIONS: WS_TRY_AGAIN_LATER,
    ErrorCode.NOT_READY: WS_TRY_AGAIN_LATER,
    ErrorCode.SESSION_CLOSING: WS_GOING_AWAY,
}


async def bidi_endpoint(websocket: WebSocket) -> None:
    await BidiConnection(websocket, websocket.app.state.runtime).serve()


class BidiConnection:
    def __init__(self, websocket: WebSocket, runtime: EndpointRuntime) -> None:
        self.websocket = websocket
        self.runtime = runtime
        self.settings = runtime.settings
        self.protocol = ServerProtocol(self.settings.max_frame_bytes)
        self.session: LocalSession | None = None
        self._send_lock = asyncio.Lock()
        self._socket_closed = False
        self._close_code = WS_NORMAL
        self._closed_reason: str | None = None
        self._no_open_sentence = asyncio.Event()
        self._no_open_sentence.set()
        self._finished = asyncio.Event()

    # ---- lifecycle ----------------------------------------------------------------------------------

    async def serve(self) -> None:
        # Admit before accepting, so the session cap holds even for connections arriving together.
        try:
            lease = self.runtime.admit("websocket", self.drain)
        except VoicedeskError as exc:
            await self.websocket.accept()
            await self._refuse(exc)
            return
        try:
            await self.websocket.accept()
        except BaseException:
            self.runtime.release(lease)
            raise
        tasks: set[asyncio.Task[None]] = set()
        try:
            self.session = self.runtime.open_session(lease)
            log.info("session %s opened (%d active)", self.session.id[:8], self.runtime.active_sessions)
            tasks = {
                asyncio.create_task(self._receive_loop(), name="bidi-receive"),
                asyncio.create_task(self._forward_events(), name="bidi-send"),
            }
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if self.session is not None:
                # The peer is gone or the session ended: drop whatever synthesis it still had queued.
                await self.session.aclose()
                log.info("session %s ended", self.session.id[:8])
            self.runtime.release(lease)
            self._finished.set()

    async def _refuse(self, error: VoicedeskError) -> None:
        with contextlib.suppress(WebSocketDisconnect):
            await self._send_event(Error(error.code, error.message, fatal=True))
        await self._close_socket(_REFUSAL_CLOSE_CODES.get(error.code, WS_INTERNAL_ERROR), str(error.code))

    async def drain(self) -> None:
        """Shutdown: let the sentence being synthesized finish, drop the rest, then ``closed`` and close 1001."""
        session = self.session
        if session is None:
            await self._finished.wait()
            return
        self._close_code = WS_GOING_AWAY
        self._closed_reason = "server shutting down"
        await self._no_open_sentence.wait()
        if session.core.has_work:
            await session.cancel()
        await session.close()
        await self._finished.wait()

    # ---- client → server ----------------------------------------------------------------------------

    async def _receive_loop(self) -> None:
        while True:
            try:
                async with asyncio.timeout(self.settings.idle_timeout_s):
                    message = await self.websocket.receive()
            except TimeoutError:
                if self._busy():
                    continue
                await self._end_idle()
                return
            if message["type"] == "websocket.disconnect":
                return
            frame: Frame | None = message.get("text")
            if frame is None:
                frame = message.get("bytes")
            if frame is None:
                continue
            try:
                await self._handle_frame(frame)
            except (WebSocketDisconnect, asyncio.CancelledError):
                raise
            except Exception as exc:  # a bug must not take the connection (or the server) down
                log.exception("handling a frame failed")
                await self._send_event(Error(ErrorCode.INTERNAL, f"The server failed on this message: {exc!r}"))

    def _busy(self) -> bool:
        assert self.session is not None
        return self.session.core.has_work or not self._no_open_sentence.is_set()

    async def _end_idle(self) -> None:
        minutes = self.settings.idle_timeout_s
        await self._send_event(
            Error(
                ErrorCode.IDLE_TIMEOUT,
                f"No message for {minutes:g} s and nothing left to say, so the session was closed; "
                "open a new one (or send something within that time to keep it open).",
                fatal=True,
            )
        )
        await self._send_event(Closed("idle_timeout"))
        await self._close_socket(WS_NORMAL, "idle timeout")

    async def _handle_frame(self, frame: Frame) -> None:
        assert self.session is not None
        try:
            command = self.protocol.receive(frame)
        except ProtocolError as exc:
            await self._send_event(exc.to_event())
            return
        await self._run(command, self.session)

    async def _run(self, command: Command, session: LocalSession) -> None:
        match command:
            case SynthesizeRequest():
                await self._whole_request(command, session)
            case SendText(text):
                if log.isEnabledFor(logging.DEBUG):
                    log.debug("session %s text: %r", session.id[:8], text)
                await session.send_text(text)
            case Flush(request_id):
                if request_id is not None and request_id.startswith(WHOLE_REQUEST_TAG):
                    # The prefix marks the server's own flushes; a client's must not complete whole requests.
                    await self._send_event(Error(ErrorCode.BAD_MESSAGE, "This request_id is reserved; use another."))
                    return
                await session.flush(request_id)
            case Cancel():
                await session.cancel()
            case Configure(voice, speed):
                if voice is not None:
                    try:
                        voice = await self.runtime.check_voice(voice)
                    except VoicedeskError as exc:
                        await self._send_event(Error(exc.code, exc.message))
                        return
                await session.configure(voice, speed)
            case Close():
                await session.close()

    async def _whole_request(self, request: SynthesizeRequest, session: LocalSession) -> None:
        """The AWS sample's request: its voice and speed apply to this request only."""
        rid = request.request_id
        try:
            voice, speed = await self._check_whole_request(request, session)
        except VoicedeskError as exc:
            await self._send_event(Error(exc.code, exc.message, request_id=rid))
            return
        log.info("session %s request %s: %d chars, voice %s", session.id[:8], rid or "-", len(request.text), voice)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("session %s request %s text: %r", session.id[:8], rid or "-", request.text)
        previous = session.config
        session.core.configure(voice, speed)
        tag = self.protocol.open_whole_request(request, time.monotonic())
        await session.send_text(request.text)
        await session.flush(tag)
        # Queued sentences keep the voice and speed they were released with; later text goes back to the session's.
        session.core.configure(previous.voice, previous.speed)

    async def _check_whole_request(self, request: SynthesizeRequest, session: LocalSession) -> tuple[str, float]:
        limits = self.settings.limits
        core = session.core
        if core.closing or core.closed:
            raise VoicedeskError(ErrorCode.SESSION_CLOSING, "This session is closing; open a new one to say more.")
        if not request.text.strip():
            raise VoicedeskError(ErrorCode.EMPTY_TEXT, "'text' is empty; give some text to speak.")
        if len(request.text) > limits.max_message_chars:
            raise VoicedeskError(
                ErrorCode.TEXT_TOO_LONG,
                f"'text' has {len(request.text):,} characters, over the limit of {limits.max_message_chars:,}; "
                "send it as several requests.",
            )
        if core.buffered_chars + len(request.text) > limits.max_buffered_chars:
            raise VoicedeskError(
                ErrorCode.BUFFER_FULL,
                f"This session already holds {core.buffered_chars:,} characters not yet spoken "
                f"(limit {limits.max_buffered_chars:,}); wait for synthesis_complete, or cancel.",
            )
        speed = session.config.speed
        if request.speed is not None:
            checked = validate_speed(request.speed)
            if checked is None:
                raise VoicedeskError(
                    ErrorCode.BAD_SPEED,
                    f"'speed' must be a number from {MIN_SPEED} to {MAX_SPEED}; got {request.speed!r}.",
                )
            speed = checked
        voice = session.config.voice
        if request.voice is not None:
            voice = await self.runtime.check_voice(request.voice)
        return voice, speed

    # ---- server → client ----------------------------------------------------------------------------

    async def _forward_events(self) -> None:
        assert self.session is not None
        try:
            async for event in self.session.events():
                if isinstance(event, SentenceStarted):
                    self._no_open_sentence.clear()
                elif isinstance(event, SentenceFinished) or (isinstance(event, Error) and event.seq is not None):
                    self._no_open_sentence.set()
                if isinstance(event, Closed):
                    await self._send_event(Closed(self._closed_reason or event.reason))
                    code = self._close_code if event.reason == "closed" else WS_GOING_AWAY
                    await self._close_socket(code, self._closed_reason or event.reason)
                    return
                await self._send_event(event)
        except WebSocketDisconnect:
            return
        finally:
            self._no_open_sentence.set()

    async def _send_event(self, event: Event) -> None:
        await self._send_frames(self.protocol.send(event, time.monotonic()))

    async def _send_frames(self, frames: list[Frame]) -> None:
        async with self._send_lock:
            if self._socket_closed:
                return
            try:
                for frame in frames:
                    if isinstance(frame, bytes):
                        await self.websocket.send_bytes(frame)
                    else:
                        await self.websocket.send_text(frame)
            except (WebSocketDisconnect, RuntimeError, OSError):
                self._socket_closed = True
                raise WebSocketDisconnect(1006) from None

    async def _close_socket(self, code: int, reason: str = "") -> None:
        async with self._send_lock:
            if self._socket_closed:
                return
            self._socket_closed = True
            with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
                await self.websocket.close(code, reason[:120])
