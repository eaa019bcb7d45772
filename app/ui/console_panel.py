"""The console column's widgets: saved phrases, the announcement queue, and the history with replay."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QGridLayout,
    QHBoxLayout,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from voicedesk.app.console.announcement import Item
from voicedesk.app.history import HistoryEntry
from voicedesk.app.phrases import Phrase
from voicedesk.app.ui.forms import CardColumn, PageSwitcher
from voicedesk.app.ui.widgets import Card, Segmented, hint, label

STATE_MARKS = {"done": "", "cut": "✂ ", "failed": "⚠ "}


class PhrasesCard(Card):
    speak_requested = Signal(int)
    edit_requested = Signal(int)
    delete_requested = Signal(int)
    add_requested = Signal()

    def __init__(self) -> None:
        super().__init__("Phrases")
        self.grid = QGridLayout()
        self.grid.setSpacing(6)
        self.body.addLayout(self.grid)
        self.empty = hint("No saved phrases yet.")
        self.body.addWidget(self.empty)
        self.add = QPushButton("+ New phrase")
        self.add.setObjectName("Link")
        self.add.setToolTip("Save a text to speak with one click or a shortcut (right-click a phrase to edit it)")
        self.add.clicked.connect(self.add_requested)
        self.body.addWidget(self.add, 0, Qt.AlignmentFlag.AlignLeft)
        self.buttons: list[QPushButton] = []

    def set_phrases(self, phrases: list[Phrase]) -> None:
        for button in self.buttons:
            self.grid.removeWidget(button)
            button.deleteLater()
        self.buttons = []
        for number, phrase in enumerate(phrases):
            button = QPushButton(phrase.title)
            button.setObjectName("Phrase")
            button.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
            button.setMinimumWidth(60)
            details = [phrase.text]
            if phrase.voice:
                details.append(f"Voice: {phrase.voice}")
            if phrase.output:
                details.append(f"Output: {phrase.output}")
            if phrase.shortcut:
                details.append(f"Shortcut: {phrase.shortcut}")
            button.setToolTip("\n".join(details))
            button.clicked.connect(lambda _checked=False, n=number: self.speak_requested.emit(n))
            button.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
            button.customContextMenuRequested.connect(lambda _pos, n=number, b=button: self._menu(n, b))
            self.grid.addWidget(button, number // 2, number % 2)
            self.buttons.append(button)
        self.empty.setVisible(not phrases)

    def _menu(self, number: int, button: QPushButton) -> None:
        menu = QMenu(button)
        menu.addAction("Speak", lambda: self.speak_requested.emit(number))
        menu.addAction("Edit…", lambda: self.edit_requested.emit(number))
        menu.addAction("Delete", lambda: self.delete_requested.emit(number))
        menu.popup(button.mapToGlobal(button.rect().bottomLeft()))


class QueueCard(Card):
    now_requested = Signal(str)
    remove_requested = Signal(str)
    clear_requested = Signal()
    resume_requested = Signal()
    replay_requested = Signal(int)
    history_clear_requested = Signal()

    def __init__(self) -> None:
        super().__init__("Announcements")
        self.switch = Segmented([("queue", "Queue"), ("history", "History")])
        self.switch.set_value("queue")
        self.switch.changed.connect(self._page)
        self.body.addWidget(self.switch)
        self.pages = PageSwitcher()
        self.now = label("", "Message", wrap=True)
        self.queue = _list("Queue")
        self.speak_now = QPushButton("Speak now")
        self.speak_now.setToolTip("Stop what is being said and say this next")
        self.remove = QPushButton("Remove")
        self.clear = QPushButton("Clear")
        self.resume = QPushButton("▶ Resume")
        self.resume.setObjectName("Primary")
        row = QHBoxLayout()
        row.setSpacing(6)
        for button in (self.speak_now, self.remove, self.clear):
            button.setObjectName("Small")
            row.addWidget(button)
        self.pages.addWidget(_column(self.now, self.resume, self.queue, row))
        self.history = _list("History")
        self.replay = QPushButton("↻ Replay")
        self.replay.setToolTip("Say it again, in the voice it was said in")
        self.history_clear = QPushButton("Clear history")
        history_row = QHBoxLayout()
        self.replay.setObjectName("Small")
        self.history_clear.setObjectName("Small")
        history_row.addWidget(self.replay)
        history_row.addWidget(self.history_clear)
        self.pages.addWidget(_column(self.history, history_row))
        self.body.addWidget(self.pages, 1)
        self.speak_now.clicked.connect(lambda: self._selected(self.queue, self.now_requested))
        self.remove.clicked.connect(lambda: self._selected(self.queue, self.remove_requested))
        self.clear.clicked.connect(self.clear_requested)
        self.resume.clicked.connect(self.resume_requested)
        self.replay.clicked.connect(lambda: self._selected(self.history, self.replay_requested))
        self.history.itemDoubleClicked.connect(
            lambda item: self.replay_requested.emit(item.data(Qt.ItemDataRole.UserRole))
        )
        self.history_clear.clicked.connect(self.history_clear_requested)
        self.show_queue(None, [], False)
        self.show_history([])

    def _page(self, key: str) -> None:
        self.pages.setCurrentIndex(0 if key == "queue" else 1)

    def _selected(self, widget: QListWidget, signal: Signal) -> None:
        item = widget.currentItem() or (widget.item(0) if widget.count() else None)
        if item is not None:
            signal.emit(item.data(Qt.ItemDataRole.UserRole))

    def show_queue(
        self,
        current: Item | None,
        waiting: list[Item],
        paused: bool,
        speaking: bool = True,
        held: frozenset = frozenset(),
    ) -> None:
        """``speaking``: the current one is heard (else it waits for the engine); ``held``: ids quiet hours hold."""
        if current is not None:
            origin = f" ({current.origin})" if current.origin else ""
            what = "Speaking:" if speaking else "Starting:"
            self.now.setText(f"<b>{what}</b> {html.escape(current.label)}{html.escape(origin)}")
        elif paused and waiting:
            self.now.setText("<b>Paused</b> after a stop. Resume to carry on, or clear the queue.")
        else:
            self.now.setText("Nothing is being said. New announcements wait their turn here.")
        self.resume.setVisible(paused and bool(waiting))
        self.queue.clear()
        for number, item in enumerate(waiting, start=1):
            origin = f"  · {item.origin}" if item.origin else ""
            origin += "  · waits for the end of quiet hours" if item.id in held else ""
            entry = QListWidgetItem(f"{number}. {item.label}{origin}")
            entry.setData(Qt.ItemDataRole.UserRole, item.id)
            entry.setToolTip(item.text)
            self.queue.addItem(entry)
        for button in (self.speak_now, self.remove, self.clear):
            button.setEnabled(bool(waiting))
        waiting_text = f"Queue ({len(waiting)})" if waiting else "Queue"
        self.switch.buttons["queue"].setText(waiting_text)

    def show_history(self, entries: list[HistoryEntry]) -> None:
        self.history.clear()
        for number in range(len(entries) - 1, -1, -1):
            entry = entries[number]
            text = " ".join(entry.text.split())
            short = text if len(text) <= 70 else text[:69] + "…"
            origin = f"  · {entry.origin}" if entry.origin else ""  # Typed, Phrase · …, MQTT · urgent, HTTP · low
            row = QListWidgetItem(f"{entry.when}  {STATE_MARKS.get(entry.state, '')}{short}{origin}")
            row.setData(Qt.ItemDataRole.UserRole, number)
            detail = [text, f"{entry.kind} · {entry.engine} · {entry.voice or 'default voice'}{origin}"]
            if entry.prompt:
                detail.insert(0, f"Asked: {entry.prompt}")
            row.setToolTip("\n".join(detail))
            self.history.addItem(row)
        self.replay.setEnabled(bool(entries))
        self.history_clear.setEnabled(bool(entries))


def _list(name: str) -> QListWidget:
    widget = QListWidget()
    widget.setObjectName(name)
    widget.setMinimumHeight(60)
    widget.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    widget.setTextElideMode(Qt.TextElideMode.ElideRight)
    return widget


def _column(*items: QWidget | QHBoxLayout) -> QWidget:
    """A page of ``items`` stacked; the list among them takes the height."""
    page = QWidget()
    layout = QVBoxLayout(page)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(6)
    for item in items:
        if isinstance(item, QHBoxLayout):
            layout.addLayout(item)
        else:
            layout.addWidget(item, 1 if isinstance(item, QListWidget) else 0)
    return page


class ConsolePanel(CardColumn):
    def __init__(self) -> None:
        super().__init__(230, (8, 14, 14, 14))
        self.phrases = PhrasesCard()
        self.announcements = QueueCard()
        self.column.addWidget(self.phrases)
        self.column.addWidget(self.announcements, 1)
