"""What the front-end hands to G2P: spoken words, each knowing the characters of the source text it speaks."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

_NOT_MARKUP = str.maketrans("[]", "()")
G2P_WORD_CHARS = 48
"""Longest run without a space G2P reads at once: misaki merges a word's tokens in quadratic time ("(a)(" repeated
400 characters: 0.8 s), and no word is this long (a longer one is a hash, junk or a URL: read in pieces)."""
TEXT = "text"
"""Written words: the spoken form (numbers, units, symbols) and the lexicon still apply."""
SPOKEN = "spoken"
"""Already the spoken form (an SSML ``sub``, spelled characters, a lexicon respelling): the lexicon still applies."""
PHONEMES = "phonemes"
"""Kokoro phonemes for one word (inline override, SSML ``phoneme``, lexicon entry): G2P reads them as they are."""


@dataclass(frozen=True, slots=True)
class Unit:
    """One word (or one phoneme override) with the source span ``[start, end)`` it came from."""

    text: str
    start: int
    end: int
    kind: str = TEXT
    phonemes: str = ""
    """For ``PHONEMES``: the symbols; ``text`` is then the word shown for them."""
    rate: float = 1.0
    """Speaking-rate factor (SSML ``prosody rate``), multiplied with the session's speed."""
    pause_after_s: float = 0.0
    """Silence after this word (SSML ``break``)."""

    def with_text(self, text: str, kind: str | None = None) -> Unit:
        return Unit(text, self.start, self.end, kind or self.kind, self.phonemes, self.rate, self.pause_after_s)

    @property
    def g2p_text(self) -> str:
        """The word as misaki reads it: phoneme overrides in its ``[word](/phonemes/)`` form, no other bracket misaki
        could take for one, and no "word" over ``G2P_WORD_CHARS`` (misaki's time is quadratic in both)."""
        if self.kind == PHONEMES:
            core, tail = split_trailing_punctuation(self.text)
            return f"[{core or 'x'}](/{self.phonemes}/){tail}"
        text = self.text.translate(_NOT_MARKUP)
        if len(text) <= G2P_WORD_CHARS:
            return text
        return " ".join(text[i : i + G2P_WORD_CHARS] for i in range(0, len(text), G2P_WORD_CHARS))


@dataclass(frozen=True, slots=True)
class Change:
    """One rewrite, for ``voicedesk phonemes --explain``: which rule turned which source text into what."""

    rule: str
    source: str
    spoken: str


@dataclass(frozen=True, slots=True)
class SpokenText:
    """The front-end's output: picklable; ``text`` goes to G2P, ``units`` map it back to ``source``."""

    source: str
    units: tuple[Unit, ...]
    changes: tuple[Change, ...] = ()
    notes: tuple[str, ...] = ()
    """Things the listener should know about how this was read (e.g. a spoken-form stage unavailable)."""

    @property
    def text(self) -> str:
        return " ".join(u.g2p_text for u in self.units)

    @property
    def plain(self) -> str:
        """The spoken words with overrides shown as their word (what a person would read aloud)."""
        return " ".join(u.text for u in self.units)

    def runs(self) -> list[tuple[float, float, tuple[Unit, ...]]]:
        """Consecutive units sharing a rate, cut after each pause and at line breaks of the source (where
        ``KPipeline`` cuts too): ``(rate, pause_after_s, units)``, one model forward (or more) each."""
        found: list[tuple[float, float, tuple[Unit, ...]]] = []
        current: list[Unit] = []
        for unit in self.units:
            new_line = bool(current) and "\n" in self.source[current[-1].end : unit.start]
            if current and (unit.rate != current[-1].rate or new_line):
                found.append((current[-1].rate, 0.0, tuple(current)))
                current = []
            current.append(unit)
            if unit.pause_after_s > 0:
                found.append((unit.rate, unit.pause_after_s, tuple(current)))
                current = []
        if current:
            found.append((current[-1].rate, 0.0, tuple(current)))
        return found


TRAILING_PUNCTUATION = ".,;:!?…\"'”’)]}"
LEADING_PUNCTUATION = "\"'“‘([{"


def split_trailing_punctuation(word: str) -> tuple[str, str]:
    core = word.rstrip(TRAILING_PUNCTUATION)
    return core, word[len(core) :]


def strip_punctuation(word: str) -> tuple[str, str, str]:
    """``(leading, core, trailing)`` punctuation of a word."""
    core = word.lstrip(LEADING_PUNCTUATION)
    lead = word[: len(word) - len(core)]
    core, tail = split_trailing_punctuation(core)
    return lead, core, tail


def words_with_spans(text: str, offset: int = 0) -> Iterable[tuple[str, int, int]]:
    """Whitespace-separated words of ``text`` with their spans (shifted by ``offset``)."""
    start = None
    for index, ch in enumerate(text):
        if ch.isspace():
            if start is not None:
                yield text[start:index], offset + start, offset + index
                start = None
        elif start is None:
            start = index
    if start is not None:
        yield text[start:], offset + start, offset + len(text)


def trim_span(source: str, start: int, end: int) -> tuple[int, int]:
    """The span without the punctuation around the word (``-5°C,`` → ``-5°C``), unless nothing else is left."""
    low, high = start, end
    while low < high and source[low] in LEADING_PUNCTUATION:
        low += 1
    while high > low and source[high - 1] in TRAILING_PUNCTUATION:
        high -= 1
    return (low, high) if low < high else (start, end)


def locate_tokens(
    units: tuple[Unit, ...], token_texts: Iterable[str], source: str | None = None
) -> list[tuple[int, int] | None]:
    """The source span of each G2P token, searched in the spoken words from where the previous one ended (misaki splits
    and merges words its own way); ``None`` when not found. With ``source``, trimmed of punctuation."""
    shown = ""
    owners: list[int] = []
    for index, unit in enumerate(units):
        if shown:
            shown += " "
            owners.append(index)
        shown += unit.text
        owners.extend([index] * len(unit.text))
    spans: list[tuple[int, int] | None] = []
    cursor = 0
    for token in token_texts:
        token = token.strip()
        at = shown.find(token, cursor) if token else -1
        if at < 0:
            spans.append(None)
            continue
        first, last = units[owners[at]], units[owners[at + len(token) - 1]]
        span = (first.start, max(last.end, first.start))
        spans.append(trim_span(source, *span) if source is not None else span)
        cursor = at + len(token)
    return spans
