"""One server-side connection of the bidirectional protocol, sans I/O (as python-websockets' ``ServerProtocol``): frames
in, frames and a close out.

``ServerConnection`` decides what the connection means: frame order, the send queue's bound, idleness, read pacing (a
fast sender is read later, never dropped), junk, shutdown and the close code. The adapter (``endpoint.bidi``) moves
bytes, keeps the clock, and runs voice checks, resampling and the session's jobs (``SessionDriver``) off the loop; every
event takes one path, through ``session_events`` into the send queue."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from voicedesk.engine.audio_formats import output_problem, rates_for, resample
from voicedesk.engine.errors import CloseReason, ErrorCode, VoicedeskError, close_code_for_reason
from voicedesk.engine.events import (
    SAMPLE_RATE,
    Audio,
    Closed,
    Error,
    Event,
    drop_cancelled_audio,
)
from voicedesk.engine.limits import ConnectionLimits, JunkBudget, ReadPacing
from voicedesk.engine.model.voices import KNOWN_VOICES, parse_voice_spec
from voicedesk.engine.protocol import (
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
from voicedesk.engine.session import SessionCore
from voicedesk.engine.text.frontend.lexicon import EMPTY_LEXICON, Lexicon

IDLE_REASON = CloseReason.IDLE
ABUSE_REASON = CloseReason.RATE_LIMITED
REFUSED_AT_OPEN_REASON = CloseReason.REFUSED_AT_OPEN
EVICTED_REASON = CloseReason.EVICTED


def _refuse_format(audio_format: str, request_id: str | None) -> Error:
    return Error(
        ErrorCode.BAD_MESSAGE,
        f"'format' {audio_format[:16]!r} is not offered on the WebSocket: audio goes out as raw PCM16 frames, one "
        "sentence at a time ('pcm'). For WAV, MP3 and other files, POST /invocations.",
        request_id=request_id,
    )


@dataclass(frozen=True, slots=True, eq=False)
class ResampleJob:
    """One sentence's audio to resample on an executor thread (soxr: 1-2 ms per audio second); its frame keeps its
    place."""

    pcm: bytes
    sample_rate: int
    seq: int

    def run(self) -> bytes:
        # A sentence's audio arrives whole (one ``Audio`` per sentence, faded to silence at both ends), so one-shot
        # resampling is the stream's result with its tail: the tail goes out before the sentence's end.
        return resample(self.pcm, self.sample_rate)


@dataclass(slots=True)
class _OutFrame:
    data: Frame | None
    """None while ``resampling`` is under way off the loop: this frame, and every frame after it, waits."""
    audio_s: float = 0.0
    seq: int | None = None
    resampling: ResampleJob | None = None


@dataclass(frozen=True, slots=True)
class VoiceCheck:
    """A command whose voice must be checked (off the event loop) before ``execute`` runs it."""

    command: SynthesizeRequest | Configure
    voice: str


DECODE_OFF_LOOP_BYTES = 16 * 1024
"""A bigger frame (a lexicon) is decoded off the loop: checking 6,000 entries takes tens of milliseconds."""
LEXICON_ENTRIES_PER_FRAME = 20
"""A ``config`` with a lexicon is paced as one frame per this many entries: resending it is slowed, never refused."""

UNUSABLE_TEXT = frozenset({ErrorCode.TEXT_TOO_LONG, ErrorCode.BUDGET_EXCEEDED})

RequestAdmission = Callable[[SynthesizeRequest], Error | None]
"""The server's say on a whole request before it is queued (staleness, saturation): None to admit it."""


class ServerConnection:
    def __init__(
        self,
        core: SessionCore,
        limits: ConnectionLimits,
        now: float,
        admit_request: RequestAdmission | None = None,
        base_lexicon: Lexicon = EMPTY_LEXICON,
        junk: JunkBudget | None = None,
    ) -> None:
        self.core = core
        self.limits = limits
        self.base_lexicon = base_lexicon
        """The server's lexicon (``--lexicon``): a session's ``lexicon`` entries are merged over it."""
        self.codec = ServerProtocol(limits.max_frame_bytes)
        self._admit_request = admit_request
        self._output_rate = SAMPLE_RATE
        """The rate of audio frames for sentences queued from now on (``sample_rate``)."""
        self._out: deque[_OutFrame] = deque()
        self._resampling_due: list[ResampleJob] = []
        """Resampling the adapter has not taken yet (``take_resampling``)."""
        self._close: tuple[int, str] | None = None
        self._closing = False
        self._last_progress = now
        self._played_until = now
        self.pacing = ReadPacing(limits.frames_per_s, limits.frame_burst, now)
        self._junk = junk if junk is not None else JunkBudget(limits.junk_per_s, limits.junk_burst, now)
        """The junk budget: the client address's (``JunkByAddress``, shared by its connections) or this one's."""
        self.bad_frames = 0
        """Frames that could not be understood (the adapter logs their count, not each one)."""

    # ---- client → server ----------------------------------------------------------------------------

    def read_delay(self, now: float) -> float:
        """Seconds to wait before reading the next frame: a fast sender is read later (TCP slows it), never dropped."""
        return 0.0 if self._closing else self.pacing.delay(now)

    def receive_frame(self, frame: Frame, now: float) -> tuple[list[Event], VoiceCheck | None]:
        """One client frame: the events it causes, or a voice to check before ``execute`` runs its command. Junk is
        answered while the junk budget lasts and then ends the session; a frame over ``DECODE_OFF_LOOP_BYTES`` is better
        decoded off the loop (``decode``, then ``receive_decoded``)."""
        return self.receive_decoded(decode(self.codec, frame), now)

    def receive_decoded(self, command: Command | ProtocolError, now: float) -> tuple[list[Event], VoiceCheck | None]:
        if self._closing:
            return [], None
        # A lexicon costs its parse and its merge: read as that many frames, so resending it is slowed.
        lexicon = command.lexicon if isinstance(command, Configure) else None
        self.pacing.frame_read(now, 1 + (len(lexicon) // LEXICON_ENTRIES_PER_FRAME if lexicon else 0))
        if isinstance(command, ProtocolError):
            self.bad_frames += 1
            return self._junk_answer(command.to_event(), now), None
        if isinstance(command, SynthesizeRequest | Configure) and command.voice is not None:
            return [], VoiceCheck(command, command.voice)
        return self.execute(command, now), None

    def execute(
        self, command: Command, now: float, voice: str | None = None, voice_error: Error | None = None
    ) -> list[Event]:
        """Runs a decoded command; ``voice``/``voice_error`` is the outcome of its ``VoiceCheck``, if it had one."""
        if self._closing:
            return []
        core = self.core
        if voice_error is not None:
            request_id = command.request_id if isinstance(command, SynthesizeRequest) else None
            error = Error(voice_error.code, voice_error.message, request_id=request_id)
            # A name no Kokoro voice has is junk; one that exists but is not here is a client finding out which are.
            return [error] if names_kokoro_voices(getattr(command, "voice", None)) else self._junk_answer(error, now)
        match command:
            case SynthesizeRequest(request_id=request_id, sample_rate=sample_rate, audio_format=audio_format):
                if audio_format not in (None, "pcm"):
                    return [_refuse_format(audio_format, request_id)]
                if refusal := self._admit_request and self._admit_request(command):
                    return [refusal]
                if sample_rate is not None and (refusal := self.set_output_rate(sample_rate, request_id)):
                    return [refusal]
                self._last_progress = now
                return self._charged(core.synthesize(command.text, now, voice, command.speed, request_id), now)
            case SendText(text=text):
                if text.strip():  # only text to speak keeps a session open, not empty or blank fragments
                    self._last_progress = now
                return self._charged(core.send_text(text, now), now)
            case Flush(request_id=request_id):
                return core.flush(now, request_id)
            case Cancel():  # unsent audio of the cancelled utterance leaves the send queue: barge-in is heard at once
                events = core.cancel(now)
                self._out, dropped_s = drop_cancelled_audio(self._out, events, _audio_of)
                core.audio_consumed(dropped_s)
                return events
            case Configure(sample_rate=sample_rate):
                text = None
                if not command.text_change.empty:
                    try:
                        text = command.text_change.applied_to(core.config.text, self.base_lexicon)
                    except VoicedeskError as exc:
                        return [Error(exc.code, exc.message)]
                if sample_rate is not None and (refusal := self.set_output_rate(sample_rate)):
                    return [refusal]
                return core.configure(voice, command.speed, command.max_buffer_delay_ms, text, command.phonemes)
            case Close():
                return core.close(now)
        return []

    def set_output_rate(self, sample_rate: int, request_id: str | None = None) -> Error | None:
        """Sentences queued from now on go out at ``sample_rate`` (resampled off the loop); queued ones keep their
        rate."""
        problem = output_problem("pcm", sample_rate)
        if problem is not None:
            return Error(ErrorCode.BAD_MESSAGE, problem, request_id=request_id)
        self._output_rate = sample_rate
        return None

    def open_at_rate(self, query_value: str, now: float = 0.0) -> list[Event]:
        """The rate asked for when connecting; unlike a later ``config``, one that cannot be served ends the session."""
        try:
            refusal = self.set_output_rate(int(query_value))
        except ValueError:
            refusal = Error(
                ErrorCode.BAD_MESSAGE,
                f"'sample_rate' {query_value[:40]!r} in the connection's query string is not a whole number of Hz; "
                f"use one of: {', '.join(map(str, rates_for('pcm')))}.",
            )
        if refusal is None:
            return []
        fatal = Error(
            refusal.code, refusal.message + " The session was closed; connect again with one of them.", fatal=True
        )
        return [fatal, *self.core.abort(REFUSED_AT_OPEN_REASON, now)]

    # ---- session → client ---------------------------------------------------------------------------

    def session_events(self, events: list[Event]) -> None:
        """Events from the session (via the driver's emit) become frames in the send queue."""
        for event in events:
            if self._close is not None:
                return
            if isinstance(event, Audio):
                self._queue_audio(event)
                continue
            self._out.extend(_OutFrame(f) for f in self.codec.send(event))
            if isinstance(event, Closed):
                self._closing = True
                self._close = (close_code_for_reason(event.reason), event.reason)

    def _queue_audio(self, event: Audio) -> None:
        self.codec.send(event)  # counts the bytes of the 24 kHz original
        if self._output_rate == SAMPLE_RATE:
            self._out.append(_OutFrame(event.pcm, event.duration_s, event.seq))
            return
        job = ResampleJob(event.pcm, self._output_rate, event.seq)
        self._out.append(_OutFrame(None, event.duration_s, event.seq, job))
        self._resampling_due.append(job)

    def take_resampling(self) -> list[ResampleJob]:
        """Audio the adapter must resample off the loop (``ResampleJob.run``, then ``resampled``); frames behind it
        wait."""
        due, self._resampling_due = self._resampling_due, []
        return due

    def resampled(self, job: ResampleJob, data: bytes | None) -> None:
        """The outcome of ``job.run()`` (None: failed, the client is told); ignored if its frame left the queue
        meanwhile."""
        at = next((i for i, f in enumerate(self._out) if f.resampling is job), None)
        if at is None:
            return
        frame = self._out[at]
        frame.resampling = None
        if data:
            frame.data = data
            return
        self.core.audio_consumed(frame.audio_s)  # nothing of it will be sent
        instead: list[_OutFrame] = []
        if data is None:
            error = Error(
                ErrorCode.SYNTHESIS_FAILED,
                f"The audio of sentence {job.seq} could not be resampled to {job.sample_rate} Hz, so it was skipped; "
                "the session goes on (ask 24000 Hz to receive the model's own rate).",
                seq=job.seq,
            )
            instead = [_OutFrame(f) for f in self.codec.send(error)]
        del self._out[at]
        for offset, replacement in enumerate(instead):  # in the audio's place, before its sentence_end
            self._out.insert(at + offset, replacement)

    def next_frame(self, now: float) -> Frame | None:
        """The next frame to send (None also while it is being resampled); taking it counts as the client's progress."""
        if not self._out or self._out[0].data is None:
            return None
        out = self._out.popleft()
        if out.audio_s:
            self.core.audio_consumed(out.audio_s)
            self._last_progress = now
            self._played_until = max(self._played_until, now) + out.audio_s
        return out.data

    def in_hand_s(self, now: float) -> float:
        """Audio sent and not yet heard, at playback speed: the wait a new request of this client can cover."""
        return max(0.0, self._played_until - now)

    def speaking(self, now: float) -> bool:
        """Its audio is being made, or sent and still playing (a full server closes an idle session first)."""
        return self.core.synthesizing or now < self._played_until

    @property
    def close_instruction(self) -> tuple[int, str] | None:
        """(code, reason) to close the socket with, once every frame has been sent; None while open."""
        return self._close if not self._out else None

    # ---- time, shutdown, loss -----------------------------------------------------------------------

    def next_deadline(self) -> float | None:
        deadlines = [d for d in (self.core.next_deadline(), self._idle_deadline()) if d is not None]
        return min(deadlines) if deadlines else None

    def timer(self, now: float) -> list[Event]:
        idle = self._idle_deadline()
        if idle is not None and now >= idle:
            seconds = self.limits.idle_timeout_s
            error = Error(
                ErrorCode.IDLE_TIMEOUT,
                f"Nothing was sent and no audio was taken for {seconds:g} s, so the session was closed; open a new "
                "one (or send something within that time to keep it open).",
                fatal=True,
            )
            return [error, *self.core.abort(IDLE_REASON, now)]
        return self.core.timer(now)

    def shutdown(self, now: float) -> list[Event]:
        """Server shutdown: the sentence on the model finishes, the rest is cancelled, then ``closed`` (1001)."""
        if self._closing:
            return []
        return self.core.wind_down(now)

    def evict(self, message: str, now: float) -> list[Event]:
        """Makes room on a full server for a client of a quieter address: told why, then closed (1013)."""
        if self._closing:
            return []
        error = Error(ErrorCode.TOO_MANY_SESSIONS, message, fatal=True)
        return [error, *self.core.abort(EVICTED_REASON, now)]

    @property
    def last_activity(self) -> float:
        """When this client last gave text to speak or took audio (for the idle timer and fair eviction)."""
        return self._last_progress

    def peer_gone(self, now: float) -> list[Event]:
        """The client disconnected: drop everything at once."""
        self._out.clear()
        self._resampling_due.clear()
        return self.core.abort("aborted", now)

    # ---- internals ----------------------------------------------------------------------------------

    def _idle_deadline(self) -> float | None:
        if self._closing or self.core.synthesizing:
            return None
        return self._last_progress + self.limits.idle_timeout_s

    def _charged(self, events: list[Event], now: float) -> list[Event]:
        """Text refused for its size (too long, over the compute budget) was still read and measured: junk."""
        if len(events) == 1 and isinstance(events[0], Error) and events[0].code in UNUSABLE_TEXT:
            return self._junk_answer(events[0], now)
        return events

    def _junk_answer(self, error: Error, now: float) -> list[Event]:
        """``error`` while the junk budget lasts; over it, the session ends (``rate_limited``, 1008)."""
        if self._junk.allow(now):
            return [error]
        junk = self._junk
        fatal = Error(
            ErrorCode.RATE_LIMITED,
            f"Too many frames that could not be understood or used (more than {junk.burst} at once, or "
            f"{junk.junk_per_s:g} a second over time; the last: {error.code}), so the connection was closed. Send "
            "valid JSON commands and voices that exist. The budget belongs to your address: new connections from "
            "it are refused while it is empty.",
            fatal=True,
        )
        return [fatal, *self.core.abort(ABUSE_REASON, now)]


def names_kokoro_voices(spec: str | None) -> bool:
    try:
        return bool(spec) and all(part.source in KNOWN_VOICES for part in parse_voice_spec(spec))  # type: ignore[arg-type]
    except VoicedeskError:
        return False


def decode(codec: ServerProtocol, frame: Frame) -> Command | ProtocolError:
    """A client frame as a command, or the error it is (pure, safe on any thread)."""
    try:
        return codec.receive(frame)
    except ProtocolError as exc:
        return exc


def _audio_of(frame: _OutFrame) -> tuple[int, float] | None:
    return (frame.seq, frame.audio_s) if frame.audio_s and frame.seq is not None else None
