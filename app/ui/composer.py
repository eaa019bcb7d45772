"""The composer: what to say (or ask), the mode, and the Speak / Stop buttons."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout

from app.ui.widgets import Segmented

PLACEHOLDERS = {
    "speak": "Type text to read aloud…  (Ctrl+Enter to speak)",
    "agent": "Ask the agent something…  (Ctrl+Enter to send)",
}


class Composer(QFrame):
    speak_requested = Signal()
    stop_requested = Signal()
    mode_changed = Signal(str)

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("ComposerBar")
        outer = QVBoxLayout(self)
        outer.setContentsMargins(20, 12, 20, 14)
        outer.setSpacing(8)
        top = QHBoxLayout()
        self.mode = Segmented([("speak", "Speak text"), ("agent", "Ask agent")])
        self.mode.setFixedWidth(230)
        self.mode.changed.connect(self._mode_clicked)
        self.source_label = QLabel()
        self.source_label.setObjectName("Hint")
        top.addWidget(self.mode)
        top.addWidget(self.source_label, 1)
        outer.addLayout(top)
        row = QHBoxLayout()
        row.setSpacing(10)
        self.editor = QPlainTextEdit()
        self.editor.setObjectName("Composer")
        self.editor.setFixedHeight(74)
        self.editor.setTabChangesFocus(True)
        buttons = QVBoxLayout()
        buttons.setSpacing(6)
        self.speak = QPushButton("Speak  ▶")
        self.speak.setObjectName("Primary")
        self.speak.setCursor(Qt.CursorShape.PointingHandCursor)
        self.speak.setMinimumWidth(120)
        self.stop = QPushButton("■  Stop   Esc")
        self.stop.setObjectName("Danger")
        self.stop.setEnabled(False)
        self.stop.setToolTip("Stop speaking (Esc)")
        buttons.addWidget(self.speak)
        buttons.addWidget(self.stop)
        row.addWidget(self.editor, 1)
        row.addLayout(buttons)
        outer.addLayout(row)
        self.speak.clicked.connect(self.speak_requested)
        self.stop.clicked.connect(self.stop_requested)
        self.editor.installEventFilter(self)
        self.set_mode("speak")

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Esc and Ctrl+Enter work while typing, whether or not the window has the focus of the desktop."""
        if watched is self.editor and event.type() == QEvent.Type.KeyPress:
            key = event.key()
            if key == Qt.Key.Key_Escape:
                self.stop_requested.emit()
                return True
            if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and event.modifiers() & Qt.KeyboardModifier.ControlModifier:
                self.speak_requested.emit()
                return True
        return super().eventFilter(watched, event)

    def _mode_clicked(self, mode: str) -> None:
        self.set_mode(mode)
        self.mode_changed.emit(mode)

    def set_mode(self, mode: str) -> None:
        self.mode.set_value(mode)
        self.editor.setPlaceholderText(PLACEHOLDERS[mode])
        self.speak.setText("Speak  ▶" if mode == "speak" else "Ask  ▶")

    def set_source_label(self, text: str) -> None:
        self.source_label.setText(text)

    def set_speaking(self, speaking: bool) -> None:
        self.stop.setEnabled(speaking)

    def text(self) -> str:
        return self.editor.toPlainText()
