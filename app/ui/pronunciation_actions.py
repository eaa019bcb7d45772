"""Tools ▸ Pronunciations…: the app's lexicon, used by every session the window opens, edited in a table an operator
tries out (Play uses the entries before they are saved) and saved to ``lexicon.json``."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QLineEdit,
    QMainWindow,
    QMenu,
    QMenuBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from voicedesk.app.choices import whole
from voicedesk.app.conversation import TurnKind
from voicedesk.app.notices import Topic
from voicedesk.app.settings import lexicon_path, load_app_lexicon, save_app_lexicon
from voicedesk.app.ui.forms import save_row
from voicedesk.app.ui.widgets import label
from voicedesk.engine.text.frontend.lexicon import Lexicon, LexiconEntry, LexiconError, load_lexicon_file

if TYPE_CHECKING:
    from voicedesk.app.controller import SpeechController
    from voicedesk.engine.events import SessionConfig

PHONEMES, RESPELLING = "phonemes", "respelling"
Player = Callable[[str, Lexicon], None]  # speaks a text with a lexicon through the window's engine


class PronunciationsDialog(QDialog):
    def __init__(self, lexicon: Lexicon, play: Player, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Pronunciations")
        self.setMinimumWidth(560)
        self._play = play
        self._entries: list[LexiconEntry] = list(lexicon.entries)
        layout = QVBoxLayout(self)
        intro = "How the voice says a word: Kokoro phonemes (see `voicedesk phonemes WORD`) or a respelling it reads."
        layout.addWidget(label(intro, wrap=True))
        self.table = QTableWidget(0, 3)
        self.table.setHorizontalHeaderLabels(["Word", "Says", "Match case"])
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        layout.addWidget(self.table)

        row = QHBoxLayout()
        self.word = QLineEdit()
        self.word.setPlaceholderText("Word, e.g. Siobhan")
        self.kind = QComboBox()
        self.kind.addItem("Phonemes", PHONEMES)
        self.kind.addItem("Respelling", RESPELLING)
        self.says = QLineEdit()
        self.says.setPlaceholderText("ʃɪvˈɔn  or  shiv awn")
        self.case_sensitive = QCheckBox("Match case")
        self.add_button = QPushButton("Add")
        self.add_button.clicked.connect(self.add_entry)
        for widget in (self.word, self.kind, self.says, self.case_sensitive, self.add_button):
            row.addWidget(widget)
        layout.addLayout(row)

        actions = QHBoxLayout()
        self.play_button = QPushButton("Play")
        self.play_button.setToolTip("Speak the word in the box (or the selected entry) with these pronunciations")
        self.play_button.clicked.connect(self.play_word)
        self.remove_button = QPushButton("Remove")
        self.remove_button.clicked.connect(self.remove_selected)
        self.import_button = QPushButton("Import…")
        self.import_button.clicked.connect(self._choose_import)
        self.export_button = QPushButton("Export…")
        self.export_button.clicked.connect(self._choose_export)
        for button in (self.play_button, self.remove_button, self.import_button, self.export_button):
            actions.addWidget(button)
        actions.addStretch(1)
        layout.addLayout(actions)

        self.problem, self.buttons = save_row(layout, self.accept, self.reject)
        self._refresh()

    def lexicon(self) -> Lexicon:
        return Lexicon(tuple(self._entries))

    def add_entry(self) -> bool:
        """Adds (or replaces, for the same word) the entry in the boxes; False, saying why, if refused."""
        word, says = self.word.text().strip(), self.says.text().strip()
        kind = self.kind.currentData()
        entry = LexiconEntry(
            word,
            phonemes=says if kind == PHONEMES else None,
            respelling=says if kind == RESPELLING else None,
            case_sensitive=self.case_sensitive.isChecked(),
        )
        kept = [e for e in self._entries if (e.case_sensitive, e.key) != (entry.case_sensitive, entry.key)]
        try:
            Lexicon((*kept, entry))
        except LexiconError as exc:
            self._show_problem(f"Not added: {exc.reason}.")
            return False
        self._entries = [*kept, entry]
        self.says.clear()
        self._refresh()
        return True

    def remove_selected(self) -> None:
        rows = sorted({index.row() for index in self.table.selectedIndexes()}, reverse=True)
        for row in rows:
            del self._entries[row]
        self._refresh()

    def play_word(self) -> None:
        text = self.word.text().strip()
        if not text:
            rows = sorted({index.row() for index in self.table.selectedIndexes()})
            text = self._entries[rows[0]].word if rows else ""
        if not text:
            self._show_problem("Type a word (or select an entry) to hear it.")
            return
        self._play(text, self.lexicon())

    def import_file(self, path: Path) -> bool:
        """A file's entry replaces one here for the same word."""
        try:
            imported = load_lexicon_file(path)
        except LexiconError as exc:
            self._show_problem(f"Nothing imported: {exc.message}")
            return False
        self._entries = list(imported.merged_over(self.lexicon()).entries)
        self._refresh()
        return True

    def export_file(self, path: Path) -> None:
        path.write_text(json.dumps(self.lexicon().to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

    def _choose_import(self) -> None:
        name, _ = QFileDialog.getOpenFileName(self, "Import pronunciations", "", "Lexicon (*.json)")
        if name:
            self.import_file(Path(name))

    def _choose_export(self) -> None:
        name, _ = QFileDialog.getSaveFileName(self, "Export pronunciations", "lexicon.json", "Lexicon (*.json)")
        if name:
            try:
                self.export_file(Path(name))
            except OSError as exc:
                self._show_problem(f"Could not write {name}: {exc.strerror or exc}")

    def _refresh(self) -> None:
        self.problem.hide()
        self.table.setRowCount(len(self._entries))
        for row, entry in enumerate(self._entries):
            says = f"/{entry.phonemes}/" if entry.phonemes is not None else f"“{entry.respelling}”"
            for column, text in enumerate((entry.word, says, "yes" if entry.case_sensitive else "")):
                self.table.setItem(row, column, QTableWidgetItem(text))
        self.remove_button.setEnabled(bool(self._entries))
        self.export_button.setEnabled(bool(self._entries))

    def _show_problem(self, text: str) -> None:
        self.problem.setText(text)
        self.problem.show()


class PronunciationActions:
    def __init__(
        self,
        parent: QMainWindow,
        settings_path: Path,
        controller: SpeechController,
        notice: Callable[..., None],
        spawn: Callable[..., object],
    ) -> None:
        """``parent``: its menu goes in the parent's Tools menu, its dialog over it."""
        self._parent, self._controller, self._notice, self._spawn = parent, controller, notice, spawn
        self.path = lexicon_path(settings_path)
        loaded = load_app_lexicon(self.path)
        self.lexicon = loaded.lexicon
        if loaded.message:
            notice(loaded.message, "warning", Topic.SETTINGS)
        self.dialog: PronunciationsDialog | None = None
        self.action = QAction("Pronunciations…", parent)
        self.action.triggered.connect(self.open)
        _tools_menu(parent.menuBar()).addAction(self.action)

    def open(self) -> PronunciationsDialog:
        """Not modal, so a test or a person can keep using the window."""
        dialog = PronunciationsDialog(self.lexicon, self.play, self._parent)
        dialog.accepted.connect(lambda: self.save(dialog.lexicon()))
        self.dialog = dialog
        dialog.show()
        return dialog

    def play(self, text: str, lexicon: Lexicon) -> None:
        voice = _with(self._controller.voice, lexicon)
        self._spawn(self._controller.speak(TurnKind.PREVIEW, text, whole(text), voice=voice))

    def save(self, lexicon: Lexicon) -> None:
        try:
            save_app_lexicon(lexicon, self.path)
        except OSError as exc:
            self._notice(f"Could not save the pronunciations to {self.path}: {exc}", "error", Topic.SETTINGS)
            return
        self.lexicon = lexicon
        self._controller.voice = _with(self._controller.voice, lexicon)  # every turn from the next one on


def _with(voice: SessionConfig, lexicon: Lexicon) -> SessionConfig:
    return replace(voice, text=replace(voice.text, lexicon=lexicon))


def _tools_menu(bar: QMenuBar) -> QMenu:
    for action in bar.actions():
        if action.text() == "&Tools" and action.menu() is not None:
            return action.menu()  # type: ignore[return-value]
    return bar.addMenu("&Tools")
