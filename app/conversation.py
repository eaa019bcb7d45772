"""The conversation's pure state (no Qt, clock or I/O): each turn's sentences on its audio timeline, so a playback
position gives the word being spoken, and an interrupt where speech was cut ("heard up to …")."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from voicedesk.engine.events import WordTiming

CUT_CONTEXT_WORDS = 4  # heard words the "heard up to …" mark quotes

_WORD = re.compile(r"\S+")
_EDGE_PUNCTUATION = "\"'“”‘’«»()[]{}.,;:!?…—–-"
_MAX_ALIGN_SKIP = 48  # a timing token found further on than this is a mismatch, not a match


class TurnKind(StrEnum):
    SPEAK = "speak"
    AGENT = "agent"
    PREVIEW = "preview"


class TurnState(StrEnum):
    WAITING = "waiting"  # text sent, no audio yet
    SPEAKING = "speaking"
    DONE = "done"
    CUT = "cut"  # interrupted: see Turn.cut
    FAILED = "failed"


class RunStyle(StrEnum):
    SPOKEN = "spoken"
    CURRENT = "current"
    UPCOMING = "upcoming"  # in a sentence the engine has, not heard yet
    PENDING = "pending"  # text not yet claimed by any sentence
    UNHEARD = "unheard"  # after a cut: never heard


@dataclass(frozen=True, slots=True)
class WordSpan:
    start: int  # character offsets into the sentence text
    end: int
    start_s: float  # seconds from the sentence's first sample
    end_s: float


@dataclass(frozen=True, slots=True)
class WordRef:
    sentence: int
    word: int


@dataclass(frozen=True, slots=True)
class CutMark:
    heard_s: float  # of the turn's audio, before the fade-out
    sentence: int | None  # the sentence cut in (None: before any audio, or after the last)
    char: int  # offset into that sentence's text heard up to
    heard_text: str  # what an agent should believe the listener heard

    @property
    def quote(self) -> str:
        words = self.heard_text.split()
        if not words:
            return ""
        tail = " ".join(words[-CUT_CONTEXT_WORDS:])
        return tail if len(words) <= CUT_CONTEXT_WORDS else f"…{tail}"


@dataclass(frozen=True, slots=True)
class Run:
    text: str
    style: RunStyle
    sentence: int | None = None


@dataclass
class Sentence:
    index: int
    text: str
    engine: str
    audio_start_s: float | None = None  # on the turn's audio timeline; None until audio arrives
    audio_s: float = 0.0
    words: tuple[WordSpan, ...] = ()
    finished: bool = False
    error: str | None = None

    @property
    def audio_end_s(self) -> float | None:
        return None if self.audio_start_s is None else self.audio_start_s + self.audio_s

    def char_heard(self, offset_s: float) -> int:
        """Characters of the text heard ``offset_s`` seconds into the sentence (whole words only)."""
        if offset_s >= self.audio_s and self.finished:
            return len(self.text)
        heard = 0
        for span in self.words:
            if span.start_s < offset_s:
                heard = span.end
        return heard


@dataclass
class Turn:
    id: int
    kind: TurnKind
    prompt: str
    engine: str
    sentences: list[Sentence] = field(default_factory=list)
    pending: str = ""  # text sent (or written by the agent) that no sentence has claimed yet
    state: TurnState = TurnState.WAITING
    audio_s: float = 0.0  # queued for playback so far: the turn's audio timeline
    cut: CutMark | None = None
    notes: list[str] = field(default_factory=list)
    error: str | None = None

    def add_sentence(self, text: str, engine: str | None = None) -> Sentence:
        sentence = Sentence(len(self.sentences), text, engine or self.engine)
        self.sentences.append(sentence)
        return sentence

    def add_audio(self, index: int, seconds: float) -> float:
        """Audio of sentence ``index`` was queued for playback; returns where it starts on the timeline."""
        sentence = self.sentences[index]
        at = self.audio_s
        if sentence.audio_start_s is None:
            sentence.audio_start_s = at
        sentence.audio_s += seconds
        self.audio_s += seconds
        if self.state is TurnState.WAITING:
            self.state = TurnState.SPEAKING
        return at

    def finish_sentence(self, index: int, words: Sequence[WordTiming]) -> None:
        sentence = self.sentences[index]
        sentence.words = align_words(sentence.text, words)
        sentence.finished = True

    @property
    def active(self) -> bool:
        return self.state in (TurnState.WAITING, TurnState.SPEAKING)

    @property
    def text(self) -> str:
        return " ".join([*(s.text for s in self.sentences), self.pending.strip()]).strip()

    def sentence_at(self, position_s: float) -> Sentence | None:
        for sentence in self.sentences:
            end = sentence.audio_end_s
            if end is not None and sentence.audio_start_s <= position_s < end:
                return sentence
        return None

    def word_at(self, position_s: float) -> WordRef | None:
        """The last word that has begun ``position_s`` seconds into the turn's audio."""
        sentence = self.sentence_at(position_s)
        if sentence is None or not sentence.words:
            return None
        offset = position_s - sentence.audio_start_s
        current = None
        for number, span in enumerate(sentence.words):
            if span.start_s <= offset:
                current = number
            else:
                break
        return None if current is None else WordRef(sentence.index, current)

    def heard_text(self, heard_s: float) -> str:
        parts = []
        for sentence in self.sentences:
            if sentence.audio_start_s is None or sentence.audio_start_s >= heard_s:
                break
            chars = sentence.char_heard(heard_s - sentence.audio_start_s)
            parts.append(sentence.text[:chars].strip())
        return " ".join(p for p in parts if p)

    def mark_cut(self, heard_s: float) -> CutMark:
        """Speech stopped after ``heard_s`` seconds: remember where, so the view can mark it."""
        inside = self.sentence_at(heard_s)
        if inside is None:
            # Between sentences, or past the end: cut at the start of the next sentence not heard.
            upcoming = [s for s in self.sentences if s.audio_start_s is None or s.audio_start_s >= heard_s]
            inside, char = (upcoming[0], 0) if upcoming else (None, 0)
        else:
            char = inside.char_heard(heard_s - inside.audio_start_s)
        self.cut = CutMark(heard_s, inside.index if inside else None, char, self.heard_text(heard_s))
        self.state = TurnState.CUT
        return self.cut

    def runs(self, position_s: float | None) -> list[Run]:
        """The turn's text split into styled runs for display, given the heard position (None: not playing)."""
        runs: list[Run] = []
        current = self.word_at(position_s) if position_s is not None and self.active else None
        for sentence in self.sentences:
            runs.extend(self._sentence_runs(sentence, position_s, current))
            runs.append(Run(" ", runs[-1].style if runs else RunStyle.SPOKEN))
        if self.pending.strip():
            style = RunStyle.UNHEARD if self.state is TurnState.CUT else RunStyle.PENDING
            runs.append(Run(self.pending.strip(), style))
        while runs and runs[-1].text == " ":
            runs.pop()
        return _merge(runs)

    def _sentence_runs(self, sentence: Sentence, position_s: float | None, current: WordRef | None) -> list[Run]:
        text, index = sentence.text, sentence.index
        if self.state is TurnState.CUT and self.cut is not None:
            cut_sentence = self.cut.sentence if self.cut.sentence is not None else len(self.sentences)
            if index < cut_sentence:
                return [Run(text, RunStyle.SPOKEN, index)]
            if index > cut_sentence:
                return [Run(text, RunStyle.UNHEARD, index)]
            return _split(text, self.cut.char, RunStyle.SPOKEN, RunStyle.UNHEARD, index)
        if self.state in (TurnState.DONE, TurnState.FAILED) or position_s is None:
            heard_all = self.state is TurnState.DONE or sentence.audio_start_s is not None
            return [Run(text, RunStyle.SPOKEN if heard_all else RunStyle.UPCOMING, index)]
        start, end = sentence.audio_start_s, sentence.audio_end_s
        if start is None or position_s < start:
            return [Run(text, RunStyle.UPCOMING, index)]
        if end is not None and position_s >= end and sentence.finished:
            return [Run(text, RunStyle.SPOKEN, index)]
        if current is None or current.sentence != index:
            return [Run(text, RunStyle.SPOKEN, index)] if not sentence.words else [Run(text, RunStyle.UPCOMING, index)]
        span = sentence.words[current.word]
        return [
            Run(text[: span.start], RunStyle.SPOKEN, index),
            Run(text[span.start : span.end], RunStyle.CURRENT, index),
            Run(text[span.end :], RunStyle.UPCOMING, index),
        ]


def align_words(text: str, words: Sequence[WordTiming]) -> tuple[WordSpan, ...]:
    """By each word's source span (``-5°C`` for "minus"), else misaki's token ("n't") found nearby as a whole word."""
    folded = text.casefold()
    spans: list[WordSpan] = []
    cursor = 0
    for timing in words:
        source = _source_span(text, timing)
        if source is not None:  # the engine says which written characters this word speaks ("-5°C" for "minus")
            start, end = source
            cursor = max(cursor, end)
            if spans and start < spans[-1].end:  # more words of the same written text: it stays lit through them
                last = spans[-1]
                spans[-1] = WordSpan(last.start, max(last.end, end), last.start_s, max(last.end_s, timing.end_s))
                continue
            spans.append(WordSpan(start, end, timing.start_s, timing.end_s))
            continue
        token = timing.word.strip().casefold()
        if not token:
            continue
        at = folded.find(token, cursor)
        if at < 0 or at - cursor > _MAX_ALIGN_SKIP:
            continue
        cursor = at + len(token)
        start, end = _whole_word(text, at, cursor)
        if spans and spans[-1].start == start:  # a second token of the same word ("n't"): extend its time
            last = spans[-1]
            spans[-1] = WordSpan(last.start, max(last.end, end), last.start_s, max(last.end_s, timing.end_s))
            continue
        if spans and start < spans[-1].end:
            continue
        spans.append(WordSpan(start, end, timing.start_s, timing.end_s))
    return tuple(spans)


def _source_span(text: str, timing: WordTiming) -> tuple[int, int] | None:
    start, end = timing.start_char, timing.end_char
    if start is None or end is None or not 0 <= start < end <= len(text) or not text[start:end].strip():
        return None
    return start, end


def _whole_word(text: str, start: int, end: int) -> tuple[int, int]:
    for match in _WORD.finditer(text):
        if match.start() <= start < match.end():
            word_start, word_end = match.start(), max(match.end(), end)
            break
    else:
        return start, end
    while word_start < start and text[word_start] in _EDGE_PUNCTUATION:
        word_start += 1
    while word_end > end and text[word_end - 1] in _EDGE_PUNCTUATION:
        word_end -= 1
    return word_start, word_end


def _split(text: str, at: int, before: RunStyle, after: RunStyle, sentence: int) -> list[Run]:
    runs = [Run(text[:at], before, sentence), Run(text[at:], after, sentence)]
    return [r for r in runs if r.text]


def _merge(runs: list[Run]) -> list[Run]:
    merged: list[Run] = []
    for run in runs:
        if not run.text:
            continue
        if merged and merged[-1].style is run.style and run.style is not RunStyle.CURRENT:
            merged[-1] = Run(merged[-1].text + run.text, run.style, merged[-1].sentence)
        else:
            merged.append(run)
    return merged
