"""The tray icon: speaking / idle and the engine's health at a glance, and a menu to stop or speak a phrase."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QAction, QColor, QIcon, QPainter, QPainterPath, QPen, QPixmap
from PySide6.QtWidgets import QMenu, QSystemTrayIcon, QWidget

from voicedesk.app.engines import EngineState
from voicedesk.app.ui.theme import PALETTE

HEALTH_COLORS = {"ok": PALETTE.success, "busy": PALETTE.warning, "down": PALETTE.error}


@dataclass(frozen=True, slots=True)
class TrayLook:
    activity: str  # 'speaking' or 'idle'
    health: str  # a key of HEALTH_COLORS
    tooltip: str


def tray_look(speaking: bool, queued: int, paused: bool, engine: str, state: EngineState, title: str) -> TrayLook:
    if state is EngineState.READY:
        health = "ok"
    elif state in (EngineState.LOADING, EngineState.DOWNLOADING, EngineState.IDLE):
        health = "busy"
    else:
        health = "down"
    lines = [f"voicedesk — {'speaking' if speaking else 'idle'}"]
    if queued:
        lines.append(f"{queued} waiting" + (" (paused)" if paused else ""))
    lines.append(f"{engine}: {title}")
    return TrayLook("speaking" if speaking else "idle", health, "\n".join(lines))


def tray_pixmap(look: TrayLook, size: int = 64) -> QPixmap:
    pixmap = QPixmap(size, size)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    path = QPainterPath()
    path.addRoundedRect(2, 2, size - 4, size - 4, size * 0.22, size * 0.22)
    painter.fillPath(path, QColor(PALETTE.accent if look.activity == "speaking" else PALETTE.text_secondary))
    painter.setPen(QPen(QColor("white"), size * 0.07, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap))
    middle = size / 2
    heights = (0.10, 0.22, 0.32, 0.2, 0.1) if look.activity == "speaking" else (0.03,) * 5
    for number, height in enumerate(heights):
        x = size * (0.24 + number * 0.13)
        painter.drawLine(round(x), round(middle - size * height), round(x), round(middle + size * height))
    painter.setPen(QPen(QColor("white"), size * 0.05))
    painter.setBrush(QColor(HEALTH_COLORS[look.health]))
    dot = size * 0.34
    painter.drawEllipse(round(size - dot - 1), round(size - dot - 1), round(dot), round(dot))
    painter.end()
    return pixmap


class TrayIcon(QObject):
    show_requested = Signal()
    stop_requested = Signal()
    quit_requested = Signal()
    phrase_requested = Signal(int)

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.available = QSystemTrayIcon.isSystemTrayAvailable()
        self.look: TrayLook | None = None
        self.icon = QSystemTrayIcon(self) if self.available else None
        # Parented, so Qt deletes them on its thread, not Python's collector on whichever thread it runs.
        self.menu = QMenu(parent)
        self.phrases_menu = QMenu("Speak a phrase", self.menu)
        show = QAction("Show voicedesk", self.menu)
        show.triggered.connect(self.show_requested)
        stop = QAction("Stop speaking", self.menu)
        stop.triggered.connect(self.stop_requested)
        quit_action = QAction("Quit", self.menu)
        quit_action.triggered.connect(self.quit_requested)
        self.menu.addAction(show)
        self.menu.addAction(stop)
        self.menu.addMenu(self.phrases_menu)
        self.menu.addSeparator()
        self.menu.addAction(quit_action)
        if self.icon is not None:
            self.icon.setContextMenu(self.menu)
            self.icon.activated.connect(self._activated)

    @property
    def status(self) -> str:
        if self.icon is None:
            return "No tray icon: this desktop has no system tray."
        return "Tray icon on: it shows speaking / idle and the engine's health."

    def set_enabled(self, enabled: bool) -> None:
        if self.icon is not None:
            self.icon.setVisible(enabled)

    def show_look(self, look: TrayLook) -> None:
        if look == self.look:
            return
        self.look = look
        if self.icon is not None:
            self.icon.setIcon(QIcon(tray_pixmap(look)))
            self.icon.setToolTip(look.tooltip)

    def set_phrases(self, titles: list[str], speak: Callable[[int], None] | None = None) -> None:
        self.phrases_menu.clear()
        for number, title in enumerate(titles):
            action = self.phrases_menu.addAction(title)
            action.triggered.connect(lambda _checked=False, n=number: self.phrase_requested.emit(n))
        self.phrases_menu.setEnabled(bool(titles))

    def _activated(self, reason) -> None:
        if reason == QSystemTrayIcon.ActivationReason.Trigger:
            self.show_requested.emit()
