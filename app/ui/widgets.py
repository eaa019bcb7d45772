"""Small building blocks shared by the window: cards, a segmented switch, a status pill, a message banner."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QButtonGroup, QFrame, QHBoxLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from voicedesk.app.ui.theme import PALETTE, STATE_COLORS


class Card(QFrame):
    """A titled white panel with a vertical layout (``body``)."""

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("Card")
        self.body = QVBoxLayout(self)
        self.body.setContentsMargins(14, 12, 14, 14)
        self.body.setSpacing(8)
        self.body.addWidget(label(title.upper(), "CardTitle"))


def label(text: str = "", name: str = "", wrap: bool = False) -> QLabel:
    widget = QLabel(text)
    widget.setObjectName(name)
    widget.setWordWrap(wrap)
    return widget


def field_label(text: str) -> QLabel:
    return label(text, "FieldLabel")


def hint(text: str) -> QLabel:
    return label(text, "Hint", wrap=True)


class Segmented(QFrame):
    """A row of mutually exclusive buttons (engine kind, composer mode); emits the chosen key."""

    changed = Signal(str)

    def __init__(self, options: Sequence[tuple[str, str]], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("Segmented")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(3, 3, 3, 3)
        layout.setSpacing(2)
        self._group = QButtonGroup(self)
        self._group.setExclusive(True)
        self.buttons: dict[str, QPushButton] = {}
        for key, text in options:
            button = QPushButton(text)
            button.setCheckable(True)
            button.setCursor(Qt.CursorShape.PointingHandCursor)
            button.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
            button.clicked.connect(lambda _checked=False, k=key: self._clicked(k))
            # The checked button is drawn bold: room for the bold text, so it is never clipped ("WebSocke").
            bold = QFont(button.font())
            bold.setWeight(QFont.Weight.DemiBold)
            button.setMinimumWidth(QFontMetrics(bold).horizontalAdvance(text) + 18)
            self._group.addButton(button)
            layout.addWidget(button)
            self.buttons[key] = button

    def value(self) -> str:
        return next((k for k, b in self.buttons.items() if b.isChecked()), "")

    def set_value(self, key: str) -> None:
        if key in self.buttons:
            self.buttons[key].setChecked(True)

    def _clicked(self, key: str) -> None:
        self.changed.emit(key)


class StatusDot(QWidget):
    """A small filled circle in the state's colour (painted, so it is crisp at any scale)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFixedSize(10, 10)
        self._color = QColor(PALETTE.text_muted)

    def set_state(self, state: str) -> None:
        self._color = QColor(STATE_COLORS.get(state, PALETTE.text_muted))
        self.update()

    def paintEvent(self, _event) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(self._color)
        painter.drawEllipse(1, 1, 8, 8)


class StatusPill(QFrame):
    """● Title · detail — the live state of an engine (``stacked``: the detail on its own line, wrapped)."""

    def __init__(self, parent: QWidget | None = None, stacked: bool = False) -> None:
        super().__init__(parent)
        self.dot = StatusDot()
        self.title = QLabel()
        self.title.setStyleSheet("font-weight: 600;")
        self.detail = label("", "Message")
        if stacked:
            grid = QVBoxLayout(self)
            grid.setContentsMargins(0, 0, 0, 0)
            grid.setSpacing(2)
            top = QHBoxLayout()
            top.setSpacing(6)
            top.addWidget(self.dot)
            top.addWidget(self.title, 1)
            grid.addLayout(top)
            self.detail.setWordWrap(True)
            self.detail.setContentsMargins(16, 0, 0, 0)
            grid.addWidget(self.detail)
        else:
            layout = QHBoxLayout(self)
            layout.setContentsMargins(0, 0, 0, 0)
            layout.setSpacing(6)
            layout.addWidget(self.dot)
            layout.addWidget(self.title)
            layout.addWidget(self.detail, 1)

    def show_state(self, state: str, title: str, detail: str = "") -> None:
        self.dot.set_state(state)
        self.title.setText(title)
        self.detail.setText(detail)
        self.setToolTip(f"{title} · {detail}" if detail else title)


class Banner(QFrame):
    """A dismissible message across the top of the conversation, with an optional action button."""

    LEVELS: ClassVar[dict[str, tuple[str, str]]] = {
        "error": (PALETTE.error_soft, PALETTE.error),
        "warning": (PALETTE.warning_soft, PALETTE.warning),
        "info": (PALETTE.info_soft, PALETTE.info),
    }

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("Banner")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(14, 10, 10, 10)
        layout.setSpacing(10)
        self.icon = QLabel()
        self.icon.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.text = QLabel()
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.action = QPushButton()
        self.action.setObjectName("Primary")
        self.close_button = QPushButton("Dismiss")
        self.close_button.setObjectName("Link")
        self.close_button.clicked.connect(self.hide)
        layout.addWidget(self.icon)
        layout.addWidget(self.text, 1)
        layout.addWidget(self.action, 0, Qt.AlignmentFlag.AlignVCenter)
        layout.addWidget(self.close_button, 0, Qt.AlignmentFlag.AlignVCenter)
        self._callback: Callable[[], None] | None = None
        self.action.clicked.connect(self._act)
        self.hide()

    def show_message(
        self, text: str, level: str = "error", action: str | None = None, callback: Callable[[], None] | None = None
    ) -> None:
        soft, strong = self.LEVELS.get(level, self.LEVELS["info"])
        self.setStyleSheet(
            f"QFrame#Banner {{ background: {soft}; border: 1px solid {strong}40; border-radius: 10px; }}"
            f"QFrame#Banner QLabel {{ color: {PALETTE.text}; }}"
        )
        self.icon.setText(f"<span style='color:{strong}; font-size:13pt'>{'⚠' if level != 'info' else 'ℹ'}</span>")
        self.text.setText(text)
        self.action.setVisible(action is not None)
        self.action.setText(action or "")
        self._callback = callback
        self.show()

    def _act(self) -> None:
        if self._callback is not None:
            self._callback()


class BannerStack(QWidget):
    """Several banners at once, one per topic ("settings", "audio"…), each dismissible on its own."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(8)
        self.banners: dict[str, Banner] = {}

    def show_message(
        self,
        topic: str,
        text: str,
        level: str = "error",
        action: str | None = None,
        callback: Callable[[], None] | None = None,
    ) -> Banner:
        banner = self.banners.get(topic)
        if banner is None:
            banner = self.banners[topic] = Banner()
            self._layout.addWidget(banner)
        banner.show_message(text, level, action, callback)
        return banner

    def dismiss(self, topic: str) -> None:
        if topic in self.banners:
            self.banners[topic].hide()

    def visible_texts(self) -> list[str]:
        return [b.text.text() for b in self.banners.values() if b.isVisible()]


class AppMark(QWidget):
    """The voicedesk mark: a rounded square with a small waveform."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFixedSize(30, 30)

    def paintEvent(self, _event) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        path = QPainterPath()
        path.addRoundedRect(0, 0, 30, 30, 8, 8)
        painter.fillPath(path, QColor(PALETTE.accent))
        pen = QPen(QColor("white"), 2.4, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap)
        painter.setPen(pen)
        for x, half in ((8, 3), (12, 7), (16, 10), (20, 6), (24, 3)):
            painter.drawLine(x - 1, 15 - half, x - 1, 15 + half)


class AppHeader(QFrame):
    """The top bar: the mark, the name, and the selected engine's live status on the right."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("Header")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(18, 10, 20, 10)
        layout.setSpacing(10)
        layout.addWidget(AppMark())
        layout.addWidget(label("voicedesk", "AppName"))
        layout.addWidget(label("Streaming speech for voice agents · Kokoro-82M", "AppTagline"))
        layout.addStretch(1)
        self.engine = label("", "Hint")
        self.status = StatusPill()
        layout.addWidget(self.engine)
        layout.addWidget(self.status)
