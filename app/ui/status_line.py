"""Draws ``NoticeBoard``'s message in one line, cut with "…", with a button showing recent messages in full."""

from __future__ import annotations

import html
import time

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QDialog, QHBoxLayout, QLabel, QPushButton, QTextBrowser, QVBoxLayout, QWidget

from voicedesk.app.notices import Notice, NoticeBoard, Topic
from voicedesk.app.ui.theme import PALETTE

COLORS = {"info": PALETTE.text_secondary, "warning": PALETTE.warning, "error": PALETTE.error}
MARKS = {"warning": "⚠ ", "error": "⚠ "}


class StatusLine(QWidget):
    def __init__(self, clock=time.time) -> None:
        super().__init__()
        self.board = NoticeBoard()
        self._clock = clock
        self._shown: Notice | None = None
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        self.label = QLabel()
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setMinimumWidth(80)
        self.more = QPushButton("Details")
        self.more.setObjectName("Link")
        self.more.setToolTip("Every recent message, in full")
        self.more.clicked.connect(self.show_log)
        self.close_button = QPushButton("✕")
        self.close_button.setObjectName("Link")
        self.close_button.setToolTip("Dismiss this message")
        self.close_button.clicked.connect(self.dismiss)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.more)
        layout.addWidget(self.close_button)
        self._timer = QTimer(self, singleShot=True)
        self._timer.timeout.connect(self.refresh)
        self.dialog: QDialog | None = None
        self.refresh()

    def post(self, text: str, level: str = "info", topic: Topic | str = Topic.GENERAL) -> None:
        self.board.post(text, level, topic, self._clock())
        self.refresh()

    def clear(self, *topics: Topic | str) -> None:
        self.board.clear(*topics)
        self.refresh()

    def dismiss(self) -> None:
        self.board.dismiss()
        self.refresh()

    @property
    def text(self) -> str:
        return self._shown.text if self._shown is not None else ""

    def refresh(self) -> None:
        now = self._clock()
        self._shown = self.board.current(now)
        self._draw()
        expiry = self.board.next_expiry(now)
        if expiry is not None:
            self._timer.start(max(int((expiry - now) * 1000) + 50, 50))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._draw()

    def _draw(self) -> None:
        notice = self._shown
        self.close_button.setVisible(notice is not None)
        self.more.setVisible(bool(self.board.log))
        if notice is None:
            self.label.setText("")
            self.label.setToolTip("")
            self.more.setText("Earlier messages")  # not "More…": nothing is shown to be more of
            return
        mark = MARKS.get(notice.level, "")
        room = max(self.label.width() - self.label.fontMetrics().horizontalAdvance(mark) - 8, 40)
        shown = self.label.fontMetrics().elidedText(notice.text, Qt.TextElideMode.ElideRight, room)
        color = COLORS.get(notice.level, PALETTE.text_secondary)
        self.label.setText(f"<span style='color:{color}'>{mark}{html.escape(shown)}</span>")
        self.label.setToolTip(notice.text)
        self.more.setText("Details" if shown == notice.text else "More…")

    def show_log(self) -> None:
        if self.dialog is None:
            self.dialog = QDialog(self.window())
            self.dialog.setWindowTitle("voicedesk — messages")
            self.dialog.resize(620, 320)
            layout = QVBoxLayout(self.dialog)
            self.dialog.browser = QTextBrowser()
            self.dialog.browser.setOpenLinks(False)
            layout.addWidget(self.dialog.browser)
            close = QPushButton("Close")
            close.clicked.connect(self.dialog.close)
            layout.addWidget(close, 0, Qt.AlignmentFlag.AlignRight)
        rows = []
        for notice in reversed(self.board.log):
            when = time.strftime("%H:%M:%S", time.localtime(notice.at))
            color = COLORS.get(notice.level, PALETTE.text_secondary)
            rows.append(
                f"<p><span style='color:{PALETTE.text_muted}'>{when}</span> "
                f"<span style='color:{color}'>{MARKS.get(notice.level, '')}{html.escape(notice.text)}</span></p>"
            )
        self.dialog.browser.setHtml("".join(rows) or "<p>No messages.</p>")
        self.dialog.show()
        self.dialog.raise_()
