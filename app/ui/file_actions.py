"""The File menu: the last reply as WAV, the latency timelines as JSON or CSV (no device or engine needed), quit."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMainWindow

from voicedesk.app.ui.latency_panel import EXPORTS
from voicedesk.engine.errors import UsageError, VoicedeskError


class FileActions:
    def __init__(
        self,
        window: QMainWindow,
        export: Callable[[str, Path], None],
        reply_wav: Callable[[], bytes | None],
        notice: Callable[[str, str], None],
    ) -> None:
        self._window = window
        self._export = export  # writes one of the latency panel's EXPORTS
        self._reply_wav = reply_wav
        self._notice = notice
        menu = window.menuBar().addMenu("&File")
        menu.addAction("Save last reply as WAV…", self.save_wav_dialog)
        menu.addAction("Export latency (JSON)…", lambda: self.export_dialog("json"))
        menu.addAction("Export latency (CSV)…", lambda: self.export_dialog("csv"))
        menu.addAction("Export the session's latency (JSON)…", lambda: self.export_dialog("session-json"))
        menu.addSeparator()
        quit_action = QAction("Quit", window)  # the window's: its shortcut works wherever the window has the focus
        quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        quit_action.triggered.connect(window.close)
        menu.addAction(quit_action)

    def export_timeline(self, kind: str, path: Path) -> None:
        self._export(kind, path)
        self._notice(f"Latency saved to {path}", "info")

    def save_wav(self, path: Path) -> None:
        wav = self._reply_wav()
        if wav is None:
            raise UsageError("There is no reply audio to save yet.")
        path.write_bytes(wav)
        self._notice(f"Saved the last reply to {path}", "info")

    def export_dialog(self, kind: str) -> None:
        _text, pattern, suggested = EXPORTS[kind]
        name, _ = QFileDialog.getSaveFileName(self._window, "Export latency", suggested, pattern)
        if name:
            self._guarded(lambda: self.export_timeline(kind, Path(name)))

    def save_wav_dialog(self) -> None:
        name, _ = QFileDialog.getSaveFileName(self._window, "Save reply", "voicedesk-reply.wav", "WAV audio (*.wav)")
        if name:
            self._guarded(lambda: self.save_wav(Path(name)))

    def _guarded(self, action: Callable[[], None]) -> None:
        try:
            action()
        except (VoicedeskError, OSError) as exc:
            self._notice(getattr(exc, "message", None) or str(exc), "error")
