"""A session's text options on the wire (the ``config`` fields) and how a change applies to its ``TextSettings``; a
session's lexicon entries merge over the server's and replace its own earlier ones."""

from __future__ import annotations

from dataclasses import dataclass, replace

from voicedesk.engine.text.frontend.lexicon import EMPTY_LEXICON, Lexicon
from voicedesk.engine.text.frontend.settings import DEFAULT_TEXT_SETTINGS, TextSettings

TEXT_OPTIONS = ("markup", "urls", "code", "emoji")
"""The ``TextSettings`` choices a ``config`` may set by name (the lexicon travels as ``lexicon``)."""


@dataclass(frozen=True, slots=True)
class TextChange:
    """What one ``config`` says about the text options; None leaves a field as it is."""

    lexicon: Lexicon | None = None
    markup: str | None = None
    urls: str | None = None
    code: str | None = None
    emoji: str | None = None

    @property
    def empty(self) -> bool:
        return all(getattr(self, name) is None for name in ("lexicon", *TEXT_OPTIONS))

    def applied_to(self, settings: TextSettings, base: Lexicon = EMPTY_LEXICON) -> TextSettings:
        """``settings`` with this change, a new lexicon merged over ``base``; raises ``TextSettingsError``."""
        changed = {name: value for name in TEXT_OPTIONS if (value := getattr(self, name)) is not None}
        if self.lexicon is not None:
            changed["lexicon"] = self.lexicon.merged_over(base) if base else self.lexicon
        return replace(settings, **changed) if changed else settings


def change_of(settings: TextSettings, base: Lexicon = EMPTY_LEXICON) -> TextChange:
    """What a client sends so a remote session reads text as ``settings`` do (defaults and ``base`` entries left
    out)."""
    own = tuple(entry for entry in settings.lexicon.entries if entry not in base.entries)
    return TextChange(
        lexicon=Lexicon(own) if own else None,
        **{
            name: value
            for name in TEXT_OPTIONS
            if (value := getattr(settings, name)) != getattr(DEFAULT_TEXT_SETTINGS, name)
        },
    )
