"""One utterance's record, for the app and the latency lab alike (pure: no I/O, no clock read).

Rows are keyed by position in the utterance, not the engine's number: a failover continues a reply on an engine whose
numbers start again. Each engine session's ``MirrorChunker`` runs the session's chunker on the same fragments, so the
k-th announced sentence gets its fragment, release and send marks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from voicedesk.engine.audio import pcm16_to_float
from voicedesk.engine.events import (
    BYTES_PER_SAMPLE,
    DEFAULT_MAX_BUFFER_DELAY_MS,
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
from voicedesk.engine.measure.metrics import OnsetDetector, seam_gaps
from voicedesk.engine.measure.timeline import TimelineBuilder, UtteranceTimeline
from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker
from voicedesk.engine.text.chunking.quiet_release import QuietRelease


@dataclass(frozen=True, slots=True)
class ReleasedChunk:
    """A chunk as the client saw it leave: its first fragment's arrival, its release, its hand-over."""

    text: str
    fragment_in_s: float
    released_s: float
    sent_s: float | None = None
    """When the ``send_text`` (or ``flush``) carrying its last text returned; None until then."""


class MirrorChunker:
    """The client's copy of the session's chunker, stamping when each chunk's text arrived, was released and sent; it
    replays release on quiet (``chunking.quiet_release``) once the next fragment shows the pause happened."""

    def __init__(
        self,
        chunker: IncrementalSentenceChunker | None = None,
        max_buffer_delay_ms: float = DEFAULT_MAX_BUFFER_DELAY_MS,
    ) -> None:
        self._release = QuietRelease(chunker or IncrementalSentenceChunker(), max_buffer_delay_ms)
        self._open_since: float | None = None
        self.released: list[ReleasedChunk] = []
        self._unsent: list[int] = []  # indices of released chunks with no sent time yet, oldest first

    def feed(self, fragment: str, arrived_s: float) -> int:
        """``fragment`` came from the agent at ``arrived_s``; returns how many chunks it released."""
        self.catch_up(arrived_s)
        if self._open_since is None and fragment.strip():
            self._open_since = arrived_s
        opened = arrived_s if self._open_since is None else self._open_since
        out = [ReleasedChunk(text, opened, arrived_s) for text in self._release.feed(fragment, arrived_s)]
        if out:
            # The releasing fragment may already carry the start of the next sentence.
            self._open_since = arrived_s if self._release.chunker.buffered_chars else None
        return self._release_chunks(out)

    def flush(self, flushed_s: float) -> int:
        """The end of the text at ``flushed_s``; returns 1 if it released a last chunk, else 0."""
        self.catch_up(flushed_s)
        text = self._release.flush()
        opened, self._open_since = self._open_since, None
        if text is None:
            return 0
        return self._release_chunks([ReleasedChunk(text, flushed_s if opened is None else opened, flushed_s)])

    def catch_up(self, now: float) -> None:
        """Records what the session released on quiet before ``now``, each at its deadline (also its sent time)."""
        while (deadline := self._release.next_deadline()) is not None and deadline <= now:
            opened = deadline if self._open_since is None else self._open_since
            chunks = [ReleasedChunk(text, opened, deadline, deadline) for text in self._release.due(deadline)]
            if not chunks:
                break
            if not self._release.chunker.buffered_chars:
                self._open_since = None
            # Released chunks keep their order: any still waiting for a sent time were released before these.
            self.released.extend(chunks)

    def sent(self, count: int, sent_s: float) -> None:
        """The text that released the oldest ``count`` unsent chunks was handed to the session at ``sent_s``."""
        stamped, self._unsent = self._unsent[:count], self._unsent[count:]
        for k in stamped:
            self.released[k] = replace(self.released[k], sent_s=sent_s)

    def _release_chunks(self, chunks: list[ReleasedChunk]) -> int:
        self._unsent.extend(range(len(self.released), len(self.released) + len(chunks)))
        self.released.extend(chunks)
        return len(chunks)


@dataclass(eq=False)
class Leg:
    """One engine session's share of an utterance: its mirror chunker and the engine's sequence numbers."""

    engine: str | None = None
    """The engine as the caller names it ("Local", "websocket ws://…"); it labels the rows this leg speaks."""
    mirror: MirrorChunker = field(default_factory=MirrorChunker)
    started: int = 0
    """Sentences this leg's engine has announced (the next one is matched to ``mirror.released[started]``)."""
    rows: dict[int, int] = field(default_factory=dict)
    """The engine's sequence number → the row it speaks."""
    replaced: bool = False
    """Another leg took over the rest of the utterance (a failover)."""

    def fragment(self, text: str, arrived_s: float) -> int:
        return self.mirror.feed(text, arrived_s)

    def flush(self, flushed_s: float) -> int:
        return self.mirror.flush(flushed_s)

    def sent(self, released: int, sent_s: float) -> None:
        self.mirror.sent(released, sent_s)


@dataclass(eq=False)
class _Row:
    index: int
    seq: int
    text: str
    leg: Leg
    order: int
    """Which of the leg's released chunks this sentence is."""
    starts: int = 1
    finishes: int = 0
    audio_runs: int = 0
    pcm: bytearray = field(default_factory=bytearray)
    onset: OnsetDetector = field(default_factory=OnsetDetector)
    chunks: list[tuple[float, float]] = field(default_factory=list)
    """(arrival, seconds of audio) of each audio chunk."""
    audio_s: float | None = None
    synthesis_s: float | None = None
    ended: bool = False
    """It finished or failed: no more audio will come."""
    dac_s: float | None = None
    seam_gap_s: float | None = None

    @property
    def segments(self) -> int:
        """Audio segments heard for this sentence: one when it started once, finished once, in one piece."""
        return max(self.starts, self.finishes, self.audio_runs)


@dataclass(frozen=True, slots=True)
class UtteranceRecord:
    timeline: UtteranceTimeline
    segments: dict[int, int]
    """Audio segments per row (see ``_Row.segments``; one is right: no interleaving)."""
    errors: tuple[str, ...]
    notes: tuple[str, ...]
    released: tuple[ReleasedChunk, ...]


def underrun_row(rows: Sequence[tuple[Sequence[float], bool]], t: float) -> int | None:
    """The row an underrun at ``t`` is charged to: the first, in playback order, with audio still to come (a chunk after
    ``t``, or none yet and not ended); None if none yet. ``rows``: (audio arrival times, ended) per row."""
    for index, (arrivals, ended) in enumerate(rows):
        if any(at > t for at in arrivals) or not (arrivals or ended):
            return index
    return None


class UtteranceRecorder:
    """Collects one utterance; ``on_event`` returns True at the ``Flushed`` (or ``Cancelled``/``Closed``) ending it."""

    def __init__(self, label: str | None, prebuffer_s: float = 0.0, playing: bool = False, engine: str | None = None):
        self.label = label
        self.prebuffer_s = prebuffer_s
        self.playing = playing
        """A player plays this utterance: rows count its underruns."""
        self.leg = Leg(engine)
        """The leg events go to when the caller names none (the lab's one session per utterance)."""
        self._rows: list[_Row] = []
        self._legs: list[Leg] = []
        self._underruns: list[float] = []
        self._last_audio_row: int | None = None
        self.errors: list[str] = []
        self._notes: list[str] = []
        self.done = False

    # ---- what the engine sent back ----------------------------------------------------------------

    def sentence_started(self, seq: int, text: str, leg: Leg | None = None, index: int | None = None) -> int:
        """The engine began sentence ``seq``; returns its row. ``index``: the row it takes; rows from there on are
        forgotten (after a failover the new engine says again the sentences never heard)."""
        leg = leg or self.leg
        if leg not in self._legs:
            for earlier in self._legs:
                earlier.replaced = True
            self._legs.append(leg)
        if (row := self._row_of(leg, seq)) is not None:
            row.starts += 1  # announced twice: counted as another segment, not another row
            return row.index
        index = len(self._rows) if index is None else max(0, min(index, len(self._rows)))
        del self._rows[index:]
        self._rows.append(_Row(index, seq, text, leg, leg.started))
        leg.started += 1
        leg.rows[seq] = index
        return index

    def audio(self, seq: int, pcm: bytes, t: float, leg: Leg | None = None) -> tuple[int, bool] | None:
        """Audio of ``seq`` at ``t``: (its row, whether first), or None for a sentence never announced."""
        row = self._row_of(leg or self.leg, seq)
        if row is None:
            self._note(f"audio for sentence {seq} of {leg.engine if leg else self.leg.engine}, never announced")
            return None
        if not pcm:
            return row.index, False
        first = not row.chunks
        if self._last_audio_row != row.index:
            row.audio_runs += 1
        self._last_audio_row = row.index
        row.pcm += pcm
        row.onset.push(pcm)
        row.chunks.append((t, len(pcm) / (BYTES_PER_SAMPLE * SAMPLE_RATE)))
        return row.index, first

    def sentence_finished(self, seq: int, duration_s: float, synthesis_s: float, leg: Leg | None = None) -> int | None:
        """``synthesis_s`` of 0 means the engine did not say (not measured, rather than instant)."""
        row = self._row_of(leg or self.leg, seq)
        if row is None:
            return None
        row.finishes += 1
        row.audio_s = duration_s
        row.synthesis_s = synthesis_s or None
        row.ended = True
        return row.index

    def error(self, code: str, message: str, seq: int | None = None, leg: Leg | None = None) -> int | None:
        """An engine error; one naming a sentence ends that sentence (no audio will come). Returns its row."""
        where = f" (sentence {seq})" if seq is not None else ""
        self.errors.append(f"{code}{where}: {message}")
        row = self._row_of(leg or self.leg, seq) if seq is not None else None
        if row is None:
            return None
        row.ended = True
        return row.index

    def on_event(self, event: Event, t: float, leg: Leg | None = None) -> bool:
        match event:
            case SentenceStarted(seq=seq, text=text):
                self.sentence_started(seq, text, leg)
            case Audio(seq=seq, pcm=pcm):
                self.audio(seq, pcm, t, leg)
            case SentenceFinished(seq=seq, duration_s=duration_s, synthesis_s=synthesis_s):
                self.sentence_finished(seq, duration_s, synthesis_s, leg)
            case Error(code=code, message=message, seq=seq):
                self.error(code, message, seq, leg)
            case Cancelled():
                self.errors.append("the engine cancelled the utterance")
                self.done = True
            case Flushed():
                self.done = True
            case Closed(reason=reason):
                if not self.done:
                    self.errors.append(f"the session closed before the utterance ended ({reason})")
                self.done = True
        return self.done

    # ---- what the player did ----------------------------------------------------------------------

    def dac(self, index: int, t: float) -> None:
        """Row ``index``'s first sample reached the DAC at ``t`` (PortAudio's output time)."""
        if 0 <= index < len(self._rows):
            row = self._rows[index]
            row.dac_s = t if row.dac_s is None else min(row.dac_s, t)

    def underrun(self, t: float) -> None:
        """The player ran dry at ``t``; charged by ``underrun_row``'s rule when the timeline is built."""
        self._underruns.append(t)

    def on_player(self, kind: str, index: int | None, t: float) -> None:
        """A player event: 'onset' (row ``index``'s first sample at the DAC at ``t``) or 'underrun'."""
        if kind == "onset" and index is not None:
            self.dac(index, t)
        elif kind == "underrun":
            self.underrun(t)

    # ---- result -----------------------------------------------------------------------------------

    @property
    def rows(self) -> int:
        return len(self._rows)

    def measure_seams(self) -> None:
        """The silence heard at each seam between sentences of the audio as it arrived (call once it is all in)."""
        voiced = [row for row in self._rows if row.pcm]
        if len(voiced) < 2:
            return
        pieces = [pcm16_to_float(bytes(row.pcm)) for row in voiced]
        offsets = np.cumsum([len(p) for p in pieces])[:-1]
        for row, gap in zip(voiced[1:], seam_gaps(np.concatenate(pieces), offsets), strict=True):
            row.seam_gap_s = gap.gap_s

    def build(self, origin_s: float | None = None) -> UtteranceRecord:
        """The timeline, with times since ``origin_s`` (default: ``engine.measure.timeline``'s: first fragment in)."""
        builder = TimelineBuilder(self.label, origin_s, self.prebuffer_s)
        notes = list(self._notes)
        charged = self._charged_underruns()
        for row in self._rows:
            i = row.index
            builder.describe(i, row.text, row.leg.engine, row.seq)
            released = row.leg.mirror.released
            if row.order < len(released):
                chunk = released[row.order]
                builder.mark(i, "fragment_in", chunk.fragment_in_s)
                builder.mark(i, "chunk_released", chunk.released_s)
                if chunk.sent_s is not None:
                    builder.mark(i, "sent", chunk.sent_s)
                if " ".join(chunk.text.split()) != " ".join(row.text.split()):
                    notes.append(
                        f"sentence {i + 1}: the engine spoke {row.text!r} where this client's chunker released "
                        f"{chunk.text!r}; its fragment_in/chunk_released marks come from the client's chunker"
                    )
            for at, audio_s in row.chunks:
                builder.mark(i, "first_byte", at)
                builder.chunk(i, at, audio_s)
            if row.dac_s is not None:
                builder.mark(i, "dac", row.dac_s)
            if row.onset.onset is not None:
                builder.measure(i, "leading_silence_s", row.onset.onset / SAMPLE_RATE)
            elif row.chunks and row.ended:
                notes.append(f"sentence {i + 1}: no audible sample (nothing held above -40 dBFS for 50 ms)")
            builder.measure(i, "audio_s", row.audio_s)
            builder.measure(i, "synthesis_s", row.synthesis_s)
            builder.measure(i, "seam_gap_s", row.seam_gap_s)
            if self.playing:
                builder.measure(i, "underruns", charged.get(i, 0))
        for leg in self._legs:
            if not leg.replaced and self.done and len(leg.mirror.released) != leg.started:
                notes.append(
                    f"the client's chunker released {len(leg.mirror.released)} chunk(s) but the engine spoke "
                    f"{leg.started} sentence(s): the engine chunks differently (another version or settings)"
                )
        return UtteranceRecord(
            timeline=builder.build(),
            segments={row.index: row.segments for row in self._rows},
            errors=tuple(self.errors),
            notes=tuple(notes),
            released=tuple(chunk for leg in self._legs for chunk in leg.mirror.released),
        )

    def _charged_underruns(self) -> dict[int, int]:
        rows = [([at for at, _ in row.chunks], row.ended) for row in self._rows]
        charged: dict[int, int] = {}
        for t in self._underruns:
            index = underrun_row(rows, t)
            if index is not None:
                charged[index] = charged.get(index, 0) + 1
        return charged

    def _row_of(self, leg: Leg, seq: int) -> _Row | None:
        index = leg.rows.get(seq)
        if index is None or index >= len(self._rows):
            return None
        row = self._rows[index]
        return row if row.leg is leg and row.seq == seq else None  # else: forgotten at a failover

    def _note(self, text: str) -> None:
        if text not in self._notes:
            self._notes.append(text)
