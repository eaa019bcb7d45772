"""Splitting a long sentence into shorter calls while others wait for the model (pure).

A model call cannot be pre-empted, so a session that starts speaking while another synthesizes a long sentence
waits for all of it. When the scheduler has waiting sessions, the session core hands out a long sentence in parts
no longer than the first sentences waiting (``engine.session_driver.split_threshold``). Where to cut, best first:

1. after clause punctuation (``, ; :``, dashes, CJK ``，、；：``): the speaker pauses there anyway;
2. at a phrase boundary, before a conjunction or a preposition, never inside a phrase ("the living | room") —
   the same word lists the chunker's early first cut uses (``engine.text.chunker_phrases``);
3. failing both within the limit, the earliest clause boundary.

A sentence with no such boundary is never split, and nothing is split when nobody waits (no seam to hear).
"""

from __future__ import annotations

import itertools
import re

from voicedesk.engine.text.chunker_phonemes import estimate_phonemes
from voicedesk.engine.text.chunker_phrases import BINDING, opening_tier, phrase_word

_CLAUSE_END = re.compile(r"(?:[,;:](?=\s)|[—―](?=\S|\s)|\s[-–](?=\s)|[，、；：])[\"'”’)\]]*")
_WORD = re.compile(r"\S+")
MIN_PART_WORDS = 3
"""Neither part may be shorter than this many words (a two-word part sounds clipped)."""


def _words(text: str) -> int:
    return len(re.findall(r"\w+", text))


def _parts(text: str, at: int) -> tuple[str, str] | None:
    head, tail = text[:at].rstrip(), text[at:].strip()
    if _words(head) < MIN_PART_WORDS or _words(tail) < MIN_PART_WORDS:
        return None
    return head, tail


def _clause_cuts(text: str) -> list[tuple[str, str]]:
    return [parts for m in _CLAUSE_END.finditer(text) if (parts := _parts(text, m.end())) is not None]


def _phrase_cuts(text: str) -> list[tuple[str, str]]:
    """Cuts before a conjunction or preposition (tiers 1-2), after a word that does not bind to what follows."""
    words = list(_WORD.finditer(text))
    cuts = []
    for before, after in itertools.pairwise(words):
        if phrase_word(before.group()) in BINDING or opening_tier(phrase_word(after.group())) > 2:
            continue
        if (parts := _parts(text, after.start())) is not None:
            cuts.append(parts)
    return cuts


def split_at_clause(text: str, max_phonemes: int) -> tuple[str, str] | None:
    """The sentence cut in two, its first part at most ``max_phonemes`` long where a good boundary allows (see
    module doc); None when no boundary leaves both parts at least ``MIN_PART_WORDS`` words."""
    clauses = _clause_cuts(text)
    for cuts in (clauses, _phrase_cuts(text)):
        fitting = [cut for cut in cuts if estimate_phonemes(cut[0]) <= max_phonemes]
        if fitting:
            return fitting[-1]
    return clauses[0] if clauses else None
