"""Kokoro's G2P per language, one ``KPipeline`` each built on first use, shared by the synthesizer and the preparation
workers (which have no model: only G2P and 510-phoneme chunking are asked of it)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from voicedesk.engine.errors import VoicedeskError, VoiceError
from voicedesk.engine.model import languages, weights
from voicedesk.engine.model.language_g2p import LanguageG2P
from voicedesk.engine.model.voices import DEFAULT_LANGUAGE, LANGUAGES

if TYPE_CHECKING:
    from kokoro import KModel, KPipeline

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
