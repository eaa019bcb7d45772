"""Saved phrases: said through the announcement queue, added and edited in ``PhraseDialog``, deleted."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from voicedesk.app.console.announcement import Item, Request, Source
from voicedesk.app.phrases import Phrase
from voicedesk.app.ui.phrase_dialog import PhraseDialog
from voicedesk.app.ui.sidebar import voice_title

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget

    from voicedesk.app.settings import AppSettings
    from voicedesk.app.ui.output_actions import OutputActions


@dataclass(eq=False)
class PhraseActions:
    """``parent``: the dialog's; ``submit``: the announcement queue's; ``draft``: the composer's text (a new phrase
    starts from it); ``suspend_shortcuts``: the global ones rest while the dialog records one; ``changed``: after the
    phrases change (shown, bound, saved)."""

    parent: QWidget
    settings: AppSettings
    outputs: OutputActions
    submit: Callable[[Request, bool], Item | None]
    draft: Callable[[], str]
    voice_names: Callable[[], list[str]]
    suspend_shortcuts: Callable[[bool], None]
    changed: Callable[[], None]

    def speak(self, number: int, interrupt: bool = False) -> Item | None:
        phrases = self.settings.phrases
        if not 0 <= number < len(phrases):
            return None
        phrase = phrases[number]
        origin = f"Phrase · {phrase.title}"
        request = Request(phrase.text, voice=phrase.voice, source=Source.WINDOW, output=phrase.output, origin=origin)
        return self.submit(request, interrupt)

    def edit(self, number: int | None) -> PhraseDialog:
        """Opens the editor (``number`` None: a new phrase, from the composer's text); saves on Save."""
        phrases = self.settings.phrases
        phrase = phrases[number] if number is not None else Phrase(text=self.draft().strip())
        voices = [(v, voice_title(v)) for v in self.voice_names()]
        outputs = [(key, title) for key, title, _detail in self.outputs.choices]
        taken = {p.shortcut: f"the phrase “{p.title}”" for n, p in enumerate(phrases) if n != number}
        taken[self.settings.desktop.stop_shortcut] = "Stop"
        dialog = PhraseDialog(phrase, voices, outputs, self.parent, taken)
        dialog.recording.connect(self.suspend_shortcuts)

        def saved() -> None:
            if number is None:
                phrases.append(dialog.phrase())
            else:
                phrases[number] = dialog.phrase()
            self.changed()

        dialog.accepted.connect(saved)
        dialog.open()
        return dialog

    def delete(self, number: int) -> None:
        phrases = self.settings.phrases
        if 0 <= number < len(phrases):
            del phrases[number]
            self.changed()
