"""The session state machine: one implementation of session semantics, with no I/O.

A ``SessionCore`` turns the caller's inputs (text fragments, flush, cancel, configure, close) into synthesis
jobs and events. It never waits, sleeps, or touches a model: an adapter (``engine.local.LocalSession`` in
process, ``endpoint`` over a WebSocket) asks it for the next ``SynthesisJob``, runs the job wherever it likes,
and hands the outcome back. Every input returns the events it causes, in the order they must be emitted.

Ordering rules that every engine inherits from here:
- sentences get increasing sequence numbers over the whole session;
- a sentence's events are ``SentenceStarted`` (when its job is handed out), ``Audio``, ``SentenceFinished``;
- ``Flushed`` follows the last sentence released before the matching ``flush``;
- after ``Cancelled`` no event of an earlier sequence number is emitted;
- ``Closed`` is the last event, after everything asked before ``close`` has finished.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from engine.errors import ErrorCode
from engine.events import (
    Audio,
    Cancelled,
    Closed,
    Error,
    Event,
    Flushed,
    SentenceFinished,
    SentenceStarted,
    SessionConfig,
    WordTiming,
)

MIN_SPEED = 0.25
MAX_SPEED = 4.0


class Chunker(Protocol):
    """The part of ``IncrementalSentenceChunker`` the session relies on (see ``engine.chunker``)."""

    def feed(self, fragment: str) -> list[str]: ...
    def flush(self) -> str | None: ...
    def reset(self) -> None: ...
    @property
    def buffered_chars(self) -> int: ...


@dataclass(frozen=True, slots=True)
class SessionLimits:
    max_message_chars: int = 20_000
    """Largest text accepted in one ``send_text``."""
    max_buffered_chars: int = 100_000
    """Text accepted but not yet synthesized (chunker buffer + queued sentences)."""


@dataclass(frozen=True, slots=True)
class SynthesisJob:
    seq: int
    text: str
    voice: str
    speed: float
    utterance: int
    """Increases at every cancel; a job whose utterance is stale is discarded when it returns."""
    first_of_utterance: bool
    """The first sentence since the last flush/cancel: the most urgent kind of job."""
    audio_before_s: float
    """Audio of this utterance already produced ahead of this sentence (for deadline scheduling)."""


@dataclass(slots=True)
class _Pending:
    seq: int
    text: str
    voice: str
    speed: float
    first_of_utterance: bool


@dataclass(slots=True)
class _FlushMarker:
    last_seq: int
    request_id: str | None


def validate_speed(speed: object) -> float | None:
    """Returns the speed as a float, or None when it is not a number in [MIN_SPEED, MAX_SPEED]."""
    if isinstance(speed, bool) or not isinstance(speed, int | float):
        return None
    value = float(speed)
    if not math.isfinite(value) or not MIN_SPEED <= value <= MAX_SPEED:
        return None
    return value


@dataclass
class SessionCore:
    chunker: Chunker
    config: SessionConfig = field(default_factory=SessionConfig)
    limits: SessionLimits = field(default_factory=SessionLimits)

    _next_seq: int = 0
    _utterance: int = 0
    _queue: deque[_Pending] = field(default_factory=deque)
    _queued_chars: int = 0
    _in_flight: SynthesisJob | None = None
    _done_through: int = -1
    _flushes: deque[_FlushMarker] = field(default_factory=deque)
    _utterance_audio_s: float = 0.0
    _utterance_started: bool = False
    _closing: bool = False
    _closed: bool = False

    # ---- inputs -------------------------------------------------------------------------------------

    def send_text(self, fragment: str) -> list[Event]:
        if refusal := self._refuse_if_closing():
            return refusal
        if len(fragment) > self.limits.max_message_chars:
            return [
                Error(
                    ErrorCode.TEXT_TOO_LONG,
                    f"A text message of {len(fragment):,} characters is over the limit of "
                    f"{self.limits.max_message_chars:,}; send it in smaller pieces.",
                )
            ]
        if self.buffered_chars + len(fragment) > self.limits.max_buffered_chars:
            return [
                Error(
                    ErrorCode.BUFFER_FULL,
                    f"This session already holds {self.buffered_chars:,} characters not yet spoken "
                    f"(limit {self.limits.max_buffered_chars:,}); this fragment was not accepted. "
                    "Wait for speech to catch up, or cancel.",
                )
            ]
        for chunk in self.chunker.feed(fragment):
            self._enqueue(chunk)
        return []

    def flush(self, request_id: str | None = None) -> list[Event]:
        if refusal := self._refuse_if_closing(request_id):
            return refusal
        return self._flush(request_id)

    def cancel(self) -> list[Event]:
        if self._closed:
            return []
        self.chunker.reset()
        self._queue.clear()
        self._queued_chars = 0
        self._flushes.clear()
        last = self._next_seq - 1
        # Everything assigned so far counts as done: nothing of it may be emitted any more.
        self._done_through = last
        self._in_flight = None
        self._utterance += 1
        self._utterance_started = False
        events: list[Event] = [Cancelled(last)]
        events.extend(self._maybe_close())
        return events

    def configure(self, voice: str | None = None, speed: float | None = None) -> list[Event]:
        """Applies to sentences released from now on. The adapter checks the voice exists."""
        if refusal := self._refuse_if_closing():
            return refusal
        if speed is not None:
            valid = validate_speed(speed)
            if valid is None:
                return [
                    Error(
                        ErrorCode.BAD_SPEED,
                        f"speed must be a number from {MIN_SPEED} to {MAX_SPEED}; got {speed!r}.",
                    )
                ]
            speed = valid
        self.config = SessionConfig(
            voice=voice if voice is not None else self.config.voice,
            speed=speed if speed is not None else self.config.speed,
        )
        return []

    def close(self) -> list[Event]:
        """Finishes what was asked, then emits ``Closed``."""
        if self._closing or self._closed:
            return []
        events = self._flush(None) if self.chunker.buffered_chars else []
        self._closing = True
        events.extend(self._maybe_close())
        return events

    def abort(self, reason: str) -> list[Event]:
        """Ends the session at once (the peer went away, or a fatal error): drops all work."""
        if self._closed:
            return []
        self.cancel()
        self._closing = True
        self._closed = True
        return [Closed(reason)]

    # ---- driving synthesis --------------------------------------------------------------------------

    def next_job(self) -> tuple[SynthesisJob, list[Event]] | None:
        """Hands out the next sentence to synthesize, if none is in flight, with the events that start it."""
        if self._in_flight is not None or not self._queue or self._closed:
            return None
        pending = self._queue.popleft()
        self._queued_chars -= len(pending.text)
        if pending.first_of_utterance:
            self._utterance_audio_s = 0.0
        job = SynthesisJob(
            seq=pending.seq,
            text=pending.text,
            voice=pending.voice,
            speed=pending.speed,
            utterance=self._utterance,
            first_of_utterance=pending.first_of_utterance,
            audio_before_s=self._utterance_audio_s,
        )
        self._in_flight = job
        return job, [SentenceStarted(job.seq, job.text)]

    def job_done(
        self,
        job: SynthesisJob,
        pcm: bytes,
        duration_s: float,
        words: tuple[WordTiming, ...] = (),
        synthesis_s: float = 0.0,
    ) -> list[Event]:
        if not self._is_current(job):
            return []
        self._in_flight = None
        self._done_through = job.seq
        self._utterance_audio_s += duration_s
        events: list[Event] = []
        if pcm:
            events.append(Audio(job.seq, pcm))
        events.append(SentenceFinished(job.seq, duration_s, words, synthesis_s))
        events.extend(self._emit_flushes())
        events.extend(self._maybe_close())
        return events

    def job_failed(self, job: SynthesisJob, code: ErrorCode | str, message: str) -> list[Event]:
        """The sentence is skipped with an error; the session keeps serving the rest."""
        if not self._is_current(job):
            return []
        self._in_flight = None
        self._done_through = job.seq
        events: list[Event] = [Error(code, message, seq=job.seq)]
        events.extend(self._emit_flushes())
        events.extend(self._maybe_close())
        return events

    # ---- state --------------------------------------------------------------------------------------

    @property
    def buffered_chars(self) -> int:
        return self.chunker.buffered_chars + self._queued_chars

    @property
    def has_work(self) -> bool:
        return bool(self._queue) or self._in_flight is not None

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def closing(self) -> bool:
        return self._closing

    @property
    def utterance(self) -> int:
        return self._utterance

    def is_current(self, job: SynthesisJob) -> bool:
        return self._is_current(job)

    # ---- internals ----------------------------------------------------------------------------------

    def _is_current(self, job: SynthesisJob) -> bool:
        return self._in_flight is job and job.utterance == self._utterance

    def _refuse_if_closing(self, request_id: str | None = None) -> list[Event]:
        if self._closing or self._closed:
            return [
                Error(
                    ErrorCode.SESSION_CLOSING,
                    "This session is closing; open a new session to say more.",
                    request_id=request_id,
                )
            ]
        return []

    def _enqueue(self, text: str) -> None:
        first = not self._utterance_started
        self._utterance_started = True
        self._queue.append(_Pending(self._next_seq, text, self.config.voice, self.config.speed, first))
        self._queued_chars += len(text)
        self._next_seq += 1

    def _flush(self, request_id: str | None) -> list[Event]:
        rest = self.chunker.flush()
        if rest:
            self._enqueue(rest)
        self._flushes.append(_FlushMarker(self._next_seq - 1, request_id))
        self._utterance_started = False
        return self._emit_flushes()

    def _emit_flushes(self) -> list[Event]:
        events: list[Event] = []
        while self._flushes and self._flushes[0].last_seq <= self._done_through:
            marker = self._flushes.popleft()
            events.append(Flushed(marker.last_seq, marker.request_id))
        return events

    def _maybe_close(self) -> list[Event]:
        if self._closing and not self._closed and not self.has_work and not self._flushes:
            self._closed = True
            return [Closed()]
        return []


ChunkerFactory = Callable[[], Chunker]
