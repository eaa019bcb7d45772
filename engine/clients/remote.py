"""A ``Session`` whose session runs in the container: commands out as frames, events back through ``ClientProtocol``,
and a lost connection turned into ``Error(connection, fatal)`` + ``Closed`` so the app can fail over."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from typing import Protocol

from voicedesk.engine.api import EventStream
from voicedesk.engine.errors import ConnectionFailed, VoicedeskError
from voicedesk.engine.events import Closed, Error, Event, SessionConfig
from voicedesk.engine.protocol import (
    Cancel,
    ClientProtocol,
    Close,
    Command,
    Configure,
    Flush,
    Frame,
    SendText,
    configure_of,
    encode_command,
    text_configure,
)
from voicedesk.engine.tasks import cancel_and_wait
from voicedesk.engine.text.frontend.settings import TextSettings

log = logging.getLogger(__name__)

CLOSE_DRAIN_TIMEOUT_S = 10.0
"""How long a graceful close waits for the transport to wind down after ``closed`` arrived."""


class FrameChannel(Protocol):
    """One open connection to the container's bidirectional endpoint."""

    description: str
    """For messages: 'ws://127.0.0.1:8080/…' or "SageMaker endpoint 'x' in us-east-1"."""

    async def send(self, frame: str) -> None:
        """Sends a JSON text frame; raises ``VoicedeskError`` if the connection is gone."""

    async def receive(self) -> Frame | None:
        """The next frame from the container; ``None`` when the stream ended; ``VoicedeskError`` on failure."""
        ...

    async def close(self) -> None:
        """Graceful end after the session said ``closed``: finish the transport's own close handshake."""

    async def abort(self) -> None:
        """Ends at once; never raises."""


ChannelOpener = Callable[[str], Awaitable[FrameChannel]]
"""Opens a channel and sends the given first frame on it (a ``config`` command), raising ``VoicedeskError``."""


class RemoteSession:
    """A ``Session`` over a ``FrameChannel``; ``ResumingSession`` extends it to renew and replace streams."""

    def __init__(self, channel: FrameChannel, opener: ChannelOpener, config: SessionConfig) -> None:
        self._opener = opener
        self._config = config
        self._attach(channel)

    @classmethod
    async def open(cls, opener: ChannelOpener, config: SessionConfig | None = None) -> RemoteSession:
        """Connects and tells the server the voice and speed, so both sides agree from the first sentence."""
        config = config or SessionConfig()
        channel = await opener(_configure_frame(config))
        return cls(channel, opener, config)

    def _attach(self, channel: FrameChannel) -> None:
        self.channel = channel
        self._protocol = ClientProtocol()
        self._events = EventStream()
        self._closing = False
        self._reader = asyncio.create_task(self._read(channel), name=f"read {channel.description}")

    @property
    def config(self) -> SessionConfig:
        return self._config

    @property
    def finished(self) -> bool:
        """True once ``Closed`` was queued (the peer closed, the connection dropped, or ``aclose``)."""
        return self._events.finished

    # ---- Session API -------------------------------------------------------------------------------

    async def send_text(self, fragment: str) -> None:
        await self._send(SendText(fragment))

    async def flush(self, request_id: str | None = None) -> None:
        await self._send(Flush(request_id))

    async def cancel(self) -> None:
        await self._send(Cancel())

    async def configure(
        self,
        voice: str | None = None,
        speed: float | None = None,
        max_buffer_delay_ms: float | None = None,
        text: TextSettings | None = None,
    ) -> None:
        config = self._config
        self._config = replace(
            config,
            voice=config.voice if voice is None else voice,
            speed=config.speed if speed is None else speed,
            max_buffer_delay_ms=config.max_buffer_delay_ms
            if max_buffer_delay_ms is None
            else round(max_buffer_delay_ms),
            text=config.text if text is None else text,
        )
        change = Configure() if text is None else text_configure(text)
        await self._send(replace(change, voice=voice, speed=speed, max_buffer_delay_ms=max_buffer_delay_ms))

    async def close(self) -> None:
        self._closing = True
        await self._send(Close())

    def events(self) -> AsyncIterator[Event]:
        # Bound here: after reconnect() a new call iterates the new connection's events.
        return aiter(self._events)

    async def aclose(self) -> None:
        if not self._events.finished:
            self._emit([Closed("aborted")])
        await cancel_and_wait(self._reader)
        await self.channel.abort()

    async def reconnect(self) -> None:
        """Drops this connection and its queue and opens a new one with the same settings (a new server session)."""
        await self.aclose()
        self._attach(await self._opener(_configure_frame(self._config)))

    # ---- internals ---------------------------------------------------------------------------------

    async def _send(self, command: Command) -> None:
        if self._events.finished:
            # Like a local session after Closed: nothing more is accepted, and events() has already ended.
            log.debug("dropped %s: the session with %s has ended", type(command).__name__, self.channel.description)
            return
        try:
            await self.channel.send(encode_command(command))
        except VoicedeskError as exc:
            # The reader usually notices first; if not, report the loss here so events() still ends.
            self._lost(exc)
            await self.channel.abort()

    def _emit(self, events: list[Event]) -> None:
        self._events.emit(events)

    def _lost(self, exc: VoicedeskError) -> None:
        if not self._events.finished:
            log.info("lost %s: %s", self.channel.description, exc.message)
            self._emit([Error(exc.code, exc.message, fatal=True), Closed("connection lost")])

    async def _read(self, channel: FrameChannel) -> None:
        try:
            while True:
                frame = await channel.receive()
                if frame is None:
                    self._lost(
                        ConnectionFailed(
                            f"{channel.description} ended the stream before the session closed.",
                        )
                    )
                    return
                events = self._protocol.receive(frame)
                self._emit(events)
                if any(isinstance(e, Closed) for e in events):
                    break
        except VoicedeskError as exc:
            self._lost(exc)
            await channel.abort()
            return
        except Exception as exc:  # a bug or an unmapped transport failure must still end the session
            log.exception("reading from %s failed", channel.description)
            self._lost(ConnectionFailed(f"Reading from {channel.description} failed: {exc!r}"))
            await channel.abort()
            return
        try:
            await asyncio.wait_for(channel.close(), CLOSE_DRAIN_TIMEOUT_S)
        except (TimeoutError, VoicedeskError, OSError) as exc:
            log.debug("closing %s: %s", channel.description, exc)
            await channel.abort()


def _configure_frame(config: SessionConfig) -> str:
    return encode_command(configure_of(config))
