"""The G2P a non-English ``KPipeline`` runs, wrapped for voicedesk: spoken forms, mixed scripts, the vocabulary.

``KPipeline`` calls ``g2p(text)`` once per chunk for languages other than English and feeds the phoneme string
to the model. Around misaki's G2P for the voice's language this adds:

1. **Spoken forms** (``engine.text.frontend.spoken_languages``): numbers written the language's way, and the
   symbols its G2P skips, become words of that language.
2. **Mixed text.** misaki's Japanese and Mandarin G2P pass Latin letters through untouched ("Google" comes out
   as the letters ``Google``, which the model mostly drops), so inside a Japanese or Mandarin text each run of
   Latin-script words (a name, a brand, an English phrase) is read by the English G2P and spoken with English
   phonemes in the voice of the sentence. espeak-ng's languages (es/fr/hi/it/pt) read Latin words themselves, with
   that language's rules ("Google" in Spanish is "ɣˈuɣəl"): it is what their G2P allows, and they are left to it.
3. **Only what the model can say.** Characters outside the model's vocabulary (espeak-ng's ``¿``/``¡``, Hindi's
   ``।``) would be dropped by the model without a word; mapped or dropped here, the phonemes voicedesk reports are
   the phonemes spoken. A sentence end the model cannot see (``।``) becomes the ``.`` it can.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from typing import Any

from voicedesk.engine.text.frontend.spoken_languages import spoken_form

G2P = Callable[[str], tuple[str, Any]]

LATIN_RUN_LANGUAGES = frozenset("jz")
"""Languages whose G2P cannot read Latin script, so English reads it."""

_FULL_WIDTH_LATIN = {c: c - 0xFEE0 for c in (*range(0xFF21, 0xFF3B), *range(0xFF41, 0xFF5B))}
# A run of Latin-script words: letters with inner apostrophes, hyphens, ampersands, digits or dots ("Wi-Fi",
# "AT&T", "iPhone 15", "U.S."), joined by spaces. A final period stays outside (it may end the sentence).
_LATIN_WORD = r"[A-Za-z](?:[A-Za-z0-9'’&\-]|\.(?=[A-Za-z]))*"
_LATIN_RUN = re.compile(rf"{_LATIN_WORD}(?:[ \t]+{_LATIN_WORD})*")
_PUNCT_FOR_MODEL = str.maketrans({"।": ".", "॥": ".", "¿": None, "¡": None})


class LanguageG2P:
    """Callable like misaki's G2P: ``text → (phonemes, None)``."""

    def __init__(
        self,
        language: str,
        native: G2P,
        vocab: Collection[str] | None,
        english: Callable[[], G2P | None] | None = None,
    ) -> None:
        self.language = language
        self.native = native
        self.vocab = frozenset(vocab) if vocab is not None else None
        """None: the model's vocabulary is not known here (no config.json yet); nothing is dropped."""
        self._english = english

    def __call__(self, text: str) -> tuple[str, None]:
        text = spoken_form(text, self.language).translate(_PUNCT_FOR_MODEL)
        english = self._english() if self._english and self.language in LATIN_RUN_LANGUAGES else None
        if english is None:
            phonemes = self._read(self.native, text)
        else:
            phonemes = " ".join(p for p in self._mixed(text.translate(_FULL_WIDTH_LATIN), english) if p)
        return self.keep_speakable(phonemes), None

    def _mixed(self, text: str, english: G2P) -> list[str]:
        pieces: list[str] = []
        at = 0
        for match in _LATIN_RUN.finditer(text):
            pieces.append(self._read(self.native, text[at : match.start()]))
            pieces.append(self._read(english, match.group()))
            at = match.end()
        pieces.append(self._read(self.native, text[at:]))
        return pieces

    @staticmethod
    def _read(g2p: G2P, text: str) -> str:
        if not text.strip():
            return ""
        phonemes, _tokens = g2p(text)
        return (phonemes or "").strip()

    def keep_speakable(self, phonemes: str) -> str:
        kept = phonemes if self.vocab is None else "".join(c for c in phonemes if c in self.vocab or c == " ")
        return re.sub(r" {2,}", " ", kept).strip()
