"""One utterance's record: what the client sent and when, and what came back and when (pure; no clock is read).

The session chunks text itself and does not say when a sentence became complete, so the client runs its own copy
of the chunker (``MirrorChunker``) on the same fragments: with the same chunker (the local engine, or a server of
the same version) it releases the same chunks at the same fragments, whatever the fragmentation. Its k-th chunk
is matched to the k-th sentence the engine announces; a text that differs is noted, never hidden.

``UtteranceRecorder`` turns the marks, the session's events and the player's events into an
``engine.timeline.UtteranceTimeline`` (all latency arithmetic lives there and in ``engine.metrics``), plus the
facts the timeline has no field for: audio segments per sentence, errors, notes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.audio import pcm16_to_float
from engine.chunker import IncrementalSentenceChunker
from engine.events import (
    SAMPLE_RATE,
    Audio,
    Cancelled,
    Closed,
    Error,
    Event,
    Flushed,
    SentenceFinished,
    SentenceStarted,
)
from engine.metrics import OnsetDetector, seam_gaps
from engine.timeline import TimelineBuilder, UtteranceTimeline


@dataclass(frozen=True, slots=True)
class ReleasedChunk:
    """A chunk as the client saw it leave: its first fragment's arrival, its release, its hand-over."""

    text: str
    fragment_in_s: float
    released_s: float
    sent_s: float


class MirrorChunker:
    """The client's copy of the session's chunker, stamping when each chunk's text arrived and was released."""

    def __init__(self, chunker: IncrementalSentenceChunker | None = None) -> None:
        self._chunker = chunker or IncrementalSentenceChunker()
        self._open_since: float | None = None
        self.released: list[ReleasedChunk] = []

    def feed(self, fragment: str, arrived_s: float, sent_s: float) -> list[ReleasedChunk]:
        """``fragment`` came from the agent at ``arrived_s`` and was handed to the session at ``sent_s``."""
        if self._open_since is None and fragment.strip():
            self._open_since = arrived_s
        opened = arrived_s if self._open_since is None else self._open_since
        out = [ReleasedChunk(text, opened, arrived_s, sent_s) for text in self._chunker.feed(fragment)]
        if out:
            # The releasing fragment may already carry the start of the next sentence.
            self._open_since = arrived_s if self._chunker.buffered_chars else None
        self.released.extend(out)
        return out

    def flush(self, flushed_s: float, sent_s: float) -> ReleasedChunk | None:
        text = self._chunker.flush()
        opened, self._open_since = self._open_since, None
        if text is None:
            return None
        chunk = ReleasedChunk(text, flushed_s if opened is None else opened, flushed_s, sent_s)
        self.released.append(chunk)
        return chunk


@dataclass
class SentenceRecord:
    seq: int
    text: str
    starts: int = 0
    """``SentenceStarted`` events seen for this seq (one is right)."""
    finishes: int = 0
    audio_runs: int = 0
    """Separate runs of this sentence's audio in the event stream (one is right: no interleaving)."""
    pcm: bytearray = field(default_factory=bytearray)
    onset: OnsetDetector = field(default_factory=OnsetDetector)

    @property
    def segments(self) -> int:
        """Audio segments heard for this sentence: one when it started once, finished once, in one piece."""
        return max(self.starts, self.finishes, self.audio_runs)


@dataclass(frozen=True, slots=True)
class UtteranceRecord:
    timeline: UtteranceTimeline
    segments: dict[int, int]
    """Audio segments per seq (see ``SentenceRecord.segments``)."""
    errors: tuple[str, ...]
    notes: tuple[str, ...]
    released: tuple[ReleasedChunk, ...]


class UtteranceRecorder:
    """Collects one utterance; ``on_event`` returns True at the ``Flushed`` (or ``Closed``) that ends it."""

    def __init__(self, label: str, prebuffer_s: float = 0.0, playing: bool = False):
        self.label = label
        self.prebuffer_s = prebuffer_s
        self.playing = playing
        self.released: list[ReleasedChunk] = []
        self.sentences: dict[int, SentenceRecord] = {}
        self.errors: list[str] = []
        # Kept raw until ``build``: the origin (the agent's first token) may only be known at the end.
        self._marks: list[tuple[int, str, float]] = []
        self._measures: list[tuple[int, str, float | int | None]] = []
        self._chunks: list[tuple[int, float, float]] = []
        self._last_audio_seq: int | None = None
        self._onset_order: list[tuple[float, int]] = []
        self._underruns: dict[int, int] = {}
        self.done = False

    # ---- what the client did ----------------------------------------------------------------------

    def add_released(self, chunks: list[ReleasedChunk] | ReleasedChunk | None) -> None:
        if chunks is None:
            return
        self.released.extend(chunks if isinstance(chunks, list) else [chunks])

    # ---- what came back ---------------------------------------------------------------------------

    def on_event(self, event: Event, t: float) -> bool:
        match event:
            case SentenceStarted(seq, text):
                record = self.sentences.setdefault(seq, SentenceRecord(seq, text))
                record.starts += 1
            case Audio(seq, pcm):
                record = self.sentences.setdefault(seq, SentenceRecord(seq, ""))
                if not pcm:
                    return False
                if not record.pcm:
                    self._marks.append((seq, "first_byte", t))
                if self._last_audio_seq != seq:
                    record.audio_runs += 1
                self._last_audio_seq = seq
                record.pcm += pcm
                record.onset.push(pcm)
                self._chunks.append((seq, t, event.duration_s))
            case SentenceFinished(seq, duration_s, _words, synthesis_s):
                record = self.sentences.setdefault(seq, SentenceRecord(seq, ""))
                record.finishes += 1
                self._measures.append((seq, "audio_s", duration_s))
                self._measures.append((seq, "synthesis_s", synthesis_s or None))  # 0 = the engine did not say
            case Error(code, message, seq):
                where = f" (sentence {seq})" if seq is not None else ""
                self.errors.append(f"{code}{where}: {message}")
            case Cancelled():
                self.errors.append("the engine cancelled the utterance")
                self.done = True
            case Flushed():
                self.done = True
            case Closed(reason):
                if not self.done:
                    self.errors.append(f"the session closed before the utterance ended ({reason})")
                self.done = True
        return self.done

    def on_player(self, kind: str, seq: int | None, t: float) -> None:
        """A player event: 'onset' (seq's first sample at the DAC at ``t``) or 'underrun' (the buffer ran dry)."""
        if kind == "onset" and seq is not None:
            self._marks.append((seq, "dac", t))
            self._onset_order.append((t, seq))
        elif kind == "underrun":
            playing = [s for at, s in self._onset_order if at <= t]
            if playing:  # an underrun belongs to the sentence that was playing when the buffer ran dry
                self._underruns[playing[-1]] = self._underruns.get(playing[-1], 0) + 1

    # ---- result -----------------------------------------------------------------------------------

    def build(self, origin_s: float | None = None) -> UtteranceRecord:
        """The timeline, with times since ``origin_s`` (default: the first fragment's arrival)."""
        builder = TimelineBuilder(self.label, origin_s, self.prebuffer_s)
        for seq, stage, t in self._marks:
            builder.mark(seq, stage, t)
        for seq, name, value in self._measures:
            builder.measure(seq, name, value)
        for seq, t, audio_s in self._chunks:
            builder.chunk(seq, t, audio_s)
        seqs = sorted(self.sentences)
        notes: list[str] = []
        for k, seq in enumerate(seqs):
            record = self.sentences[seq]
            if k < len(self.released):
                chunk = self.released[k]
                builder.mark(seq, "fragment_in", chunk.fragment_in_s)
                builder.mark(seq, "chunk_released", chunk.released_s)
                builder.mark(seq, "sent", chunk.sent_s)
                if " ".join(chunk.text.split()) != " ".join(record.text.split()):
                    notes.append(
                        f"sentence {seq}: the engine spoke {record.text!r} where this client's chunker released "
                        f"{chunk.text!r}; its fragment_in/chunk_released marks come from the client's chunker"
                    )
            builder.describe(seq, record.text)
            if record.onset.onset is not None:
                builder.measure(seq, "leading_silence_s", record.onset.onset / SAMPLE_RATE)
            elif record.pcm:
                notes.append(f"sentence {seq}: no audible sample (nothing held above -40 dBFS for 50 ms)")
            if self.playing:
                builder.measure(seq, "underruns", self._underruns.get(seq, 0))
        if len(self.released) != len(seqs):
            notes.append(
                f"the client's chunker released {len(self.released)} chunk(s) but the engine spoke {len(seqs)} "
                "sentence(s): the engine chunks differently (another version or settings)"
            )
        self._measure_seams(builder, seqs)
        return UtteranceRecord(
            timeline=builder.build(),
            segments={seq: self.sentences[seq].segments for seq in seqs},
            errors=tuple(self.errors),
            notes=tuple(notes),
            released=tuple(self.released),
        )

    def _measure_seams(self, builder: TimelineBuilder, seqs: list[int]) -> None:
        with_audio = [seq for seq in seqs if self.sentences[seq].pcm]
        if len(with_audio) < 2:
            return
        pieces = [pcm16_to_float(bytes(self.sentences[seq].pcm)) for seq in with_audio]
        offsets = np.cumsum([len(p) for p in pieces])[:-1]
        for seq, gap in zip(with_audio[1:], seam_gaps(np.concatenate(pieces), offsets), strict=True):
            builder.measure(seq, "seam_gap_s", gap.gap_s)
