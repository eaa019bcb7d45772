"""Drives sessions for the lab: sends an agent's text, stamps every event on one clock, optionally plays it.

Any ``engine.api.Session`` works (local, websocket, sagemaker): the probe only calls the Session protocol.
The clock is ``time.monotonic`` by default because the player reports DAC times on that clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import Protocol

from voicedesk.app.sources.scripted import ScriptedSource
from voicedesk.engine.api import Session
from voicedesk.engine.events import Audio
from voicedesk.engine.measure.recorder import UtteranceRecord, UtteranceRecorder

Clock = Callable[[], float]


PlayerListener = Callable[[str, "int | None", float], None]
"""(kind, row, monotonic time) for each player event: 'onset' (that row's first sample at the DAC), 'underrun'."""


class PlaybackSink(Protocol):
    """What the probe needs of a player (``app.lab.playback.LabPlayer`` wraps ``app.player.AudioPlayer``)."""

    def begin_utterance(self, listener: PlayerListener) -> None: ...
    def push(self, pcm16: bytes, seq: int | None = None) -> None: ...
    def end_utterance(self) -> None: ...
    async def wait_finished(self) -> None: ...


class Agent:
    """A scripted agent replying at ``tokens_per_s``; remembers when its first token came (an utterance's origin)."""

    def __init__(self, text: str, tokens_per_s: float, clock: Clock = time.monotonic) -> None:
        self._source = ScriptedSource(tokens_per_s, script=text, clock=clock)
        self._clock = clock
        self.first_token_s: float | None = None
        self.last_token_s: float | None = None

    async def tokens(self) -> AsyncIterator[str]:
        """The reply token by token, as the agent writes it (the streaming design)."""
        async for token in self._source.reply(()):
            self._stamp()
            yield token

    async def whole_reply(self) -> AsyncIterator[str]:
        """The same reply, given only once the agent has finished writing it (generate-then-speak)."""
        parts = [token async for token in self.tokens()]
        yield "".join(parts)

    def _stamp(self) -> None:
        now = self._clock()
        if self.first_token_s is None:
            self.first_token_s = now
        self.last_token_s = now


async def whole_text(text: str) -> AsyncIterator[str]:
    """A request whose text is all there at once (the seed's and the A/B's requests)."""
    yield text


class SessionProbe:
    """One persistent session under measurement: one reader task stamps events for the utterance in progress."""

    def __init__(
        self,
        session: Session,
        clock: Clock = time.monotonic,
        player: PlaybackSink | None = None,
        prebuffer_s: float = 0.0,
        guard_s: float = 600.0,
        engine: str | None = None,
    ) -> None:
        self.session = session
        self.engine = engine
        """The engine's name on the timeline's rows."""
        self.clock = clock
        self.player = player
        self.prebuffer_s = prebuffer_s
        self.guard_s = guard_s
        """Longest wait for one utterance's end, so a broken engine fails the run instead of hanging it."""
        self._current: UtteranceRecorder | None = None
        self._ended = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None
        self._closed_reason: str | None = None
        self._requests = 0

    async def __aenter__(self) -> SessionProbe:
        self._reader = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is None:
            await self.close()
        else:  # cancelled or failed mid-utterance: drop the session at once rather than wait for it
            await self.abort()

    async def speak(
        self, fragments: AsyncIterable[str], label: str, origin: Callable[[], float | None] | None = None
    ) -> UtteranceRecord:
        """Sends the fragments as they come, then flushes; returns the utterance once it has been spoken.

        ``origin`` gives the time the utterance's clock starts (the agent's first token); default: the first
        fragment's arrival.
        """
        if self._reader is None:
            raise RuntimeError("use the probe as `async with SessionProbe(session) as probe:`")
        recorder = UtteranceRecorder(label, self.prebuffer_s, playing=self.player is not None, engine=self.engine)
        if self._closed_reason is not None:
            recorder.errors.append(f"the session is closed ({self._closed_reason})")
            return recorder.build()
        self._current, leg = recorder, recorder.leg
        self._ended.clear()
        if self.player is not None:
            self.player.begin_utterance(self.on_player)
        first_in: float | None = None
        async for fragment in fragments:
            arrived = self.clock()
            first_in = arrived if first_in is None else first_in
            released = leg.fragment(fragment, arrived)
            await self.session.send_text(fragment)
            leg.sent(released, self.clock())
        self._requests += 1
        released = leg.flush(self.clock())
        await self.session.flush(f"bench-{self._requests}")
        leg.sent(released, self.clock())
        try:
            await asyncio.wait_for(self._ended.wait(), self.guard_s)
        except TimeoutError:
            recorder.errors.append(f"no end of the utterance within {self.guard_s:g} s")
        if self.player is not None:
            self.player.end_utterance()
            await self.player.wait_finished()
        self._current = None
        recorder.measure_seams()
        start = origin() if origin is not None else None
        return recorder.build(start if start is not None else first_in)

    def on_player(self, kind: str, row: int | None, t: float) -> None:
        """Player events (call on the probe's loop): DAC onsets and underruns of the utterance playing."""
        if self._current is not None:
            self._current.on_player(kind, row, t)

    async def close(self) -> None:
        """Ends the session (finishing nothing: every utterance was waited for) and the reader."""
        if self._reader is None:
            return
        reader, self._reader = self._reader, None
        if self._closed_reason is None:
            await self.session.close()
        try:
            await asyncio.wait_for(reader, 30.0)
        except TimeoutError:
            reader.cancel()
            await self.session.aclose()

    async def abort(self) -> None:
        """Ends the session at once, whatever it was doing, and the reader."""
        if self._reader is None:
            return
        reader, self._reader = self._reader, None
        reader.cancel()
        await self.session.aclose()
        with contextlib.suppress(asyncio.CancelledError):
            await reader

    async def _read(self) -> None:
        try:
            async for event in self.session.events():
                t = self.clock()
                current = self._current
                if current is None:
                    continue
                if isinstance(event, Audio):
                    placed = current.audio(event.seq, event.pcm, t)
                    if placed is not None and self.player is not None:
                        row, first = placed
                        self.player.push(event.pcm, row if first else None)  # the row's onset, timed at the DAC
                elif current.on_event(event, t):
                    self._ended.set()
        except Exception as exc:  # a broken connection ends the utterance with an error, not a hang
            if self._current is not None:
                self._current.errors.append(f"the session failed: {type(exc).__name__}: {exc}")
            self._closed_reason = f"{type(exc).__name__}: {exc}"
        else:
            self._closed_reason = "closed"
        self._ended.set()
