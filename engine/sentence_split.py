"""Splitting a long sentence at a clause boundary, so one model call stays short while others wait (pure).

A model call cannot be pre-empted, so a session that starts speaking while another synthesizes a long sentence
waits for all of it. When the scheduler has waiting sessions, the session core hands out a long sentence in
clause-sized parts instead. Only clause punctuation (``, ; :`` and dashes, CJK ``，、；：``) is a split point: the
speaker pauses there anyway, so the seam falls where a listener expects a breath. A sentence with no clause
boundary is never split.
"""

from __future__ import annotations

import re

from engine.chunker_phonemes import estimate_phonemes

_CLAUSE_END = re.compile(r"(?:[,;:](?=\s)|[—―](?=\S|\s)|\s[-–](?=\s)|[，、；：])[\"'”’)\]]*")
MIN_PART_WORDS = 3
"""Neither part may be shorter than this many words (a two-word part sounds clipped)."""


def _words(text: str) -> int:
    return len(re.findall(r"\w+", text))


def split_at_clause(text: str, max_phonemes: int) -> tuple[str, str] | None:
    """The sentence cut after a clause boundary: the latest one whose first part fits in ``max_phonemes``, else the
    earliest one; None when there is no boundary that leaves both parts at least ``MIN_PART_WORDS`` words."""
    fitting: tuple[str, str] | None = None
    first: tuple[str, str] | None = None
    for match in _CLAUSE_END.finditer(text):
        head, tail = text[: match.end()].rstrip(), text[match.end() :].strip()
        if _words(head) < MIN_PART_WORDS or _words(tail) < MIN_PART_WORDS:
            continue
        if first is None:
            first = (head, tail)
        if estimate_phonemes(head) <= max_phonemes:
            fitting = (head, tail)
        else:
            break
    return fitting or first
