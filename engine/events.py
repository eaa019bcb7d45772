"""Session events, what every engine yields: per sentence ``SentenceStarted``, ``Audio``…, ``SentenceFinished``,
sharing a ``seq`` that never restarts in a session, so a late event of a cancelled utterance is told apart."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from voicedesk.engine.audio import BYTES_PER_SAMPLE, SAMPLE_RATE
from voicedesk.engine.model.synthesis import WordTiming
from voicedesk.engine.model.voices import DEFAULT_VOICE
from voicedesk.engine.text.chunking.quiet_release import DEFAULT_MAX_BUFFER_DELAY_MS
from voicedesk.engine.text.frontend.settings import DEFAULT_TEXT_SETTINGS, TextSettings


@dataclass(frozen=True, slots=True)
class SentenceStarted:
    seq: int
    text: str


@dataclass(frozen=True, slots=True)
class Audio:
    seq: int
    pcm: bytes
    """PCM16 little-endian, mono, 24 kHz."""

    @property
    def duration_s(self) -> float:
        return len(self.pcm) / (BYTES_PER_SAMPLE * SAMPLE_RATE)


@dataclass(frozen=True, slots=True)
class SentenceFinished:
    seq: int
    duration_s: float
    words: tuple[WordTiming, ...] = ()
    synthesis_s: float = 0.0
    """Wall time the synthesizer spent on this sentence (0 when unknown, e.g. an older server)."""
    phonemes: str | None = None
    """The phonemes the model received, when ``SessionConfig.report_phonemes`` asked for them."""


@dataclass(frozen=True, slots=True)
class Flushed:
    """Every sentence released before the matching ``flush()`` has finished (or was dropped by a cancel)."""

    last_seq: int
    """The last sentence of the flushed utterance that was handed to the model, or -1 when there was none."""
    request_id: str | None = None
    cancelled: bool = False
    """A ``cancel``, or the server's shutdown, came first: what the flush covered was dropped, not spoken to its end."""


@dataclass(frozen=True, slots=True)
class RequestStarted:
    """A whole request's first sentence was handed to the model (the AWS sample's ``synthesis_start``)."""

    request_id: str | None


@dataclass(frozen=True, slots=True)
class RequestFinished:
    """A whole request is over (the AWS sample's ``synthesis_complete``): every sentence spoken, or cancelled."""

    request_id: str | None
    audio_s: float
    """Audio of this request emitted before this event (all of it, unless ``cancelled``)."""
    elapsed_s: float
    """From the request's arrival to this event."""
    cancelled: bool = False


@dataclass(frozen=True, slots=True)
class Cancelled:
    """Queued text was dropped; no audio of the cancelled utterance follows this event."""

    last_seq: int
    """The highest sequence number that was assigned before the cancel (-1 if none)."""


def drop_cancelled_audio[T](
    queue: Iterable[T], events: Iterable[Event], audio_of: Callable[[T], tuple[int, float] | None]
) -> tuple[deque[T], float]:
    """Drops queued audio of the sentences a ``Cancelled`` covers (barge-in is heard at once); returns it and its
    seconds."""
    last_seq = max((event.last_seq for event in events if isinstance(event, Cancelled)), default=None)
    kept: deque[T] = deque()
    dropped_s = 0.0
    for item in queue:
        audio = audio_of(item) if last_seq is not None else None
        if audio is not None and audio[0] <= last_seq:  # type: ignore[operator]
            dropped_s += audio[1]
        else:
            kept.append(item)
    return kept, dropped_s


@dataclass(frozen=True, slots=True)
class Error:
    code: str
    message: str
    seq: int | None = None
    request_id: str | None = None
    fatal: bool = False
    """A fatal error ends the session (a ``Closed`` follows); otherwise the session keeps serving."""
    advice: str | None = None
    """What to do, for this machine's user (set by in-process sessions; a server keeps its own advice)."""
    retry_after_s: float | None = None
    """``queue_saturated``: seconds after which the same request may be admitted (the server's estimate)."""


@dataclass(frozen=True, slots=True)
class Closed:
    reason: str = "closed"


@dataclass(frozen=True, slots=True)
class SessionConfig:
    voice: str = DEFAULT_VOICE
    speed: float = 1.0
    max_buffer_delay_ms: int = DEFAULT_MAX_BUFFER_DELAY_MS
    """Release on quiet: held text is spoken after this much silence from the text source (0: at once)."""
    text: TextSettings = DEFAULT_TEXT_SETTINGS
    """How text is read: markup, URLs, code, emoji and the lexicon (on a server, merged over its ``--lexicon``)."""
    report_phonemes: bool = False
    """Each ``SentenceFinished`` carries the phonemes the model received."""


Event = (
    SentenceStarted | Audio | SentenceFinished | Flushed | RequestStarted | RequestFinished | Cancelled | Error | Closed
)
