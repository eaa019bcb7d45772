"""The session state machine: one implementation of session semantics, with no I/O and no clock of its own.

Adapters (``engine.local``, ``engine.connection``) ask for the next ``SynthesisJob``, hand back its outcome and call
``timer(now)`` at ``next_deadline()``; every input returns the events it causes, in order. What every engine inherits
is in docs/protocol.md ("What a client can rely on")."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace
from typing import Protocol

from voicedesk.engine import request_fields as fields
from voicedesk.engine.errors import CloseReason, ErrorCode, VoicedeskError
from voicedesk.engine.events import (
    Audio,
    Cancelled,
    Closed,
    Error,
    Event,
    Flushed,
    RequestFinished,
    RequestStarted,
    SentenceFinished,
    SentenceStarted,
    SessionConfig,
    WordTiming,
)
from voicedesk.engine.limits import SessionLimits, check_text
from voicedesk.engine.model.voices import language_of, parse_voice_spec
from voicedesk.engine.text.chunk_markup import LineStarts, SsmlDocuments
from voicedesk.engine.text.chunking.phoneme_estimate import estimate_phonemes
from voicedesk.engine.text.chunking.quiet_release import QuietRelease
from voicedesk.engine.text.chunking.sentence_ends import HeldText
from voicedesk.engine.text.frontend.settings import DEFAULT_TEXT_SETTINGS, TextSettings
from voicedesk.engine.text.sentence_split import split_at_clause

__all__ = ["SHUTDOWN_REASON", "SessionCore", "SessionLimits", "SynthesisJob"]

SHUTDOWN_REASON = CloseReason.SHUTTING_DOWN
"""``Closed.reason`` when the server winds a session down."""


class Chunker(Protocol):
    """The part of ``IncrementalSentenceChunker`` the session relies on (see ``engine.text.chunking.chunker``)."""

    def feed(self, fragment: str) -> list[str]: ...
    def flush(self) -> str | None: ...
    def reset(self) -> None: ...
    def release_sentences(self) -> list[str]: ...
    def release_all(self) -> list[str]: ...
    def release_ended(self) -> list[str]: ...
    @property
    def buffered_chars(self) -> int: ...
    @property
    def held(self) -> HeldText | None: ...


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
    text_settings: TextSettings = DEFAULT_TEXT_SETTINGS
    """How the front-end reads this sentence (the session's at the time the sentence was released)."""
    markup_text: str | None = None
    """An SSML chunk wrapped as a document of its own, for the synthesizer; ``text`` stays the chunk as sent."""


@dataclass(slots=True)
class _Request:
    request_id: str | None
    received_at: float
    audio_s: float = 0.0
    started: bool = False


@dataclass(slots=True)
class _Pending:
    order: int
    """Position in the session's queue; the two halves of a split sentence share it."""
    text: str
    voice: str
    speed: float
    first_of_utterance: bool
    request: _Request | None = None
    text_settings: TextSettings = DEFAULT_TEXT_SETTINGS
    markup_text: str | None = None
    phonemes: int = 0
    """``estimate_phonemes(text)``: its share of the session's backlog."""


@dataclass(slots=True)
class _Marker:
    """A flush (or whole request) waiting for every sentence queued before it."""

    order: int
    request_id: str | None
    request: _Request | None = None
    last_seq: int = -1
    """The last sentence it covers that was handed to the model."""


@dataclass
class SessionCore:
    chunker: Chunker
    config: SessionConfig = field(default_factory=SessionConfig)
    limits: SessionLimits = field(default_factory=SessionLimits)

    _next_seq: int = 0
    _next_order: int = 0
    _utterance: int = 0
    _queue: deque[_Pending] = field(default_factory=deque)
    _queued_chars: int = 0
    _queued_phonemes: int = 0
    _in_flight: SynthesisJob | None = None
    _in_flight_pending: _Pending | None = None
    _markers: deque[_Marker] = field(default_factory=deque)
    _unflushed_seq: int = -1
    """The last sentence handed to the model before any flush covered it: the next flush covers it too."""
    _flushed_order: int = -1
    _utterance_audio_s: float = 0.0
    _utterance_started: bool = False
    _produced_s: float = 0.0
    _consumed_s: float = 0.0
    _closing: bool = False
    _closed: bool = False
    _winding_down: bool = False
    _release: QuietRelease = field(init=False)
    _ssml: SsmlDocuments = field(default_factory=SsmlDocuments)
    _lines: LineStarts = field(default_factory=LineStarts)

    def __post_init__(self) -> None:
        self._release = QuietRelease(self.chunker, self.config.max_buffer_delay_ms)  # type: ignore[arg-type]
        self._follow_voice_language()

    def _follow_voice_language(self, voice: str | None = None) -> None:
        """The chunker estimates phonemes in the voice's language (the session's voice, or a whole request's own)."""
        set_language = getattr(self.chunker, "set_language", None)
        if set_language is None:
            return
        try:
            set_language(language_of(parse_voice_spec(voice or self.config.voice)[0].source))
        except VoicedeskError:  # not a voice spec at all: the adapter refuses it; English weights meanwhile
            set_language(None)

    # ---- inputs -------------------------------------------------------------------------------------

    def send_text(self, fragment: str, now: float) -> list[Event]:
        if refusal := self._refuse_if_closing():
            return refusal
        if refusal := self._check_size(fragment, self.config.speed, None):
            return [refusal]
        self._lines.fed(fragment)
        for chunk in self._release.feed(fragment, now):
            self._enqueue(chunk)
        return []

    def synthesize(
        self, text: str, now: float, voice: str | None = None, speed: float | None = None, request_id: str | None = None
    ) -> list[Event]:
        """A whole request: speak ``text`` with this voice and speed, then ``RequestFinished``; held text goes first."""
        if refusal := self._refuse_if_closing(request_id):
            return refusal
        try:
            fields.not_blank(text)
            speed = fields.speed(speed)
        except fields.FieldError as exc:
            return [Error(exc.code, exc.message, request_id=request_id)]
        speed = self.config.speed if speed is None else speed
        voice = voice or self.config.voice
        if refusal := self._check_size(text, speed, request_id, whole=True):
            return [refusal]
        rest = self._release.flush()
        if rest:
            self._enqueue(rest)
        self._lines.reset()
        self._utterance_started = False
        request = _Request(request_id, now)
        self._lines.fed(text)
        self._follow_voice_language(voice)
        chunks = self.chunker.feed(text)
        tail = self.chunker.flush()
        self._follow_voice_language()
        for chunk in [*chunks, tail] if tail else chunks:
            self._enqueue(chunk, voice, speed, request)
        self._ssml.reset()
        self._lines.reset()
        self._add_marker(request_id, request)
        self._utterance_started = False
        return self._answer_markers(now)

    def flush(self, now: float, request_id: str | None = None) -> list[Event]:
        if refusal := self._refuse_if_closing(request_id):
            return refusal
        return self._flush(now, request_id)

    def cancel(self, now: float) -> list[Event]:
        """Drops everything queued; answers each pending flush and request; then ``Cancelled``."""
        if self._closed:
            return []
        self._release.reset()
        self._ssml.reset()
        self._lines.reset()
        events: list[Event] = []
        for marker in self._markers:
            events.extend(self._answer(marker, now, cancelled=True))
        self._markers.clear()
        self._queue.clear()
        self._queued_chars = self._queued_phonemes = 0
        self._in_flight = None
        self._in_flight_pending = None
        self._unflushed_seq = -1
        self._utterance += 1
        self._utterance_started = False
        events.append(Cancelled(self._next_seq - 1))
        events.extend(self._maybe_close())
        return events

    def configure(
        self,
        voice: str | None = None,
        speed: float | None = None,
        max_buffer_delay_ms: float | None = None,
        text: TextSettings | None = None,
        report_phonemes: bool | None = None,
    ) -> list[Event]:
        """Applies to sentences released from now on; the adapter checks the voice and builds ``text``."""
        if refusal := self._refuse_if_closing():
            return refusal
        try:
            speed = fields.speed(speed)
            max_buffer_delay_ms = fields.buffer_delay(max_buffer_delay_ms)
        except fields.FieldError as exc:
            return [Error(exc.code, exc.message)]
        config = self.config
        self.config = replace(
            config,
            voice=config.voice if voice is None else voice,
            speed=config.speed if speed is None else speed,
            max_buffer_delay_ms=config.max_buffer_delay_ms if max_buffer_delay_ms is None else max_buffer_delay_ms,
            text=config.text if text is None else text,
            report_phonemes=config.report_phonemes if report_phonemes is None else report_phonemes,
        )
        self._release.max_buffer_delay_ms = self.config.max_buffer_delay_ms
        if voice is not None:
            self._follow_voice_language()
        return []

    def close(self, now: float) -> list[Event]:
        """Finishes what was asked, then emits ``Closed``."""
        if self._closing or self._closed:
            return []
        events = self._flush(now, None) if self.chunker.buffered_chars else []
        self._closing = True
        events.extend(self._maybe_close())
        return events

    def wind_down(self, now: float) -> list[Event]:
        """Server shutdown: the sentence on the model finishes, the rest is cancelled, then
        ``Closed(SHUTDOWN_REASON)``."""
        if self._closed or self._winding_down:
            return []
        self._winding_down = True
        return self._finish_wind_down(now)

    def abort(self, reason: str, now: float = 0.0) -> list[Event]:
        """Ends the session at once (the peer went away, or a fatal error): drops all work, answers nothing."""
        if self._closed:
            return []
        self.cancel(now)
        self._closing = True
        self._closed = True
        return [Closed(reason)]

    def audio_consumed(self, seconds: float) -> None:
        """The listener took this much audio (sent on the socket, taken by the player, or discarded as stale)."""
        self._consumed_s += seconds

    def timer(self, now: float) -> list[Event]:
        """Releases held text whose time has come (see ``next_deadline``)."""
        if self._closed:
            return []
        for chunk in self._release.due(now):
            self._enqueue(chunk)
        return []

    # ---- driving synthesis --------------------------------------------------------------------------

    def next_job(self, now: float, split_above_phonemes: int | None = None) -> tuple[SynthesisJob, list[Event]] | None:
        """The next sentence to synthesize with the events that start it; None while one is in flight, none is queued,
        or the listener is ``max_audio_ahead_s`` behind. ``split_above_phonemes`` splits a long one while others
        wait."""
        if self._in_flight is not None or not self._queue or self._closed or self._winding_down or self.throttled:
            return None
        pending = self._queue[0]
        parts = None
        ssml = pending.markup_text is not None or pending.text.lstrip().startswith("<speak")
        if not ssml and split_above_phonemes is not None and estimate_phonemes(pending.text) > split_above_phonemes:
            parts = split_at_clause(pending.text, split_above_phonemes)
        if parts is None:
            self._queue.popleft()
            self._queued_chars -= len(pending.text)
            self._queued_phonemes -= pending.phonemes
        else:
            head, tail = parts
            # The tail keeps the sentence's place in the queue (a flush after it still waits for it) and is no
            # longer the first of its utterance.
            tail_phonemes = estimate_phonemes(tail)
            continues = replace(pending.text_settings, continues_line=True)
            self._queue[0] = replace(
                pending, text=tail, first_of_utterance=False, text_settings=continues, phonemes=tail_phonemes
            )
            self._queued_chars -= len(pending.text) - len(tail)
            self._queued_phonemes -= pending.phonemes - tail_phonemes
            pending = replace(pending, text=head, phonemes=pending.phonemes - tail_phonemes)
        if pending.first_of_utterance:
            self._utterance_audio_s = 0.0
        job = SynthesisJob(
            seq=self._next_seq,
            text=pending.text,
            voice=pending.voice,
            speed=pending.speed,
            utterance=self._utterance,
            first_of_utterance=pending.first_of_utterance,
            audio_before_s=self._utterance_audio_s,
            text_settings=pending.text_settings,
            markup_text=pending.markup_text,
        )
        self._next_seq += 1
        self._in_flight = job
        self._in_flight_pending = pending
        for marker in self._markers:
            if marker.order >= pending.order:
                marker.last_seq = job.seq
        if pending.order > self._flushed_order:
            self._unflushed_seq = job.seq
        events: list[Event] = []
        request = pending.request
        if request is not None and not request.started:
            request.started = True
            events.append(RequestStarted(request.request_id))
        events.append(SentenceStarted(job.seq, job.text))
        return job, events

    def job_done(
        self,
        job: SynthesisJob,
        pcm: bytes,
        duration_s: float,
        words: tuple[WordTiming, ...] = (),
        synthesis_s: float = 0.0,
        now: float = 0.0,
        phonemes: str | None = None,
    ) -> list[Event]:
        """``phonemes``: what the model received, reported in ``SentenceFinished`` if the session asked for it."""
        if not self._is_current(job):
            return []
        pending = self._in_flight_pending
        self._in_flight = None
        self._in_flight_pending = None
        self._utterance_audio_s += duration_s
        events: list[Event] = []
        if pcm:
            events.append(Audio(job.seq, pcm))
            audio_s = events[-1].duration_s  # type: ignore[union-attr]
            self._produced_s += audio_s
            if pending is not None and pending.request is not None:
                pending.request.audio_s += audio_s
        reported = phonemes if self.config.report_phonemes and phonemes is not None else None
        events.append(SentenceFinished(job.seq, duration_s, words, synthesis_s, reported))
        events.extend(self._answer_markers(now))
        events.extend(self._over_budget())
        events.extend(self._maybe_close())
        events.extend(self._finish_wind_down(now))
        return events

    def job_failed(self, job: SynthesisJob, code: ErrorCode | str, message: str, now: float = 0.0) -> list[Event]:
        """The sentence is skipped with an error; the session keeps serving the rest."""
        if not self._is_current(job):
            return []
        pending = self._in_flight_pending
        self._in_flight = None
        self._in_flight_pending = None
        request_id = pending.request.request_id if pending is not None and pending.request is not None else None
        events: list[Event] = [Error(code, message, seq=job.seq, request_id=request_id)]
        events.extend(self._answer_markers(now))
        events.extend(self._maybe_close())
        events.extend(self._finish_wind_down(now))
        return events

    # ---- state --------------------------------------------------------------------------------------

    def next_deadline(self) -> float | None:
        """When ``timer`` must next be called (None: nothing held, nothing to wait for)."""
        return None if self._closed else self._release.next_deadline()

    @property
    def buffered_chars(self) -> int:
        return self.chunker.buffered_chars + self._queued_chars

    @property
    def audio_ahead_s(self) -> float:
        """Audio produced and not yet taken by the listener."""
        return self._produced_s - self._consumed_s

    @property
    def backlog_phonemes(self) -> int:
        """The work a new request waits behind: queued, in-flight and held text, in estimated phonemes."""
        pending = self._in_flight_pending
        in_flight = pending.phonemes if pending is not None and self._in_flight is not None else 0
        return self._queued_phonemes + in_flight + self.chunker.buffered_chars

    def upcoming(self) -> tuple[str, str, TextSettings] | None:
        """The sentence queued next, as the synthesizer will get it, so it can be prepared ahead; None if none."""
        if not self._queue:
            return None
        pending = self._queue[0]
        text = pending.text if pending.markup_text is None else pending.markup_text
        return text, pending.voice, pending.text_settings

    def arriving(self) -> tuple[str, str, TextSettings] | None:
        """The sentence still arriving, so its numbers can be normalized ahead; None when none or it is SSML."""
        text = getattr(self.chunker, "held_text", "")
        if not text.strip() or "<" in text:
            return None
        return text, self.config.voice, self.config.text

    @property
    def throttled(self) -> bool:
        """Sentences are queued but wait for the listener to take audio (backpressure)."""
        return bool(self._queue) and self.audio_ahead_s >= self.limits.max_audio_ahead_s

    @property
    def has_work(self) -> bool:
        """Something asked is not finished yet: queued or in-flight sentences, held text, unanswered flushes."""
        return bool(self._queue) or self._in_flight is not None or bool(self._markers) or bool(self.chunker.held)

    @property
    def synthesizing(self) -> bool:
        """A job is in flight, or queued and not held back by backpressure: the server, not the client, owes work."""
        return self._in_flight is not None or (bool(self._queue) and not self.throttled)

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

    def _check_size(self, text: str, speed: float, request_id: str | None, whole: bool = False) -> Error | None:
        return check_text(text, speed, self.buffered_chars, self.limits, request_id, whole)

    def _over_budget(self) -> list[Event]:
        if self._produced_s <= self.limits.max_session_audio_s or self._closing:
            return []
        events: list[Event] = [
            Error(
                ErrorCode.BUDGET_EXCEEDED,
                f"This session has made {_duration(self._produced_s)} of audio, over its limit of "
                f"{_duration(self.limits.max_session_audio_s)}; what was queued is dropped. Open a new session to "
                "go on.",
                fatal=True,
            )
        ]
        events.extend(self.cancel(0.0))
        events.extend(self.abort(CloseReason.BUDGET_EXCEEDED))  # closed with 1008, not as a normal end
        return events

    def _enqueue(
        self, text: str, voice: str | None = None, speed: float | None = None, request: _Request | None = None
    ) -> None:
        first = not self._utterance_started
        self._utterance_started = True
        settings = self.config.text
        markup_text = self._ssml.frame(text) if settings.markup in ("auto", "ssml") else None
        if not self._lines.begins_line(text) and markup_text is None:
            settings = replace(settings, continues_line=True)
        pending = _Pending(
            self._next_order,
            text,
            self.config.voice if voice is None else voice,
            self.config.speed if speed is None else speed,
            first,
            request,
            settings,
            markup_text,
            estimate_phonemes(text),
        )
        self._queue.append(pending)
        self._queued_chars += len(text)
        self._queued_phonemes += pending.phonemes
        self._next_order += 1

    def _flush(self, now: float, request_id: str | None) -> list[Event]:
        rest = self._release.flush()
        if rest:
            self._enqueue(rest)
        self._ssml.reset()
        self._lines.reset()
        self._add_marker(request_id)
        self._utterance_started = False
        return self._answer_markers(now)

    def _add_marker(self, request_id: str | None, request: _Request | None = None) -> None:
        last_seq = -1 if request is not None else self._unflushed_seq
        self._markers.append(_Marker(self._next_order - 1, request_id, request, last_seq))
        self._unflushed_seq, self._flushed_order = -1, self._next_order - 1

    def _answer_markers(self, now: float) -> list[Event]:
        """Answers every flush/request whose sentences are all done."""
        events: list[Event] = []
        while self._markers and self._covered_done(self._markers[0]):
            events.extend(self._answer(self._markers.popleft(), now))
        return events

    def _covered_done(self, marker: _Marker) -> bool:
        busy = self._in_flight_pending
        if busy is not None and busy.order <= marker.order:
            return False
        return not self._queue or self._queue[0].order > marker.order

    def _answer(self, marker: _Marker, now: float, cancelled: bool = False) -> list[Event]:
        request = marker.request
        if request is None:
            return [Flushed(marker.last_seq, marker.request_id, cancelled)]
        events: list[Event] = []
        if not request.started:
            request.started = True
            events.append(RequestStarted(request.request_id))
        events.append(
            RequestFinished(request.request_id, request.audio_s, max(0.0, now - request.received_at), cancelled)
        )
        return events

    def _finish_wind_down(self, now: float) -> list[Event]:
        if not self._winding_down or self._closed or self._in_flight is not None:
            return []
        events = self.cancel(now) if self.has_work else []
        events.extend(self.abort(SHUTDOWN_REASON, now))
        return events

    def _maybe_close(self) -> list[Event]:
        if self._closing and not self._closed and not self._queue and self._in_flight is None and not self._markers:
            self._closed = True
            return [Closed()]
        return []


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} minutes" if seconds < 7200 else f"{seconds / 3600:.1f} hours"
