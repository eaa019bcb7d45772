"""Splitting a long sentence into shorter calls while other sessions wait for the model (pure): a model call cannot be
pre-empted. A sentence with no clause or phrase boundary is never split, nor is anything when nobody waits."""

from __future__ import annotations

import itertools
import re

from voicedesk.engine.text.chunking.first_cut import BINDING, opening_tier, phrase_word
from voicedesk.engine.text.chunking.phoneme_estimate import estimate_phonemes
from voicedesk.engine.text.chunking.protected_spans import SpanGuard

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


def _outside_spans(text: str, cuts: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The cuts outside what the front-end reads whole (an override, a link)."""
    if "[" not in text:
        return cuts
    guard = SpanGuard()
    blocked = []
    for i, c in enumerate(text):
        guard.add(i, c)
        blocked.append(guard.inside(i))
    kept = []
    for head, tail in cuts:
        at = text.index(tail, len(head))
        if not blocked[len(head)] and not blocked[at]:
            kept.append((head, tail))
    return kept


def split_at_clause(text: str, max_phonemes: int) -> tuple[str, str] | None:
    """The sentence cut in two, its first part at most ``max_phonemes`` long where a boundary allows; None when no
    boundary leaves both parts ``MIN_PART_WORDS`` words or one falls in an override or link."""
    clauses = _outside_spans(text, _clause_cuts(text))
    for cuts in (clauses, _outside_spans(text, _phrase_cuts(text))):
        fitting = [cut for cut in cuts if estimate_phonemes(cut[0]) <= max_phonemes]
        if fitting:
            return fitting[-1]
    return clauses[0] if clauses else None
