"""One turn in flight: its conversation state, its latency timeline and its audio, updated event by event.

``TurnRun`` turns engine events (through the session link that carries the turn) into the conversation's
sentences and the timeline's marks; the controller decides what happens (player, failover, ending).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from app.conversation import Turn
from app.link import SessionLink
from engine.events import SAMPLE_RATE, WordTiming
from engine.metrics import OnsetDetector, seam_gaps
from engine.timeline import TimelineBuilder, UtteranceTimeline


@dataclass
class TurnRun:
    turn: Turn
    builder: TimelineBuilder
    link: SessionLink
    """The session carrying the turn now (a failover replaces it)."""
    flush_id: str
    pcm: list[bytes] = field(default_factory=list)
    """Every Audio event's PCM queued for playback, in order: the reply as heard."""
    onsets: dict[int, OnsetDetector] = field(default_factory=dict)
    underruns: dict[int, int] = field(default_factory=dict)
    first_audio_at: dict[int, float] = field(default_factory=dict)
    text_done: bool = False
    feeder: asyncio.Task[None] | None = None
    finisher: asyncio.Task[None] | None = None
    timeline: UtteranceTimeline | None = None

    def sentence_started(self, seq: int, text: str, count_underruns: bool) -> int:
        """The engine began sentence ``seq``; returns its index in the turn."""
        link = self.link
        index = self.turn.add_sentence(text, link.label).index
        link.seq_to_index[seq] = index
        self.builder.describe(index, text)
        span = link.ledger.sentence_started(seq, text)
        if span is not None and (t := link.ledger.time_of_char(span[0])) is not None:
            self.builder.mark(index, "fragment_in", t)
        order = link.started
        link.started += 1
        if order < len(link.released_at):
            self.builder.mark(index, "chunk_released", link.released_at[order])
        if order < len(link.sent_at):
            self.builder.mark(index, "sent", link.sent_at[order])
        if count_underruns:  # from here on the player's events count them
            self.builder.measure(index, "underruns", self.underruns.get(index, 0))
        self.turn.pending = link.ledger.unclaimed
        return index

    def audio(self, seq: int, pcm: bytes, now: float) -> tuple[int, bool] | None:
        """Audio of sentence ``seq`` arrived: (its index, whether it is the sentence's first), or None if unknown."""
        index = self.link.seq_to_index.get(seq)
        if index is None:
            return None
        duration = len(pcm) / (2 * SAMPLE_RATE)
        first = self.turn.sentences[index].audio_start_s is None
        if first:
            self.first_audio_at[index] = now
        self.turn.add_audio(index, duration)
        self.builder.mark(index, "first_byte", now)
        self.builder.chunk(index, now, duration)
        detector = self.onsets.setdefault(index, OnsetDetector())
        if detector.onset is None and detector.push(pcm) is not None:
            self.builder.measure(index, "leading_silence_s", detector.onset / SAMPLE_RATE)
        self.pcm.append(pcm)
        self.link.ledger.sentence_delivered(seq)
        return index, first

    def sentence_finished(self, seq: int, duration_s: float, words: tuple[WordTiming, ...], synthesis_s: float) -> bool:
        index = self.link.seq_to_index.get(seq)
        if index is None:
            return False
        self.turn.finish_sentence(index, words)
        self.builder.measure(index, "audio_s", duration_s)
        if synthesis_s > 0:
            self.builder.measure(index, "synthesis_s", synthesis_s)
        return True

    def sentence_failed(self, seq: int, message: str) -> bool:
        index = self.link.seq_to_index.get(seq)
        if index is None:
            return False
        self.turn.sentences[index].error = message
        self.link.ledger.sentence_delivered(seq)  # skipped, not resent: the engine already said why
        return True

    def underrun(self, at: float) -> None:
        """The player ran dry at ``at``: the listener was waiting for the first sentence whose audio had not
        arrived by then (the event reaches the loop a little later, so "by then", not "by now")."""
        index = next(
            (s.index for s in self.turn.sentences if self.first_audio_at.get(s.index, at + 1) > at),
            len(self.turn.sentences),
        )
        self.underruns[index] = self.underruns.get(index, 0) + 1
        if index < len(self.turn.sentences):  # else counted once that sentence starts (none may: end of reply)
            self.builder.measure(index, "underruns", self.underruns[index])

    def measure_seams(self) -> None:
        """The silence heard at each seam between sentences of the reply as played."""
        voiced = [s for s in self.turn.sentences if s.audio_start_s is not None]
        total = sum(len(p) for p in self.pcm) // 2
        seams = [(s.index, round(s.audio_start_s * SAMPLE_RATE)) for s in voiced[1:]]
        seams = [(index, at) for index, at in seams if at <= total]
        if not seams:
            return
        for (index, _at), gap in zip(seams, seam_gaps(b"".join(self.pcm), [at for _, at in seams]), strict=True):
            self.builder.measure(index, "seam_gap_s", gap.gap_s)

    def rebuild(self) -> UtteranceTimeline:
        self.timeline = self.builder.build()
        return self.timeline
