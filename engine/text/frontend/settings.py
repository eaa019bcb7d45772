"""The session's text options: how markup, URLs, code and emoji are read, and the operator's lexicon."""

from __future__ import annotations

from dataclasses import dataclass

from voicedesk.engine.errors import ErrorCode, VoicedeskError
from voicedesk.engine.text.frontend.lexicon import EMPTY_LEXICON, Lexicon

MARKUP_CHOICES = ("auto", "plain", "markdown", "ssml")
"""``auto``: text starting with ``<speak>`` is SSML, anything else markdown (plain text is valid markdown)."""
URL_CHOICES = ("speak", "skip")
CODE_CHOICES = ("skip", "read")
EMOJI_CHOICES = ("drop", "name")


class TextSettingsError(VoicedeskError, ValueError):
    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.BAD_MESSAGE, message)


@dataclass(frozen=True, slots=True)
class TextSettings:
    """Hashable and picklable (it goes to worker processes with the text)."""

    markup: str = "auto"
    urls: str = "speak"
    code: str = "skip"
    emoji: str = "drop"
    lexicon: Lexicon = EMPTY_LEXICON
    continues_line: bool = False
    """Set by the session, not the client: the text is a chunk cut from the middle of a line as written, so
    markdown reads its first line as text ("2025." after "March 15," is a year, not an empty list item)."""

    def __post_init__(self) -> None:
        for name, choices in (
            ("markup", MARKUP_CHOICES),
            ("urls", URL_CHOICES),
            ("code", CODE_CHOICES),
            ("emoji", EMOJI_CHOICES),
        ):
            value = getattr(self, name)
            if value not in choices:
                raise TextSettingsError(f"{name} must be one of {', '.join(choices)}; got {value!r}.")
        if not isinstance(self.lexicon, Lexicon):
            raise TextSettingsError(f"lexicon must be a Lexicon; got {type(self.lexicon).__name__}.")


DEFAULT_TEXT_SETTINGS = TextSettings()
