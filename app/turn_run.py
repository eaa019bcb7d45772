"""One turn in flight: its conversation state, its latency record and its audio, updated event by event.

It uses the latency lab's own ``UtteranceRecorder``, so a turn's timeline and a ``voicedesk bench`` run's follow one set
of rules. The controller decides what happens (player, failover, ending)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from voicedesk.app.conversation import Turn
from voicedesk.app.link import SessionLink
from voicedesk.engine.events import SAMPLE_RATE, WordTiming
from voicedesk.engine.measure.recorder import UtteranceRecorder
from voicedesk.engine.measure.timeline import UtteranceTimeline


@dataclass
class TurnRun:
    turn: Turn
    recorder: UtteranceRecorder
    link: SessionLink
    """The session carrying the turn now (a failover replaces it)."""
    flush_id: str
    pcm: list[bytes] = field(default_factory=list)
    """Every Audio event's PCM queued for playback, in order: the reply as heard."""
    text_done: bool = False
    feeder: asyncio.Task[None] | None = None
    finisher: asyncio.Task[None] | None = None
    timeline: UtteranceTimeline | None = None
    stalls: int = 0
    """Gaps the listener heard mid-reply: the player ran dry, or the device stopped taking audio (one per gap)."""
    stalled_s: float = 0.0
    """Their lengths, added up."""

    def sentence_started(self, seq: int, text: str, count_underruns: bool) -> int:
        """The engine began sentence ``seq``; returns its index in the turn (its row in the timeline)."""
        link = self.link
        index = self.turn.add_sentence(text, link.label).index
        # After a failover the turn forgot the sentences never delivered; the recorder forgets the same rows.
        self.recorder.sentence_started(seq, text, link.leg, index=index)
        if count_underruns:  # a player plays this turn: from here on its underruns are counted
            self.recorder.playing = True
        link.ledger.sentence_started(seq, text)
        self.turn.pending = link.ledger.unclaimed
        return index

    def audio(self, seq: int, pcm: bytes, now: float) -> tuple[int, bool] | None:
        """Audio of sentence ``seq`` arrived: (its index, whether it is the sentence's first), or None if unknown."""
        placed = self.recorder.audio(seq, pcm, now, self.link.leg)
        if placed is None or placed[0] >= len(self.turn.sentences):
            return None
        index = placed[0]
        first = self.turn.sentences[index].audio_start_s is None
        self.turn.add_audio(index, len(pcm) / (2 * SAMPLE_RATE))
        self.pcm.append(pcm)
        self.link.ledger.sentence_delivered(seq)
        return index, first

    def sentence_finished(self, seq: int, duration_s: float, words: tuple[WordTiming, ...], synthesis_s: float) -> bool:
        index = self.recorder.sentence_finished(seq, duration_s, synthesis_s, self.link.leg)
        if index is None or index >= len(self.turn.sentences):
            return False
        self.turn.finish_sentence(index, words)
        return True

    def sentence_failed(self, seq: int, message: str, code: str = "error") -> bool:
        index = self.recorder.error(code, message, seq, self.link.leg)
        if index is None or index >= len(self.turn.sentences):
            return False
        self.turn.sentences[index].error = message
        self.link.ledger.sentence_delivered(seq)  # skipped, not resent: the engine already said why
        return True

    def dac(self, index: int, at: float) -> None:
        """Sentence ``index``'s first sample reached the DAC at ``at`` (the player's onset event)."""
        self.recorder.dac(index, at)

    def underrun(self, at: float) -> None:
        """The player ran dry at ``at`` (the event reaches the loop a little later); ``engine.measure.recorder``'s rule
        charges it to the sentence the listener was waiting for."""
        self.stalls += 1
        self.recorder.underrun(at)

    def stall_ended(self, duration_s: float) -> None:
        """A stall (counted once, by ``underrun``, when it began) lasted ``duration_s``."""
        self.stalled_s += duration_s

    def measure_seams(self) -> None:
        """The silence heard at each seam between sentences of the reply."""
        self.recorder.measure_seams()

    def rebuild(self) -> UtteranceTimeline:
        self.timeline = self.recorder.build().timeline
        return self.timeline
