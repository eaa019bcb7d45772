"""The chunker's per-language rules: how many phonemes a character of the voice's language turns into.

The English estimate reads a CJK character as "Chinese letter" (16 phonemes), so a 510-phoneme chunk of Japanese
would hold about 30 characters and be cut where nobody pauses. With the voice's language known, its characters cost
what its own G2P makes of them, with a margin (measured phonemes per character: Japanese 2.9, weight 5; Mandarin
4.1, 6; Hindi 1.4, 2.5; tests/engine/text/test_language_rules.py checks against the real G2P); everything else keeps
its English cost."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from functools import lru_cache

from voicedesk.engine.text.chunker_phonemes import CJK, OTHER, QUARTERS, char_kind, is_cjk

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
