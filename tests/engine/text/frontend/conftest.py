"""The real front-end (NeMo's compiled grammars) and the real misaki G2P (``KPipeline`` without a model), built
once per test session."""

from __future__ import annotations

from pathlib import Path

import pytest

from voicedesk.engine.model.prepared import prepare_pieces
from voicedesk.engine.text.frontend import FrontEnd, load_front_end
from voicedesk.engine.text.frontend.settings import DEFAULT_TEXT_SETTINGS, TextSettings


@pytest.fixture(scope="session")
def front_end(text_grammars: Path) -> FrontEnd:
    loaded = load_front_end(text_grammars)
    assert not loaded.notes, loaded.notes  # NeMo is really in use
    return loaded


class Speaker:
    """Text → the phoneme string the model would receive (front-end, then misaki, then Kokoro's chunking)."""

    def __init__(self, front_end: FrontEnd) -> None:
        self.front_end = front_end
        self._pipelines: dict[str, object] = {}

    def pipeline(self, language: str) -> object:
        if language not in self._pipelines:
            from kokoro import KPipeline

            from voicedesk.engine.model import kokoro_synth  # noqa: F401 - kokoro's known warnings, quiet

            self._pipelines[language] = KPipeline(lang_code=language, repo_id="hexgrad/Kokoro-82M", model=False)
        return self._pipelines[language]

    def phonemes(self, text: str, language: str = "a", settings: TextSettings = DEFAULT_TEXT_SETTINGS) -> str:
        spoken = self.front_end.to_spoken(text, language, settings)
        return " ".join(p.phonemes for p in prepare_pieces(self.pipeline(language), spoken, language))


@pytest.fixture(scope="session")
def speaker(front_end: FrontEnd) -> Speaker:
    return Speaker(front_end)
