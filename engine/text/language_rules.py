"""The chunker's per-language rules: how many phonemes a character of the voice's language turns into.

``engine.text.chunker_phonemes`` estimates phonemes as misaki's *English* G2P makes them, which reads a CJK character as
"Chinese letter" (16 phonemes) and spells Devanagari (5 per character). A Japanese, Mandarin or Hindi voice has its
own G2P, which says far less per character, so with the English weights a 510-phoneme chunk of Japanese holds about
30 characters (measured: 96 characters of Japanese prose are 279 phonemes through misaki's Japanese G2P, estimated
1,506), and a long sentence is cut where nobody pauses. With the voice's language known, those characters cost
what that language's G2P makes of them, with a margin, and everything else (digits, Latin words, symbols) keeps its
English cost, which stays conservative for these G2Ps (Latin runs inside Japanese and Mandarin are read by the
English G2P, see ``engine.model.language_g2p``).

Measured on prose through the real G2P (tests/engine/text/test_language_rules.py checks every chunk of long texts
against the 510 limit with it):

| language | phonemes per character | weight here |
|---|---|---|
| Japanese (kana, kanji) | 2.9 | 5 |
| Mandarin (hanzi) | 4.1 | 6 |
| Hindi (Devanagari letters and signs) | 1.4 | 2.5 |

Spanish, French, Italian and Portuguese read Latin letters at 0.9-1.15 phonemes each, under the English estimate's
1.25: their chunks keep the English weights. Sentence and clause ends of every language (``¿ ¡``, French
spaced ``? ! : ;`` and ``« »``, Hindi ``।``, full-width ``。！？，、``) are in ``engine.text.chunker_rules`` for all
voices alike, since a text's punctuation does not depend on who reads it.
"""

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
    """Whether the early first fragment of unspaced text may be cut between ``before`` and ``after``.

    Japanese: where a particle or inflection (hiragana) meets the next content word (kanji, katakana):
    "友達と|一緒に", never "一|緒". Mandarin: after a particle or function character ("去了|车站"). Other
    languages: anywhere between CJK characters, as before."""
    if language == "j":
        return _hiragana(before) and not _hiragana(after)
    if language == "z":
        return before in _ZH_PHRASE_ENDS
    return True
