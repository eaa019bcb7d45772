"""``lexicon.json``, in the form ``voicedesk serve --lexicon`` takes; a damaged file is kept aside."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from voicedesk.app.json_file import keep_aside, write_json
from voicedesk.engine.text.frontend.lexicon import EMPTY_LEXICON, Lexicon, LexiconError, load_lexicon_file


@dataclass(frozen=True, slots=True)
class LoadedLexicon:
    lexicon: Lexicon
    message: str | None = None  # a damaged file set aside


def load_app_lexicon(path: Path) -> LoadedLexicon:
    if not path.exists():
        return LoadedLexicon(EMPTY_LEXICON)
    try:
        return LoadedLexicon(load_lexicon_file(path))
    except LexiconError as exc:
        kept = keep_aside(path)
        where = f" The file is kept as {kept.name}." if kept else ""
        return LoadedLexicon(EMPTY_LEXICON, f"The pronunciations could not be used: {exc.message}{where}")


def save_app_lexicon(lexicon: Lexicon, path: Path) -> None:
    write_json(path, lexicon.to_json(), indent=2)
