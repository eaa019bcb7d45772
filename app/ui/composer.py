"""The composer: what to say (or ask), the mode, and the Speak / Stop buttons."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QSizePolicy, QVBoxLayout

from voicedesk.app.ui.widgets import Segmented

PLACEHOLDERS = {
    "speak": "Type text to read aloud…  (Ctrl+Enter to speak)",
    "agent": "Ask the agent something…  (Ctrl+Enter to send)",
}


class Composer(QFrame):
    speak_requested = Signal()
    speak_now_requested = Signal()
    """Interrupt what is being said and say this at once (the explicit choice; Speak queues)."""
    stop_requested = Signal()
    mode_changed = Signal(str)
    new_conversation_requested = Signal()

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
        # Long agent descriptions must not set the window's minimum width: cut, with the whole in the tooltip.
        self.source_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.new_conversation = QPushButton("New conversation")
        self.new_conversation.setObjectName("Link")
        self.new_conversation.setToolTip("The agent forgets what was said so far")
        self.new_conversation.clicked.connect(self.new_conversation_requested)
        top.addWidget(self.mode)
        top.addWidget(self.source_label, 1)
        top.addWidget(self.new_conversation)
        outer.addLayout(top)
        row = QHBoxLayout()
        row.setSpacing(10)
        self.editor = QPlainTextEdit()
        self.editor.setObjectName("Composer")
        self.editor.setMinimumHeight(54)
        self.editor.setMaximumHeight(100)
        self.editor.setTabChangesFocus(True)
        buttons = QVBoxLayout()
        buttons.setSpacing(6)
        self.speak = QPushButton("Speak  ▶")
        self.speak.setObjectName("Primary")
        self.speak.setCursor(Qt.CursorShape.PointingHandCursor)
        self.speak.setMinimumWidth(120)
        self.speak_now = QPushButton("Speak now")
        self.speak_now.setToolTip("Stop what is being said and say this at once (Ctrl+Shift+Enter)")
        self.speak_now.setEnabled(False)
        self.stop = QPushButton("■  Stop   Esc")
        self.stop.setObjectName("Danger")
        self.stop.setEnabled(False)
        self.stop.setToolTip("Stop speaking (Esc)")
        buttons.addWidget(self.speak)
        buttons.addWidget(self.speak_now)
        buttons.addWidget(self.stop)
        row.addWidget(self.editor, 1)
        row.addLayout(buttons)
        outer.addLayout(row)
        self.speak.clicked.connect(self.speak_requested)
        self.speak_now.clicked.connect(self.speak_now_requested)
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
                if event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
                    self.speak_now_requested.emit()
                else:
                    self.speak_requested.emit()
                return True
        return super().eventFilter(watched, event)

    def _mode_clicked(self, mode: str) -> None:
        self.set_mode(mode)
        self.mode_changed.emit(mode)

    def set_mode(self, mode: str) -> None:
        self.mode.set_value(mode)
        self.editor.setPlaceholderText(PLACEHOLDERS[mode])
        self._mode = mode
        self.new_conversation.setVisible(mode == "agent")
        self._label_buttons()

    def set_source_label(self, text: str) -> None:
        self.source_label.setText(text)
        self.source_label.setToolTip(text)

    def set_speaking(self, speaking: bool) -> None:
        self._speaking = speaking
        self.stop.setEnabled(speaking)
        self.speak_now.setEnabled(speaking)
        self._label_buttons()

    def _label_buttons(self) -> None:
        """While something is being said, Speak queues (and says so); Speak now interrupts."""
        verb = "Speak" if getattr(self, "_mode", "speak") == "speak" else "Ask"
        self.speak.setText(f"{'Queue' if getattr(self, '_speaking', False) else verb}  ▶")
        self.speak.setToolTip(
            "Wait for what is being said, then say this (Ctrl+Enter)"
            if getattr(self, "_speaking", False)
            else f"{verb} now (Ctrl+Enter)"
        )

    def text(self) -> str:
        return self.editor.toPlainText()
