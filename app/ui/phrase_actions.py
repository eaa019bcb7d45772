"""Saved phrases: said through the announcement queue, edited in ``PhraseDialog`` (a shortcut someone else has is
refused with its owner's name), deleted."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Signal
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QKeySequenceEdit,
    QLineEdit,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from voicedesk.app.console.announcement import Item, Request, Source
from voicedesk.app.phrases import Phrase, phrase_problem, shortcut_owner
from voicedesk.app.ui.forms import form_layout, picker, save_row
from voicedesk.app.ui.sidebar import voice_title
from voicedesk.app.ui.widgets import field_label

if TYPE_CHECKING:
    from voicedesk.app.settings import AppSettings
    from voicedesk.app.ui.output_actions import OutputActions


class PhraseDialog(QDialog):
    recording = Signal(bool)  # the shortcut field has the focus: global shortcuts rest, or recording one fires it

    def __init__(
        self,
        phrase: Phrase,
        voices: list[tuple[str, str]],
        outputs: list[tuple[str, str]],
        parent: QWidget | None = None,
        taken: dict[str, str] | None = None,
    ) -> None:
        """``voices`` / ``outputs``: (value, title) pairs; ``taken``: shortcut → who has it ("the phrase “Dinner”")."""
        super().__init__(parent)
        self._taken = dict(taken or {})
        self.setWindowTitle("Saved phrase")
        self.setMinimumWidth(420)
        layout = QVBoxLayout(self)
        form = form_layout()
        self.name = QLineEdit(phrase.name)
        self.name.setPlaceholderText("e.g. Dinner")
        self.text = QPlainTextEdit(phrase.text)
        self.text.setFixedHeight(70)
        self.voice = picker(12)
        self.voice.addItem("The voice chosen in the window", "")
        for value, title in voices:
            self.voice.addItem(title, value)
        self._select(self.voice, phrase.voice)
        self.output = picker(12)
        self.output.addItem("The output chosen in the window", "")
        for value, title in outputs:
            self.output.addItem(title, value)
        self._select(self.output, phrase.output)
        self.shortcut = QKeySequenceEdit(QKeySequence(phrase.shortcut))
        self.shortcut.setMaximumSequenceLength(1)
        self.shortcut.setClearButtonEnabled(True)
        self.shortcut.installEventFilter(self)
        self.finished.connect(lambda _result: self.recording.emit(False))
        form.addRow(field_label("Name"), self.name)
        form.addRow(field_label("Text"), self.text)
        form.addRow(field_label("Voice"), self.voice)
        form.addRow(field_label("Output"), self.output)
        form.addRow(field_label("Shortcut"), self.shortcut)
        layout.addLayout(form)
        self.problem, self.buttons = save_row(layout, self._save, self.reject)

    @staticmethod
    def _select(combo, value: str) -> None:
        index = combo.findData(value)
        if index < 0 and value:
            combo.addItem(value, value)
            index = combo.count() - 1
        combo.setCurrentIndex(max(index, 0))

    def phrase(self) -> Phrase:
        return Phrase(
            name=self.name.text().strip(),
            text=self.text.toPlainText().strip(),
            voice=self.voice.currentData() or "",
            output=self.output.currentData() or "",
            shortcut=self.shortcut.keySequence().toString(QKeySequence.SequenceFormat.PortableText),
        )

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.shortcut and event.type() in (QEvent.Type.FocusIn, QEvent.Type.FocusOut):
            self.recording.emit(event.type() == QEvent.Type.FocusIn)
        return False

    def _save(self) -> None:
        phrase = self.phrase()
        problem = phrase_problem(phrase)
        owner = shortcut_owner(phrase.shortcut, self._taken) if problem is None else None
        if owner is not None:
            problem = f"{phrase.shortcut} is already the shortcut of {owner}; pick another, or clear it there first"
            self.shortcut.setFocus()
        if problem is not None:
            self.problem.setText(f"This phrase cannot be saved: {problem}.")
            self.problem.show()
            return
        self.accept()


@dataclass(eq=False)
class PhraseActions:
    """``draft``: the composer's text, where a new phrase starts; ``changed``: the phrases are shown, bound, saved."""

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
        """``number`` None: a new phrase."""
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
