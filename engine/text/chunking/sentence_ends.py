"""Character classes, the sentence-end decision at each ``.``/``!``/``?`` run, and what the chunker says it holds
(``HeldText``: the clock-free facts a session turns into "release on quiet" deadlines), kept apart from the chunker's
state machine so they read as a table."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

NEWLINES = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
"""What ``str.splitlines`` splits on: each ends a sentence."""

TERMINALS = frozenset(".!?…‼⁇⁈⁉؟۔।॥")
"""Sentence-ending punctuation of space-separated scripts: it ends a sentence only before whitespace."""
CJK_TERMINALS = frozenset("。！？｡")
"""Full-width sentence ends: no space follows them, the next character is enough."""
CLAUSE_MARKS = frozenset(",;:،")
"""Clause punctuation of space-separated scripts (a boundary before whitespace only: "1,234", "10:30")."""
CJK_CLAUSE_MARKS = frozenset("，、；：")
DASHES = frozenset("—―")
"""Em dash and horizontal bar: a clause boundary after them, spaced or not ("yes—no")."""
HYPHENS = frozenset("-–")
"""Hyphen and en dash: a clause boundary only when spaced (" - "), or doubled ("--")."""
CLOSERS = frozenset("\"'”’)]}»›」』】〉》）〕＂*_`")
"""Closing quotes and brackets (and Markdown emphasis, "**Done.**"): they stay with the sentence they close."""
QUOTES = frozenset("\"'”’»›」』")
SPACED_CLOSERS = frozenset("»›")
"""Closing quotes French writes after a space ("Oui ! »"): after a sentence end they still belong to it."""
OPENERS = "\"'“‘([{«‹「『【〈《（〔¿¡*_"
"""Stripped from the front of the word before a period when looking it up."""

# --- abbreviations --------------------------------------------------------------------------------------
# Looked up lower-cased, without the final period.

NEVER_END = frozenset(
    """
    dr mr mrs ms mx messrs mme mlle prof rev fr hon gen col capt cpt lt sgt maj cmdr adm gov sen rep pres
    supt insp det st mt vs v e.g eg i.e ie cf viz approx
    """.split()
)
"""Titles and "for example"-like words: a capital after them starts a name ("Dr. Smith", "e.g. Paris"). When they do
end a sentence the chunk just runs on, which costs latency, never a wrong pause."""

BEFORE_NUMBER = frozenset(
    """
    no nos nr fig figs vol vols p pp ch chap sec sect art eq eqs ref op pt pts tel ext ca ed
    jan feb mar apr jun jul aug sep sept oct nov dec
    """.split()
)
"""Abbreviations that precede a number ("No. 5", "Fig. 3", "Jan. 12"). Before a number they never end a
sentence; before a word they may ("I said No. Then ...", "It was Jan. The ..."), so the usual rule applies."""

MAY_END = frozenset("etc inc ltd co corp llc plc bros jr sr esq al a.m p.m am pm".split())
"""Abbreviations that often close a sentence: "... apples, pears, etc. The next ..." ends the sentence before
the capital; "etc. and" does not: they follow the usual rule, but an early release waits for the next word."""

_MULTI_DOT = re.compile(r"(?:[^\W\d_]{1,3}\.)+[^\W\d_]{1,3}")
"""U.S, Ph.D, e.g, a.m: letters with inner periods (the final period is not part of the word)."""
DAY = re.compile(r"\d{1,2}(?:st|nd|rd|th)?")
"""The word before a comma that may be a date's day: no cut there when a number (its year) follows."""
_ROMAN = re.compile(r"[ivx]{1,5}|[IVX]{1,5}")


def is_list_marker(word: str) -> bool:
    """ "1", "12", "a", "B", "iv": what numbers a list item at the start of a line ("1. First item")."""
    return (word.isdigit() and len(word) <= 3) or (len(word) == 1 and word.isalpha()) or bool(_ROMAN.fullmatch(word))


def clean_word(token: str) -> str:
    """The word before a period, without the quotes/brackets around it ('"(Dr' → 'Dr')."""
    return token.lstrip(OPENERS).rstrip("".join(CLOSERS))


def period_ends_sentence(word: str, next_char: str, *, at_line_start: bool) -> bool:
    """Whether "<word>. <next_char>" ends a sentence (``next_char`` neither lower-case nor a space); "1." at a line
    start is a list marker."""
    if not word:
        return True
    lower = word.lower()
    if at_line_start and is_list_marker(word):
        return False
    if lower in NEVER_END:
        return False
    if lower in BEFORE_NUMBER and (next_char.isdigit() or next_char == "#"):
        return False
    if lower in MAY_END:
        return True
    if len(word) == 1 and word.isupper() and word != "I" and next_char.isupper():
        return False  # an initial: "J. R. R. Tolkien", "George W. Bush" (but "So do I. Then")
    # Other dotted abbreviations (U.S., Ph.D.) mostly run on: "the U.S. Army".
    return not (_MULTI_DOT.fullmatch(word) and next_char.isalnum())


def run_ends_sentence(single_period: bool, word: str, next_char: str, *, at_line_start: bool) -> bool:
    """Whether a terminal run, whitespace and then ``next_char`` end a sentence: a lower-case word goes on, a single
    period defers to ``period_ends_sentence``."""
    if next_char.islower() or next_char in ",;:.!?…)]}":
        return False
    if not single_period:
        return True
    return period_ends_sentence(word, next_char, at_line_start=at_line_start)


def run_ends_unless_lower(single_period: bool, word: str, *, at_line_start: bool) -> bool:
    """Whether a terminal run and whitespace end a sentence whatever comes next short of a lower-case word: not after
    "Dr.", "J.", "No.", "U.S." or a list marker."""
    if not single_period:
        return True
    return period_ends_sentence(word, "X", at_line_start=at_line_start) and period_ends_sentence(
        word, "5", at_line_start=at_line_start
    )


def period_ends_clearly(word: str, *, at_line_start: bool) -> bool:
    """Whether "<word>." ends a sentence before whatever comes next short of a lower-case word or more of the token:
    not after a number ("3.14"), a letter, or any abbreviation ("etc." often goes on)."""
    if len(word) < 2 or not word[-1].isalpha() or word.lower() in MAY_END:
        return False
    return run_ends_unless_lower(True, word, at_line_start=at_line_start)


def unclosed(text: str) -> bool:
    """An open quote, bracket or bold: its closer may be the next token and belongs to this sentence."""
    pairs = (("\u201c", "\u201d"), ("«", "»"), ("(", ")"))
    return text.count('"') % 2 == 1 or text.count("**") % 2 == 1 or any(text.count(o) > text.count(c) for o, c in pairs)


def cut_may_follow(token: str, *, at_line_start: bool) -> bool:
    """Whether a forced cut may come right after ``token`` (not after "Dr.", "J.", "No." or a list marker)."""
    word = clean_word(token)
    if not word.endswith("."):
        return True
    return run_ends_unless_lower(True, word[:-1], at_line_start=at_line_start)


class HeldEnd(StrEnum):
    """How the held text ends: what the chunker is waiting for at its tail."""

    LOOK_AHEAD = "look-ahead"
    """A sentence end (terminal punctuation and whitespace) waiting only for the next non-space character: a lower-case
    word would still make it go on ("wait... what")."""
    CLOSERS = "closers"
    """A sentence end: a CJK terminal (``。！？``) held last, its run still open for closers."""
    MERGING = "merging"
    """A confirmed sentence end held so a short sentence can merge with the next (under ``min_sentence_chars``, or a
    first fragment under ``min_first_words``)."""
    UNSPACED = "unspaced"
    """Terminal punctuation with nothing after it yet: "3." may become "3.14", so it is not in ``sentence_chars``;
    ``release_all()`` releases up to it."""
    OPEN = "open"
    """Mid-sentence: more text is needed before the held text can end."""


@dataclass(frozen=True, slots=True)
class HeldText:
    """A snapshot of what the chunker holds (``IncrementalSentenceChunker.held``); it does not change later."""

    chars: int
    """Characters held, as ``buffered_chars``: from the first non-space, trailing whitespace included."""
    sentence_chars: int
    """Held characters up to the last sentence end, closers included; what ``release_sentences()`` releases ("Sure. I
    will" gives 5)."""
    end: HeldEnd
