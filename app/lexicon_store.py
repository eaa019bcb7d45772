"""The app's pronunciation lexicon on disk: ``lexicon.json`` beside the settings (``app.settings.lexicon_path``).

The file is the same JSON list ``voicedesk serve --lexicon`` and the protocol's ``lexicon`` take, so it can be
exported to a server or imported from one. Loading never fails: a missing file is an empty lexicon; a damaged one
is kept aside as ``lexicon.damaged-<time>.json`` and reported, so a correction is never silently lost. Writing is
atomic (temp file + rename).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from voicedesk.app.json_file import keep_aside, write_json
from voicedesk.engine.text.frontend.lexicon import EMPTY_LEXICON, Lexicon, LexiconError, load_lexicon_file


@dataclass(frozen=True, slots=True)
class LoadedLexicon:
    lexicon: Lexicon
    message: str | None = None
    """What the person should know (a damaged file set aside); None when all went well."""


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
