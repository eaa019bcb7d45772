"""What the chunker holds and why: the clock-free facts a session turns into "release on quiet" deadlines."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class HeldEnd(StrEnum):
    """How the held text ends: what the chunker is waiting for at its tail."""

    LOOK_AHEAD = "look-ahead"
    """A sentence end (terminal punctuation and whitespace) waiting only for the next non-space character: a lower-case
    word would still make it go on ("wait... what")."""
    CLOSERS = "closers"
    """A sentence end: a CJK terminal (``。！？``) is the last character held, its run still open for closing
    quotes or brackets ("我是一个机器人。")."""
    MERGING = "merging"
    """A confirmed sentence end held so a short sentence can merge with the next (under ``min_sentence_chars``, or a
    first fragment under ``min_first_words``)."""
    UNSPACED = "unspaced"
    """Terminal punctuation with nothing after it yet: "3." may become "3.14", so it is not in ``sentence_chars``;
    ``release_all()`` releases up to it."""
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
    """Held characters up to the last sentence end, closers included; what ``release_sentences()`` releases ("Sure. I
    will" gives 5)."""
    end: HeldEnd
    """How the held text ends."""
