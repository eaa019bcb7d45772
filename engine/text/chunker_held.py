"""What the chunker holds and why: the clock-free facts a session turns into "release on quiet" deadlines.

The chunker never knows how long text has waited; ``IncrementalSentenceChunker.held`` says what it waits *for*,
and ``release_sentences()`` / ``release_all()`` let the owner of the clock give up waiting.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class HeldEnd(StrEnum):
    """How the held text ends: what the chunker is waiting for at its tail."""

    LOOK_AHEAD = "look-ahead"
    """A sentence end: terminal punctuation (``.`` ``!`` ``?`` ``…`` and runs of them, closers included) and then
    whitespace, waiting only for the next non-space character ("I will turn off the lights. "). A lower-case
    next word would still make the sentence go on ("wait... what"), but as far as the chunker can tell now the
    sentence has ended. A single period after a word that says otherwise is not an end: a title or "e.g."
    ("Dr. "), an initial ("J. "), an abbreviation that may precede a number ("No. ", "Jan. "), a dotted
    abbreviation ("U.S. "), a list marker at the start of a line ("1. "); "etc. " and ordinary words are."""
    CLOSERS = "closers"
    """A sentence end: a CJK terminal (``。！？``) is the last character held, its run still open for closing
    quotes or brackets ("我是一个机器人。")."""
    MERGING = "merging"
    """A confirmed sentence end with only whitespace after it, held so a short sentence can merge with the next:
    shorter than ``min_sentence_chars`` ("Sure." once the next character has confirmed it, a short line ended by
    a newline), or an early first fragment with fewer than ``min_first_words`` words."""
    UNSPACED = "unspaced"
    """Not a sentence end yet: the held text ends in terminal punctuation with nothing after it ("…the lights.",
    as LLM tokens leave it before " I"), which the word rules above would accept as an end. Whitespace next
    makes it LOOK_AHEAD; but "3." may still become "3.14" and "example." "example.com", so it is not counted in
    ``sentence_chars``. ``release_all()`` releases exactly up to it."""
    OPEN = "open"
    """Mid-sentence: more text is needed before the held text can end (an earlier sentence end may still be
    held: see ``sentence_chars``)."""


@dataclass(frozen=True, slots=True)
class HeldText:
    """A snapshot of what the chunker holds (``IncrementalSentenceChunker.held``); it does not change later."""

    chars: int
    """Characters held: the same as ``buffered_chars`` (from the first non-space character, trailing whitespace
    included)."""
    sentence_chars: int
    """Held characters up to and including the *last* sentence end (its closers included): the last LOOK_AHEAD or
    CLOSERS end at the tail, else the last confirmed end held for merging; 0 if none. ``release_sentences()``
    releases exactly these characters (stripped) and keeps the rest: "Sure. I will" gives 5 ("Sure.")."""
    end: HeldEnd
    """How the held text ends."""
