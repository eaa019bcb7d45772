"""Tools ▸ Pronunciations… on the main window: the app's lexicon, loaded at start, used by every session the
window opens (``controller.voice.text``), edited in ``PronunciationsDialog`` and saved to ``lexicon.json``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMainWindow, QMenu, QMenuBar

from voicedesk.app.choices import whole
from voicedesk.app.conversation import TurnKind
from voicedesk.app.lexicon_store import load_app_lexicon, save_app_lexicon
from voicedesk.app.notices import Topic
from voicedesk.app.settings import lexicon_path
from voicedesk.app.ui.pronunciations_dialog import PronunciationsDialog
from voicedesk.engine.text.frontend.lexicon import Lexicon

if TYPE_CHECKING:
    from voicedesk.app.controller import SpeechController
    from voicedesk.engine.events import SessionConfig


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
        """Shows the dialog (not modal, so a test or a person can keep using the window)."""
        dialog = PronunciationsDialog(self.lexicon, self.play, self._parent)
        dialog.accepted.connect(lambda: self.save(dialog.lexicon()))
        self.dialog = dialog
        dialog.show()
        return dialog

    def play(self, text: str, lexicon: Lexicon) -> None:
        """Speaks ``text`` through the current engine with ``lexicon`` (the dialog's entries, saved or not)."""
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
