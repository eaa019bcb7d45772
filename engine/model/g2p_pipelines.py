"""Kokoro's G2P per language, one ``KPipeline`` each built on first use, shared by the synthesizer and the preparation
workers (which have no model).

``LanguageG2P`` sends runs of another script to the G2P that reads it, leaves out a script none reads rather than
naming it, and keeps only characters in the model's vocabulary, so the phonemes reported are spoken."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from voicedesk.engine.errors import VoicedeskError, VoiceError
from voicedesk.engine.model import languages, weights
from voicedesk.engine.model.voices import DEFAULT_LANGUAGE, LANGUAGES

if TYPE_CHECKING:
    from kokoro import KModel, KPipeline
import re

from voicedesk.engine.text.frontend.spoken_languages import spoken_form
from voicedesk.engine.text.frontend.spoken_symbols import JAPANESE_NUMBER, japanese_reading

QUIET_LOGGERS = {"phonemizer": logging.ERROR, "jieba": logging.WARNING}
"""espeak-ng and jieba reset their log levels when they load, so they are quietened again after each build."""


class G2PPipelines:
    """``get(lang_code)`` → that language's pipeline. Thread-safe to ask; building one is done once."""

    def __init__(self, repo_id: str, model: KModel | bool, vocab: Collection[str] | None) -> None:
        self.repo_id = repo_id
        self._model = model
        self.vocab = frozenset(vocab) if vocab is not None else None
        """The model's phoneme vocabulary, other G2Ps' output is kept to (None: unknown, kept whole)."""
        self._lock = threading.Lock()
        self._pipelines: dict[str, KPipeline] = {}

    def get(self, lang_code: str) -> KPipeline:
        """A language not set up here is refused with the command that sets it up."""
        with self._lock:
            existing = self._pipelines.get(lang_code)
        if existing is not None:
            return existing
        if lang_code not in LANGUAGES:
            raise VoiceError(f"Unknown Kokoro language code {lang_code!r}; known: {', '.join(LANGUAGES)}.")
        if lang_code in "ab":
            weights.require_spacy_model()  # otherwise misaki would try spacy.cli.download (network)
        status = languages.language_status(lang_code)
        if not status.ready:
            # The command goes in the message: a client of a remote server sees what its operator has to run.
            raise VoiceError(f"{languages.not_ready_message(status)} Set it up with {status.fix}.")
        built = self._build(lang_code)
        with self._lock:
            return self._pipelines.setdefault(lang_code, built)

    def _build(self, lang_code: str) -> KPipeline:
        from kokoro import KPipeline

        try:
            built = KPipeline(lang_code=lang_code, repo_id=self.repo_id, model=self._model)
        except ImportError as exc:
            status = languages.language_status(lang_code)
            raise VoiceError(
                f"{LANGUAGES[lang_code]} voices need G2P packages that do not load here ({exc}).",
                f"Set them up with {status.fix}.",
            ) from exc
        built.g2p = LanguageG2P(lang_code, built.g2p, self.vocab, other=self.other_g2p)
        for name, level in QUIET_LOGGERS.items():
            logging.getLogger(name).setLevel(level)
        return built

    def other_g2p(self, lang_code: str) -> Callable[[str], tuple[str, Any]] | None:
        """Another language's G2P for a run of its script in this one's text (None if not set up here)."""
        try:
            return self.get(DEFAULT_LANGUAGE if lang_code == "a" else lang_code).g2p
        except VoicedeskError:
            return None


G2P = Callable[[str], tuple[str, Any]]
OtherG2P = Callable[[str], G2P | None]
"""A language code → that language's G2P, or None when it is not set up here."""

_FULL_WIDTH_LATIN = {c: c - 0xFEE0 for c in (*range(0xFF21, 0xFF3B), *range(0xFF41, 0xFF5B))}
_LATIN = r"A-Za-z\u00c0-\u024f"
# Latin-script words: letters with inner apostrophes, hyphens, ampersands, digits or dots ("Wi-Fi", "AT&T",
# "iPhone 15", "U.S.", "José"), joined by spaces. A final period stays outside (it may end the sentence).
_LATIN_WORD = rf"[{_LATIN}](?:[{_LATIN}0-9'’&\-]|\.(?=[{_LATIN}]))*"
_LATIN_RUN = rf"{_LATIN_WORD}(?:[ \t]+{_LATIN_WORD})*"
_KANA = "\u3040-\u30ff"
_CJK_RUN = rf"[{_KANA}\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff々〆ヶ]+"
RUNS = {
    "j": re.compile(rf"(?P<reading>{JAPANESE_NUMBER.pattern})|(?P<a>{_LATIN_RUN})"),
    "z": re.compile(rf"(?P<a>{_LATIN_RUN})"),
    **{code: re.compile(rf"(?P<cjk>{_CJK_RUN})") for code in "abefhip"},
}
"""Per voice language: the runs read by another reader (named by the group: a language code, Open JTalk's
``reading`` of a number, or ``cjk``: Japanese or Mandarin by the text's kana)."""
_PUNCT_FOR_MODEL = str.maketrans({"।": ".", "॥": ".", "¿": None, "¡": None})


class LanguageG2P:
    """Callable like misaki's G2P: ``text → (phonemes, None)`` (for English, misaki's own result)."""

    def __init__(
        self, language: str, native: G2P, vocab: Collection[str] | None, other: OtherG2P | None = None
    ) -> None:
        self.language = language
        self.native = native
        self.vocab = frozenset(vocab) if vocab is not None else None
        """None: the model's vocabulary is not known here (no config.json yet); nothing is dropped."""
        self._other = other or (lambda _code: None)

    def spoken(self, text: str) -> str:
        """What the G2Ps read for ``text`` (``voicedesk phonemes --explain`` shows it)."""
        if self.language in "ab":
            return text
        return spoken_form(text, self.language).translate(_PUNCT_FOR_MODEL).translate(_FULL_WIDTH_LATIN)

    def pieces(self, text: str) -> list[tuple[str, str]]:
        """``text`` (spoken) in runs, each with the name of its reader: ``native``, a language code, ``reading``."""
        runs = RUNS[self.language]
        kana = re.search(f"[{_KANA}]", text) is not None
        pieces, at = [], 0
        for match in runs.finditer(text):
            reader = match.lastgroup or "native"
            if reader == "cjk":
                reader = "j" if kana or self._other("z") is None else "z"
            pieces += [("native", text[at : match.start()]), (reader, match.group())]
            at = match.end()
        pieces.append(("native", text[at:]))
        return [(reader, piece) for reader, piece in pieces if piece.strip()]

    def __call__(self, text: str) -> tuple[str, Any]:
        spoken = self.spoken(text)
        if self.language in "ab":  # misaki's English keeps its tokens (word timings): runs go in as overrides
            return self.native(RUNS[self.language].sub(self._english_override, spoken))
        phonemes = " ".join(p for p in (self._read(reader, piece) for reader, piece in self.pieces(spoken)) if p)
        return self.keep_speakable(phonemes), None

    def _english_override(self, match: re.Match[str]) -> str:
        phonemes = self._read("j" if re.search(f"[{_KANA}]", match.group()) else "z", match.group())
        return f"[{match.group()}](/{phonemes}/)" if phonemes else ""

    def _read(self, reader: str, text: str) -> str:
        if reader == "reading":
            cutlet = getattr(self.native, "cutlet", None)
            if cutlet is not None:  # cutlet's own kana table, without MeCab's guess at the word (ハツカ: mint)
                from misaki.cutlet import Word

                hiragana = _hiragana(japanese_reading(text))
                return cutlet._romaji_word(Word(hiragana, hiragana, 6))
            text, reader = japanese_reading(text), "native"
        other = self._other(reader) if reader not in ("native", self.language) else self.native
        if other is None:
            other = self.native if reader == "a" else None  # no English: the G2P reads its letters as it can
        if other is None or not text.strip():
            return ""  # a script no G2P here reads: left out rather than named
        phonemes, _tokens = other(text)
        return self.keep_speakable(phonemes or "")

    def keep_speakable(self, phonemes: str) -> str:
        kept = phonemes if self.vocab is None else "".join(c for c in phonemes if c in self.vocab or c == " ")
        return re.sub(r" {2,}", " ", kept).strip()


def _hiragana(katakana: str) -> str:
    return "".join(chr(ord(c) - 0x60) if "\u30a1" <= c <= "\u30f6" else c for c in katakana)
