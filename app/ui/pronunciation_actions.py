"""Tools ▸ Pronunciations… on the main window: the app's lexicon, loaded at start, used by every session the
window opens (``controller.voice.text``), edited in ``PronunciationsDialog`` and saved to ``lexicon.json``."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QMenuBar

from voicedesk.app.choices import whole
from voicedesk.app.conversation import TurnKind
from voicedesk.app.lexicon_store import load_app_lexicon, save_app_lexicon
from voicedesk.app.notices import Topic
from voicedesk.app.settings import lexicon_path
from voicedesk.app.ui.pronunciations_dialog import PronunciationsDialog
from voicedesk.engine.text.frontend.lexicon import Lexicon


class MainWindow(Protocol):
    """What these actions use of ``app.ui.window.MainWindow`` (named here, not imported: no cycle)."""

    settings_path: Path
    controller: Any

    def menuBar(self) -> QMenuBar: ...
    def notice(self, text: str, level: str = ..., topic: Topic = ...) -> None: ...
    def spawn(self, coro: Awaitable[object]) -> object: ...
    def apply_lexicon(self, lexicon: Lexicon) -> None: ...


class PronunciationActions:
    def __init__(self, window: MainWindow) -> None:
        self._window = window
        self.path = lexicon_path(window.settings_path)
        loaded = load_app_lexicon(self.path)
        self.lexicon = loaded.lexicon
        if loaded.message:
            window.notice(loaded.message, "warning", Topic.SETTINGS)
        self.dialog: PronunciationsDialog | None = None
        self.action = QAction("Pronunciations…", window)  # type: ignore[call-overload]
        self.action.triggered.connect(self.open)
        _tools_menu(window).addAction(self.action)

    def open(self) -> PronunciationsDialog:
        """Shows the dialog (not modal, so a test or a person can keep using the window)."""
        dialog = PronunciationsDialog(self.lexicon, self.play, self._window)  # type: ignore[arg-type]
        dialog.accepted.connect(lambda: self.save(dialog.lexicon()))
        self.dialog = dialog
        dialog.show()
        return dialog

    def play(self, text: str, lexicon: Lexicon) -> None:
        """Speaks ``text`` through the current engine with ``lexicon`` (the dialog's entries, saved or not)."""
        controller = self._window.controller
        voice = replace(controller.voice, text=replace(controller.voice.text, lexicon=lexicon))
        self._window.spawn(controller.speak(TurnKind.PREVIEW, text, whole(text), voice=voice))

    def save(self, lexicon: Lexicon) -> None:
        try:
            save_app_lexicon(lexicon, self.path)
        except OSError as exc:
            self._window.notice(f"Could not save the pronunciations to {self.path}: {exc}", "error", Topic.SETTINGS)
            return
        self.lexicon = lexicon
        self._window.apply_lexicon(lexicon)


def _tools_menu(window: MainWindow) -> QMenu:
    for action in window.menuBar().actions():
        if action.text() == "&Tools" and action.menu() is not None:
            return action.menu()  # type: ignore[return-value]
    return window.menuBar().addMenu("&Tools")
