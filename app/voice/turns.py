"""When a person's turn starts and ends: a pure state machine fed VAD probabilities, key presses and transcripts.

No I/O and no clock: every input carries ``now`` (seconds on the microphone's clock) and returns the events it
causes, so the adapter only moves audio and runs the STT it is asked for. The end of speech is stamped at the last
voiced window, not when the silence timeout fired: that is where a reply's latency clock starts.

Transcription requests name an audio span. One is in flight at a time; the first ``speculate_s`` of silence asks for
the span a final would have, so when the silence timeout confirms the end, the final is usually already there.

Barge-in takes two steps, to be quick and safe from coughs: speech over the console pauses it at the VAD's onset;
the policy (``barge_in_min_s`` of voice, or a keyword) commits it, and an utterance that ends first resumes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Mode(StrEnum):
    HANDS_FREE = "hands_free"
    PUSH_TO_TALK = "push_to_talk"


@dataclass(frozen=True, slots=True)
class TurnConfig:
    mode: Mode = Mode.HANDS_FREE
    start_threshold: float = 0.5
    """VAD probability that counts as speech; ``keep_threshold`` keeps speech going (hysteresis, as silero's)."""
    keep_threshold: float = 0.35
    min_speech_s: float = 0.15
    """Voiced time before an utterance counts (clicks and breaths are never turns)."""
    end_silence_s: float = 0.6
    max_utterance_s: float = 30.0
    """A stuck-open microphone or a monologue is cut here into a turn; speech that goes on starts the next one."""
    pre_roll_s: float = 0.3
    tail_s: float = 0.2
    """Silence kept after the last voiced window (Whisper hears a word's end better with some)."""
    partial_every_s: float = 0.7
    """Partial transcripts while speaking (0: none)."""
    speculate_s: float = 0.2
    barge_in: bool = True
    """Speech over the console may interrupt it; otherwise it is ignored."""
    barge_in_min_s: float = 0.5
    barge_in_keywords: tuple[str, ...] = ()
    """When set, only an utterance whose transcript has one of these words interrupts (not its length)."""
    barge_in_hold_s: float = 2.0
    """The longest a pause waits for the barge-in to be committed (a keyword that never comes) before resuming."""
    press_until_silence: bool = False
    """A press opens a turn that the silence after speech ends (a wall button or a wake word: nobody holds a key);
    a release ends it sooner, and ``press_wait_s`` with nothing said ends it empty."""
    press_wait_s: float = 5.0


@dataclass(frozen=True, slots=True)
class SpeechStarted:
    utterance: int
    at: float


@dataclass(frozen=True, slots=True)
class SpeechEnded:
    utterance: int
    at: float
    """The end of the last voiced window (or the release of the key)."""
    decided_at: float
    reason: str
    """'silence', 'released', 'capped' or 'stopped'."""


@dataclass(frozen=True, slots=True)
class TranscribeRequest:
    id: int
    utterance: int
    start: float
    end: float
    final: bool


@dataclass(frozen=True, slots=True)
class Transcript:
    utterance: int
    text: str
    final: bool
    at: float


@dataclass(frozen=True, slots=True)
class BargeIn:
    utterance: int
    at: float


@dataclass(frozen=True, slots=True)
class Paused:
    """Speech began over the console: hold its audio until the barge-in is committed or the console resumes."""

    utterance: int
    at: float


@dataclass(frozen=True, slots=True)
class Resumed:
    utterance: int
    at: float


@dataclass(frozen=True, slots=True)
class Dropped:
    utterance: int
    reason: str


TurnEvent = SpeechStarted | SpeechEnded | TranscribeRequest | Transcript | BargeIn | Paused | Resumed | Dropped


@dataclass(slots=True)
class _Utterance:
    id: int
    start: float
    voiced_s: float = 0.0
    last_voiced: float = 0.0
    started: bool = False
    ended: SpeechEnded | None = None
    over_console: bool = False
    barged: bool = False
    held: bool = False  # it paused the console (once at most: after a resume it plays on until committed)
    last_partial: float = 0.0
    speculated: tuple[float, str] | None = None
    final_requested: bool = False
    """(span end, text) of a transcript already made for a span a final may reuse."""


@dataclass(slots=True)
class TurnDetector:
    config: TurnConfig = field(default_factory=TurnConfig)
    speaking: bool = False
    """The console is playing speech (the adapter sets it): speech now is a barge-in or nothing."""
    _current: _Utterance | None = None
    _finishing: dict[int, _Utterance] = field(default_factory=dict)
    _in_flight: TranscribeRequest | None = None
    _next_id: int = 0
    _pressed: bool = False
    _holding: tuple[_Utterance, float] | None = None
    """The utterance that paused the console, and when."""

    # ---- inputs --------------------------------------------------------------------------------------

    def vad(self, probability: float, now: float, window_s: float) -> list[TurnEvent]:
        """One VAD window ending at ``now`` (push-to-talk uses them for partials and the cap only)."""
        cfg, u = self.config, self._current
        hands_free = cfg.mode is Mode.HANDS_FREE
        by_silence = hands_free or (self._pressed and cfg.press_until_silence)
        held = self._holding
        events: list[TurnEvent] = self._resume(held[0], now) if held and now - held[1] >= cfg.barge_in_hold_s else []
        if u is None:
            if not hands_free or probability < cfg.start_threshold:
                return events
            u = self._current = _Utterance(self._new_id(), now - window_s)
        voiced = probability >= (cfg.keep_threshold if u.started else cfg.start_threshold)
        if voiced:
            u.voiced_s += window_s
            u.last_voiced = now
            u.speculated = None  # speech went on: an earlier transcript no longer covers the utterance
        u.over_console |= self.speaking and hands_free  # a held key is the person's explicit turn
        if voiced and u.over_console and cfg.barge_in and not (u.held or u.barged or self._holding):
            u.held, self._holding = True, (u, now)
            events.append(Paused(u.id, now))
        if not u.started:
            if u.voiced_s >= cfg.min_speech_s:
                u.started = True
                events.append(SpeechStarted(u.id, u.start))
            elif now - u.last_voiced >= cfg.end_silence_s:
                self._current = None  # a click: never a turn
                events += self._resume(u, now)
            return events
        interrupting = u.over_console and cfg.barge_in and not (u.barged or cfg.barge_in_keywords)
        if interrupting and u.voiced_s >= cfg.barge_in_min_s:
            events += self._barge(u, now)
        if now - u.start >= cfg.max_utterance_s:
            self._pressed = False
            events += self._end(u, now if voiced else u.last_voiced, now, "capped")
        elif by_silence and not u.voiced_s and now - u.start >= cfg.press_wait_s:
            self._pressed = False
            events += self._end(u, now, now, "silence")  # nothing said: its transcript is empty, so it is dropped
        elif by_silence and u.voiced_s and now - u.last_voiced >= cfg.end_silence_s:
            self._pressed = False
            events += self._end(u, u.last_voiced, now, "silence")
        elif by_silence and u.voiced_s and not voiced and now - u.last_voiced >= cfg.speculate_s:
            events += self._request(u, self._span_end(u), final=False)
        elif cfg.partial_every_s and voiced and now - u.last_partial >= cfg.partial_every_s:
            u.last_partial = now
            events += self._request(u, now, final=False)
        return events

    def press(self, now: float) -> list[TurnEvent]:
        """Push-to-talk pressed: the utterance is everything until release (an explicit barge-in)."""
        if self.config.mode is not Mode.PUSH_TO_TALK or self._pressed:
            return []
        self._pressed = True
        u = self._current = _Utterance(self._new_id(), now, started=True, over_console=self.speaking)
        events: list[TurnEvent] = [SpeechStarted(u.id, now)]
        return events + (self._barge(u, now) if self.speaking else [])

    def release(self, now: float) -> list[TurnEvent]:
        if not self._pressed:
            return []
        self._pressed = False
        u = self._current
        return self._end(u, now, now, "released") if u is not None else []

    def stop(self, now: float) -> list[TurnEvent]:
        """Listening stops (turned off, or the microphone was lost): what was said so far is still transcribed."""
        self._pressed = False
        u = self._current
        events = self._resume(self._holding[0], now) if self._holding else []
        if u is None or not u.started:
            self._current = None
            return events
        at = min(now, u.last_voiced + self.config.tail_s) if u.last_voiced else now
        return events + self._end(u, at, now, "stopped")

    def transcribed(self, request: TranscribeRequest, text: str, now: float, failed: bool = False) -> list[TurnEvent]:
        """The STT's answer to ``request``; a ``failed`` one drops an ended utterance (not asked for again)."""
        if self._in_flight == request:
            self._in_flight = None
        text = text.strip()
        events: list[TurnEvent] = []
        u = self._finishing.get(request.utterance)
        if u is not None and (failed or request.end == self._final_end(u)):
            events += self._finish(u, text, now)
        elif u is None and self._current is not None and self._current.id == request.utterance:
            u = self._current
            if request.end == self._span_end(u) and not failed:
                u.speculated = (request.end, text)  # no speech since it was asked: a final may reuse it
            if text:
                events += [Transcript(u.id, text, False, now), *self._keyword(u, text, now)]
        return events + self._next_final()

    # ---- internals -----------------------------------------------------------------------------------

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _span_end(self, u: _Utterance) -> float:
        return u.last_voiced + self.config.tail_s

    def _final_end(self, u: _Utterance) -> float | None:
        """A silence keeps ``tail_s`` of it; a released key (or a stop) ends the audio there."""
        if u.ended is None:
            return None
        return u.ended.at + (self.config.tail_s if u.ended.reason in ("silence", "capped") else 0.0)

    def _barge(self, u: _Utterance, now: float) -> list[TurnEvent]:
        u.barged = True
        self.speaking, self._holding = False, None
        return [BargeIn(u.id, now)]

    def _resume(self, u: _Utterance, now: float) -> list[TurnEvent]:
        if self._holding is None or self._holding[0] is not u:
            return []
        self._holding = None
        return [Resumed(u.id, now)]

    def _keyword(self, u: _Utterance, text: str, now: float) -> list[TurnEvent]:
        if not (u.over_console and self.config.barge_in and not u.barged and self.config.barge_in_keywords):
            return []
        words = {w.strip(".,!?;:'\"").lower() for w in text.split()}
        return self._barge(u, now) if words & {k.lower() for k in self.config.barge_in_keywords} else []

    def _request(self, u: _Utterance, end: float, final: bool) -> list[TurnEvent]:
        if self._in_flight is not None:
            return []
        if not final and u.speculated is not None and u.speculated[0] == end:
            return []  # already transcribed exactly this
        request = TranscribeRequest(self._new_id(), u.id, u.start - self.config.pre_roll_s, end, final)
        self._in_flight = request
        return [request]

    def _end(self, u: _Utterance, at: float, now: float, reason: str) -> list[TurnEvent]:
        self._current = None
        if u.over_console and not (u.barged or (self.config.barge_in and self.config.barge_in_keywords)):
            why = "too short to interrupt" if self.config.barge_in else "the console was speaking"
            return [Dropped(u.id, why), *self._resume(u, now)]
        u.ended = SpeechEnded(u.id, at, now, reason)
        self._finishing[u.id] = u
        end = self._final_end(u)
        if u.speculated is not None and u.speculated[0] == end:
            return [u.ended, *self._finish(u, u.speculated[1], now)]
        flying = self._in_flight
        if flying is not None and flying.utterance == u.id and flying.end == end:
            u.final_requested = True  # the speculative request covers exactly this span: its answer is the final
        return [u.ended, *self._next_final()]

    def _next_final(self) -> list[TurnEvent]:
        """Asks for the oldest ended utterance's final once nothing is in flight."""
        if self._in_flight is not None:
            return []
        for u in self._finishing.values():
            end = self._final_end(u)
            if not u.final_requested and end is not None:
                u.final_requested = True
                return self._request(u, end, final=True)
        return []

    def _finish(self, u: _Utterance, text: str, now: float) -> list[TurnEvent]:
        self._finishing.pop(u.id, None)
        if not text:
            return [Dropped(u.id, "nothing was said"), *self._resume(u, now)]
        events: list[TurnEvent] = self._keyword(u, text, now)
        if u.over_console and self.config.barge_in_keywords and not u.barged:
            return [Dropped(u.id, "no barge-in keyword"), *self._resume(u, now)]
        return [*events, Transcript(u.id, text, True, now)]
