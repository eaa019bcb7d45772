"""Editing a saved phrase: name, text, voice, output and shortcut (checked by ``app.phrases`` before saving).

A shortcut another phrase (or Stop) already has is refused with its owner's name. While the shortcut field records
keys, ``recording`` says so, so the window can suspend the global shortcuts (or pressing the combination to record
it would also fire it)."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Signal
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QKeySequenceEdit,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from voicedesk.app.phrases import Phrase, phrase_problem, shortcut_owner
from voicedesk.app.ui.forms import form_layout, picker
from voicedesk.app.ui.widgets import field_label


class PhraseDialog(QDialog):
    recording = Signal(bool)
    """True while the shortcut field has the focus (it takes the next key combination), then False."""

    def __init__(
        self,
        phrase: Phrase,
        voices: list[tuple[str, str]],
        outputs: list[tuple[str, str]],
        parent: QWidget | None = None,
        taken: dict[str, str] | None = None,
    ) -> None:
        """``voices`` / ``outputs``: (value, title) pairs offered besides "as chosen in the window"; ``taken``:
        the shortcuts others have (shortcut → who: "the phrase “Dinner”")."""
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
        self.problem = QLabel()
        self.problem.setObjectName("ErrorText")
        self.problem.setWordWrap(True)
        self.problem.hide()
        layout.addWidget(self.problem)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._save)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.buttons = buttons

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
