"""misaki's English G2P as ``KPipeline`` builds it, without importing kokoro or torch, so ``voicedesk phonemes`` starts
in about a second."""

from __future__ import annotations

import contextlib
import importlib.metadata
import logging
import os
import pickle
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from voicedesk.engine.paths import data_dir

log = logging.getLogger(__name__)
MAX_PHONEMES = 510


@contextlib.contextmanager
def _without_torch() -> Iterator[None]:
    if "torch" in sys.modules:  # already paid for
        yield
        return
    import catalogue  # spaCy's registries read entry points from this snapshot

    saved = catalogue.AVAILABLE_ENTRY_POINTS
    catalogue.AVAILABLE_ENTRY_POINTS = importlib.metadata.EntryPoints(
        e for e in saved if not e.value.startswith("spacy_curated_transformers")
    )
    sys.modules["torch"] = None  # type: ignore[assignment]  # an ImportError for thinc's optional import
    try:
        yield
    finally:
        if sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]
        catalogue.AVAILABLE_ENTRY_POINTS = saved


def _lexicon_cache(british: bool) -> Path:
    version = importlib.metadata.version("misaki")
    return data_dir() / "g2p-cache" / f"misaki-{version}-{'gb' if british else 'us'}-lexicon.pickle"


def _lexicon(en: Any, british: bool) -> Any:
    path = _lexicon_cache(british)
    with contextlib.suppress(OSError, pickle.UnpicklingError, EOFError, AttributeError):
        return pickle.loads(path.read_bytes())
    lexicon = en.Lexicon(british)
    with contextlib.suppress(OSError):  # a read-only data folder: slower next time, never wrong
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.part")
        partial.write_bytes(pickle.dumps(lexicon, protocol=pickle.HIGHEST_PROTOCOL))
        partial.replace(path)
    return lexicon


class _Fallback:
    """KPipeline's espeak-ng fallback for words misaki does not know, built when the first one comes (0.2 s)."""

    def __init__(self, british: bool) -> None:
        self.british = british
        self._espeak: Any = None

    def __call__(self, token: Any) -> tuple[str | None, int | None]:
        if self._espeak is None:
            from misaki import espeak

            try:
                self._espeak = espeak.EspeakFallback(british=self.british)
            except Exception as exc:  # as KPipeline: unknown words are then skipped
                log.warning("EspeakFallback not enabled (%s): out-of-dictionary words will be skipped", exc)
                self._espeak = lambda _token: (None, None)
            logging.getLogger("phonemizer").setLevel(logging.ERROR)  # "words count mismatch" per unknown word
        return self._espeak(token)


class EnglishG2P:
    """What ``prepare_pieces`` asks of an English ``KPipeline``: ``g2p(text)`` and ``en_tokenize(tokens)``."""

    def __init__(self, british: bool) -> None:
        with _without_torch():
            from misaki import en

            cached = _lexicon(en, british)
            build = en.Lexicon
            en.Lexicon = lambda _british: cached  # G2P builds its lexicon; this one is the same, unpickled
            try:
                self.g2p = en.G2P(trf=False, british=british, fallback=_Fallback(british), unk="")
            finally:
                en.Lexicon = build

    @staticmethod
    def en_tokenize(tokens: list[Any]) -> Iterator[tuple[str, str, list[Any]]]:
        """``KPipeline.en_tokenize``: one chunk when all fits the model, else kokoro's own cut."""
        for token in tokens:
            token.phonemes = token.phonemes or ""
        if sum(len(t.phonemes) + bool(t.whitespace) for t in tokens) > MAX_PHONEMES:
            from kokoro import KPipeline

            yield from KPipeline.en_tokenize(None, tokens)  # type: ignore[arg-type]
            return
        if not tokens:
            return
        text = "".join(t.text + (" " if t.whitespace else "") for t in tokens).strip()
        phonemes = "".join(t.phonemes + (" " if t.whitespace else "") for t in tokens).strip()
        yield text, phonemes, tokens
