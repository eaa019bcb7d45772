"""A remote session that outlives its stream: SageMaker ends a stream after 30 minutes and containers go away, while an
always-on console keeps its session for hours.

With nothing in flight a new stream takes over unnoticed; after an unexpected end what was unspoken is re-sent
(``engine.clients.replay``). It gives up (``Error(fatal)`` + ``Closed``) on a container error, a failed reopen or
``max_fruitless_reconnects`` streams in a row that spoke nothing."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from voicedesk.engine.clients.remote import CLOSE_DRAIN_TIMEOUT_S, ChannelOpener, FrameChannel, RemoteSession
from voicedesk.engine.clients.replay import EventRelay, ReplayLog, settings_of
from voicedesk.engine.errors import ConnectionFailed, VoicedeskError
from voicedesk.engine.events import Closed, Error, Event, SessionConfig
from voicedesk.engine.protocol import ClientProtocol, Close, Command, Frame, encode_command

log = logging.getLogger(__name__)

SERVER_SHUTTING_DOWN = "server shutting down"
"""The ``closed`` reason of a container that is going away (docs/protocol.md, close semantics)."""


class StreamInterrupted(VoicedeskError):
    """The stream ended for a reason a new stream can fix (a time limit, a platform fault, a dropped connection)."""

    @classmethod
    def of(cls, error: VoicedeskError) -> StreamInterrupted:
        return cls(error.code, error.message)


RECONNECT_DELAYS_S = (0.0, 0.5, 2.0)


@dataclass(frozen=True, slots=True)
class StreamPolicy:
    renew_after_s: float | None = None
    """Open a fresh stream between utterances once the current one is this old (None: never)."""
    reconnect_delays_s: tuple[float, ...] = RECONNECT_DELAYS_S
    """Pauses before each attempt to reopen after an unexpected end (empty: report the end instead)."""
    max_fruitless_reconnects: int = 3
    """Give up when this many reconnects in a row brought no spoken sentence and no confirmed flush."""
    renew_retry_s: float = 30.0
    """After a failed renewal the old stream goes on; the next try waits this long."""


@dataclass(slots=True)
class StreamStats:
    streams_opened: int = 1
    renewals: int = 0
    reconnects: int = 0


class ResumingSession(RemoteSession):
    """A ``RemoteSession`` whose streams come and go under one session (see the module docstring)."""

    def __init__(
        self, channel: FrameChannel, opener: ChannelOpener, config: SessionConfig, policy: StreamPolicy
    ) -> None:
        self._policy = policy
        self._replay = ReplayLog(settings_of(config))
        self._relay = EventRelay(hold_starts=True)
        self._lock = asyncio.Lock()
        """Held while a command goes out and while the stream is swapped: no command can fall between two."""
        self._idle = asyncio.Event()
        self._idle.set()
        self._send_failure: VoicedeskError | None = None
        self._fatal_seen = False
        self._fruitless = 0
        self._progress_at_resume = 0
        self._loop = asyncio.get_running_loop()
        self._opened_at = self._loop.time()
        self._renew_not_before = 0.0
        self._background: set[asyncio.Task[None]] = set()
        self.stats = StreamStats()
        self._renewer: asyncio.Task[None] | None = None
        super().__init__(channel, opener, config)
        if policy.renew_after_s is not None:
            self._renewer = asyncio.create_task(self._renew_loop(policy.renew_after_s), name="renew stream")

    @classmethod
    async def open(  # type: ignore[override]
        cls, opener: ChannelOpener, config: SessionConfig | None = None, policy: StreamPolicy | None = None
    ) -> ResumingSession:
        config = config or SessionConfig()
        channel = await opener(encode_command(settings_of(config)))
        return cls(channel, opener, config, policy or StreamPolicy())

    # ---- Session API (the rest is RemoteSession's) ---------------------------------------------------

    async def aclose(self) -> None:
        for task in [self._renewer, *self._background]:
            if task is not None:
                task.cancel()
        await super().aclose()

    async def reconnect(self) -> None:
        """As ``RemoteSession.reconnect``: a new session on a new stream, nothing carried over."""
        await self.aclose()
        self._replay = ReplayLog(settings_of(self._config))
        self._relay = EventRelay(hold_starts=True)
        self._fatal_seen = False
        self._attach(await self._opener(encode_command(settings_of(self._config))))
        self._opened_at = self._loop.time()
        if self._policy.renew_after_s is not None:
            self._renewer = asyncio.create_task(self._renew_loop(self._policy.renew_after_s), name="renew stream")

    # ---- sending ------------------------------------------------------------------------------------

    async def _send(self, command: Command) -> None:
        async with self._lock:
            if self._events.finished:
                log.debug("dropped %s: the session with %s has ended", type(command).__name__, self.channel.description)
                return
            self._replay.sent(command)
            self._note_idle()
            channel = self.channel
            try:
                await channel.send(encode_command(command))
            except VoicedeskError as exc:
                # The command is in the replay log: the reader sees the stream end and decides what follows.
                self._send_failure = exc
                await channel.abort()

    # ---- receiving ----------------------------------------------------------------------------------

    async def _read(self, channel: FrameChannel) -> None:
        protocol = ClientProtocol()
        try:
            while True:
                frame = await channel.receive()
                if channel is not self.channel:
                    await self._wind_down(channel, protocol, frame)
                    return
                if frame is None:
                    ended = ConnectionFailed(f"{channel.description} ended the stream before the session closed.")
                    await self._stream_ended(channel, StreamInterrupted.of(ended))
                    return
                closed = await self._receive(channel, protocol, frame)
                if closed is None:
                    return  # the stream was replaced
                if closed:
                    break
        except StreamInterrupted as exc:
            await self._stream_ended(channel, exc)
            return
        except VoicedeskError as exc:
            if channel is self.channel:
                self._lost(exc)
            await channel.abort()
            return
        except Exception as exc:  # a bug or an unmapped transport failure must still end the session
            log.exception("reading from %s failed", channel.description)
            if channel is self.channel:
                self._lost(ConnectionFailed(f"Reading from {channel.description} failed: {exc!r}"))
            await channel.abort()
            return
        await _close_gracefully(channel)

    async def _receive(self, channel: FrameChannel, protocol: ClientProtocol, frame: Frame) -> bool | None:
        """Passes a frame's events on; True once the session closed, None when the stream had to be replaced."""
        for event in protocol.receive(frame):
            if isinstance(event, Error) and event.fatal:
                self._fatal_seen = True
            if not self._replay.observe(event) and not self._fatal_seen:
                continue  # the server dropped queued text as it shut down: that text is said on the next stream
            if isinstance(event, Closed) and event.reason == SERVER_SHUTTING_DOWN and not self._fatal_seen:
                ended = ConnectionFailed(f"The container behind {channel.description} shut down.")
                await self._stream_ended(channel, StreamInterrupted.of(ended))
                return None
            self._emit(self._relay.relay(event))
            if isinstance(event, Closed):
                return True
        self._note_idle()
        return False

    async def _wind_down(self, channel: FrameChannel, protocol: ClientProtocol, frame: Frame | None) -> None:
        """A renewed (old) stream: its events are stale; wait for its ``closed``, then close it properly."""
        try:
            while frame is not None:
                events = protocol.receive(frame)
                if any(isinstance(e, Closed) for e in events):
                    await _close_gracefully(channel)
                    return
                log.debug("ignoring %d event(s) from a retired stream", len(events))
                frame = await channel.receive()
        except VoicedeskError as exc:
            log.debug("a retired stream ended: %s", exc.message)
        await channel.abort()

    # ---- replacing the stream -----------------------------------------------------------------------

    async def _stream_ended(self, channel: FrameChannel, why: StreamInterrupted) -> None:
        async with self._lock:
            await channel.abort()
            if channel is not self.channel or self._events.finished:
                return
            failure, self._send_failure = self._send_failure, None
            self._emit(self._relay.stream_ended())
            self._replay.stream_lost()
            if self._replay.only_close_pending:
                self._emit([Closed("closed")])  # everything asked was said; only the goodbye was lost
                return
            if self._fatal_seen or not self._policy.reconnect_delays_s:
                self._lost(failure or why)
                return
            if self._replay.idle or self._replay.progress != self._progress_at_resume:
                self._fruitless = 0  # an idle stream is not expected to speak; one that spoke made progress
            elif self.stats.reconnects:
                self._fruitless += 1
            if self._fruitless >= self._policy.max_fruitless_reconnects:
                self._lost(
                    VoicedeskError(
                        why.code,
                        f"{why.message} The last {self._fruitless} new streams ended before anything was spoken, "
                        "so the session gives up.",
                    )
                )
                return
            await self._reopen(why)

    async def _reopen(self, why: VoicedeskError) -> None:
        last: VoicedeskError | None = None
        for delay in self._policy.reconnect_delays_s:
            if delay:
                await asyncio.sleep(delay)
            settings, commands = self._replay.replay()
            try:
                channel = await self._opener(encode_command(settings))
            except VoicedeskError as exc:
                last = exc
                continue
            try:
                for command in commands:
                    await channel.send(encode_command(command))
            except VoicedeskError as exc:
                await channel.abort()
                last = exc
                continue
            except BaseException:
                await channel.abort()
                raise
            log.info("%s Continued on a new stream (%d command(s) sent again).", why.message, len(commands))
            self.stats.reconnects += 1
            self._progress_at_resume = self._replay.progress
            self._switch(channel)
            return
        assert last is not None
        self._lost(VoicedeskError(last.code, f"{why.message} Reconnecting failed: {last.message}"))

    def _switch(self, channel: FrameChannel) -> None:
        self.channel = channel
        self._opened_at = self._loop.time()
        self.stats.streams_opened += 1
        self._reader = asyncio.create_task(self._read(channel), name=f"read {channel.description}")
        self._note_idle()

    async def _renew_loop(self, renew_after_s: float) -> None:
        while not self._events.finished:
            due = max(self._opened_at + renew_after_s, self._renew_not_before)
            if (wait := due - self._loop.time()) > 0:
                await asyncio.sleep(wait)
                continue
            await self._idle.wait()
            async with self._lock:
                if self._events.finished or self._closing:
                    return
                if not self._replay.idle or self._loop.time() < self._opened_at + renew_after_s:
                    continue
                old, old_reader = self.channel, self._reader
                settings, _ = self._replay.replay()  # idle: only the settings to carry over
                try:
                    channel = await self._opener(encode_command(settings))
                except VoicedeskError as exc:
                    log.info("renewing the stream to %s failed (%s); the current one goes on", old.description, exc)
                    self._renew_not_before = self._loop.time() + self._policy.renew_retry_s
                    continue
                self._emit(self._relay.stream_ended())
                self._switch(channel)
                self.stats.renewals += 1
            log.info("renewed the stream to %s", channel.description)
            self._spawn(_retire(old, old_reader))

    # ---- small helpers ------------------------------------------------------------------------------

    def _emit(self, events: list[Event]) -> None:
        super()._emit(events)
        if self._events.finished and self._renewer is not None:
            self._renewer.cancel()  # nothing left to renew; do not wait for aclose()

    def _note_idle(self) -> None:
        if self._replay.idle:
            self._idle.set()
        else:
            self._idle.clear()

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)


async def _retire(channel: FrameChannel, reader: asyncio.Task[None]) -> None:
    """Says goodbye on a stream that was renewed; its reader waits for ``closed`` and closes it properly."""
    try:
        await asyncio.wait_for(channel.send(encode_command(Close())), CLOSE_DRAIN_TIMEOUT_S)
        await asyncio.wait({reader}, timeout=2 * CLOSE_DRAIN_TIMEOUT_S)
    except (VoicedeskError, TimeoutError) as exc:
        log.debug("closing a retired stream: %s", exc)
    finally:
        if not reader.done():  # the server never answered (or the session is closing): drop it
            reader.cancel()
            await channel.abort()


async def _close_gracefully(channel: FrameChannel) -> None:
    try:
        await asyncio.wait_for(channel.close(), CLOSE_DRAIN_TIMEOUT_S)
    except (TimeoutError, VoicedeskError, OSError) as exc:
        log.debug("closing %s: %s", channel.description, exc)
        await channel.abort()
