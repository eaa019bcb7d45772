"""A conservative, pure estimate of how many phonemes Kokoro's G2P will make of a text.

The chunker keeps every chunk under Kokoro's 510 phonemes but cannot run the G2P on every fragment (spaCy: ~600 MB,
milliseconds a sentence), so it counts, erring high, with weights calibrated on misaki 0.9.4
(``tests/engine/text/test_chunker.py`` checks them against the real G2P): letters by word (spelled-out capitals and
non-ASCII letters cost more), 13 per digit, 10-30 per symbol read as words, 16 per CJK character ("Chinese letter"). On
English prose the estimate runs 1.2-1.4 times the real count. Weights are integer quarter phonemes, so sums are exact
and order-independent.

With the voice's language known (``char_kind_for``), its own script costs what its G2P makes of it, with a margin
(measured phonemes per character: Japanese 2.9, weight 5; Mandarin 4.1, 6; Hindi 1.4, 2.5): with English weights a
510-phoneme chunk of Japanese would hold about 30 characters, cut where nobody pauses."""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from voicedesk.engine.text.chunking.protected_spans import SpanGuard

QUARTERS = 4
"""Internal unit: a quarter phoneme."""

# Letter costs, in quarters.
_WORD_LETTER = 5  # 1.25 per letter
_WORD_U_EXTRA = 3  # "u" often reads "jˈu" ("music", "uvula"): 2 per u
_WORD_PART_EXTRA = 2  # each word part costs an extra half phoneme (stress mark)
_TWO_LETTER_WORD = 16  # "ax" → "ˈæks"
_OK = 20  # "ok" → "ˌOkˈA"
_ONE_LETTER_WORD = 8  # "a" → "ɐ", "I" → "ˌI"
_EXTRA_CAPITAL = 16
_SPELLED_LETTER = 16
_SPELLED_W_EXTRA = 24  # W spelled is 8-9.5 phonemes ("wWwWwW" → 57)
_SPELLED_NON_ASCII = 40  # "ñ" alone → "ˌɛntˈɪldə"
_VOWELS = frozenset("aeiouyAEIOUY")

_DIGIT = 52
_WHITESPACE = 4
_PLAIN_PUNCT = 4
_ASCII_SYMBOL = 40
_CURRENCY = 80
_CJK = 64
_OTHER_SCRIPT = 80
_SHORT_SCRIPT = 20
_MARK = 8
_EMOJI = 120
_MATH = 80
_MODIFIER = 40
_MINIMUM = 1

# Kinds of character, as the estimator (and the chunker's word counting) see them.
LETTER = 0  # a letter that joins a part (Latin script)
DIGIT = 1
SPACE = 2
OTHER = 3  # costs its own weight, ends a part
CJK = 4  # an ideograph/kana/hangul syllable: a word on its own

_PLAIN_ASCII = set(".,;:!?'\"()[]{}-")


@lru_cache(maxsize=8192)
def char_kind(c: str) -> tuple[int, int]:
    """(kind, weight in quarters) of one character; the weight is only used for OTHER and CJK kinds."""
    if c.isspace():
        return SPACE, _WHITESPACE
    if c.isascii():
        if c.isalpha():
            return LETTER, 0
        if c.isdigit():
            return DIGIT, _DIGIT
        if c in _PLAIN_ASCII:
            return OTHER, _PLAIN_PUNCT
        if c == "$":
            return OTHER, _CURRENCY
        if c.isprintable():
            return OTHER, _ASCII_SYMBOL
        return OTHER, _MINIMUM
    category = unicodedata.category(c)
    if is_cjk(c):
        return CJK, _CJK
    if category.startswith("L"):
        name = unicodedata.name(c, "")
        if name.startswith("LATIN"):
            return LETTER, 0
        if name.startswith(("CYRILLIC", "DEVANAGARI")):
            return OTHER, _SHORT_SCRIPT
        return OTHER, _OTHER_SCRIPT
    if category == "Nd":
        return DIGIT, _DIGIT
    if category.startswith("N"):
        return OTHER, _MATH
    if category.startswith("M"):
        # Combining accents on Latin letters vanish in G2P; vowel signs of other scripts are spelled out.
        if 0x0300 <= ord(c) <= 0x036F or 0xFE00 <= ord(c) <= 0xFE0F:
            return OTHER, _MARK
        if unicodedata.name(c, "").startswith("DEVANAGARI"):
            return OTHER, _SHORT_SCRIPT
        return OTHER, _OTHER_SCRIPT
    if category == "So":
        return OTHER, _EMOJI
    if category in ("Sm", "Sc"):
        return OTHER, _MATH
    if category == "Sk":
        return OTHER, _MODIFIER
    if category == "Po":
        return OTHER, _ASCII_SYMBOL
    if category.startswith("P"):
        return OTHER, _PLAIN_PUNCT
    return OTHER, _MINIMUM


def is_cjk(c: str) -> bool:
    """Han ideographs, kana and Hangul syllables: scripts written without spaces between words."""
    o = ord(c)
    return (
        0x4E00 <= o <= 0x9FFF  # CJK unified ideographs
        or 0x3400 <= o <= 0x4DBF  # extension A
        or 0x3040 <= o <= 0x30FF  # hiragana, katakana
        or 0x31F0 <= o <= 0x31FF  # katakana phonetic extensions
        or 0xAC00 <= o <= 0xD7AF  # hangul syllables
        or 0xF900 <= o <= 0xFAFF  # compatibility ideographs
        or 0xFF66 <= o <= 0xFF9D  # halfwidth katakana
        or 0x20000 <= o <= 0x3134F  # extensions B-G
    )


@dataclass(slots=True)
class PhonemeEstimator:
    """Running estimate over a text fed one character at a time (O(1) per character)."""

    closed: int = 0
    """Quarters of everything before the open letter part."""
    part_letters: int = 0
    part_upper: int = 0
    part_lower: int = 0
    part_vowels: int = 0
    part_w: int = 0
    part_non_ascii: int = 0
    part_u: int = 0
    part_head: str = ""
    """The first two letters of the part, lower-cased (short words have their own costs)."""
    kind_of: Callable[[str], tuple[int, int]] = char_kind
    """Weights per character: ``char_kind``, or the voice language's (``engine.text.chunking.phoneme_estimate``)."""

    def add(self, c: str) -> None:
        kind, weight = self.kind_of(c)
        if kind == LETTER:
            self.part_letters += 1
            if self.part_letters <= 2:
                self.part_head += c.lower()
            if c.isupper():
                self.part_upper += 1
            elif c.islower():
                self.part_lower += 1
            if c in _VOWELS:
                self.part_vowels += 1
            if c in "wW":
                self.part_w += 1
            elif c in "uU":
                self.part_u += 1
            if not c.isascii():
                self.part_non_ascii += 1
            return
        if self.part_letters:
            self._close_part()
        self.closed += weight

    def add_fixed(self, quarters: int) -> None:
        """Adds a character whose cost is known from its context (an inline override's phonemes)."""
        if self.part_letters:
            self._close_part()
        self.closed += quarters

    @property
    def quarters(self) -> int:
        return self.closed + self._part_cost()

    @property
    def phonemes(self) -> int:
        return math.ceil(self.quarters / QUARTERS)

    def _close_part(self) -> None:
        self.closed += self._part_cost()
        self.part_letters = self.part_upper = self.part_lower = 0
        self.part_vowels = self.part_w = self.part_non_ascii = self.part_u = 0
        self.part_head = ""

    def _part_cost(self) -> int:
        letters = self.part_letters
        if not letters:
            return 0
        if letters == 1 and self.part_head in ("a", "i"):
            return _ONE_LETTER_WORD
        spelled = letters == 1 or self.part_lower == 0 or self.part_vowels == 0
        if spelled:
            ascii_letters = letters - self.part_non_ascii
            return (
                ascii_letters * _SPELLED_LETTER
                + self.part_w * _SPELLED_W_EXTRA
                + self.part_non_ascii * _SPELLED_NON_ASCII
            )
        if letters == 2:
            return _OK if self.part_head == "ok" else _TWO_LETTER_WORD
        extra_capitals = max(0, self.part_upper - 1)
        return letters * _WORD_LETTER + self.part_u * _WORD_U_EXTRA + _WORD_PART_EXTRA + extra_capitals * _EXTRA_CAPITAL


def estimate_phonemes(text: str) -> int:
    """A conservative estimate of the phonemes misaki's English G2P makes of ``text``, read as the front-end reads it
    (an override costs its phonemes, a link its text and target)."""
    estimator = PhonemeEstimator()
    guard = SpanGuard()
    for i, c in enumerate(text):
        guard.add(i, c)
        if guard.in_override_target:
            estimator.add_fixed(QUARTERS)
        else:  # a link's target too: unspoken once closed, but one never closed is read whole
            estimator.add(c)
    return estimator.phonemes


SPOKEN_PHONEMES_PER_S = 20.0
"""Phonemes per second of speech at speed 1, as ``estimate_phonemes`` counts them (English prose: 15 characters a
second); digits, symbols, emoji and other scripts count as long as they are read (13-30 phonemes a character)."""


def estimated_audio_s(text: str, speed: float) -> float:
    """Seconds of audio ``text`` will make at ``speed``, counted on what is read: for compute budgets, not
    scheduling."""
    return estimate_phonemes(text) / SPOKEN_PHONEMES_PER_S / speed


CharKind = Callable[[str], tuple[int, int]]

CJK_PHONEMES = {"j": 5.0, "z": 6.0}
"""Phonemes per CJK character (kana, kanji, hanzi) for the languages whose G2P reads them."""
DEVANAGARI_PHONEMES = {"h": 2.5}


def _quarters(phonemes: float) -> int:
    return round(phonemes * QUARTERS)


@lru_cache(maxsize=16)
def char_kind_for(language: str | None) -> CharKind:
    """``char_kind`` with the weights of the voice's language (``None`` or English: the English weights)."""
    cjk = CJK_PHONEMES.get(language or "")
    devanagari = DEVANAGARI_PHONEMES.get(language or "")
    if cjk is None and devanagari is None:
        return char_kind

    @lru_cache(maxsize=8192)
    def kind(c: str) -> tuple[int, int]:
        found = char_kind(c)
        if cjk is not None and is_cjk(c):
            return CJK, _quarters(cjk)
        if devanagari is not None and found[0] == OTHER and 0x0900 <= ord(c) <= 0x097F:
            return OTHER, _quarters(devanagari) if unicodedata.category(c)[0] in "LM" else found[1]
        return found

    return kind


CJK_PHRASE_WAIT = 8
"""Characters past the first fragment's limit to wait for a phrase boundary before cutting at any character."""

_ZH_PHRASE_ENDS = frozenset("的了着过和与在是把被就都也还又很")
"""Mandarin particles and function characters a phrase ends after (没有|, 的|, 了|): jieba is the G2P's, not ours."""


def _hiragana(c: str) -> bool:
    return 0x3040 <= ord(c) <= 0x309F


def cjk_phrase_boundary(language: str | None, before: str, after: str) -> bool:
    """Whether unspaced text's first fragment may be cut between ``before`` and ``after``: Japanese where hiragana
    meets a content word ("友達と|一緒に"), Mandarin after a particle ("去了|车站")."""
    if language == "j":
        return _hiragana(before) and not _hiragana(after)
    if language == "z":
        return before in _ZH_PHRASE_ENDS
    return True
