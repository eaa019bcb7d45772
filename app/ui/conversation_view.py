"""The conversation: one bubble per turn, the word being spoken highlighted, cuts and failovers marked.

The view follows the word being heard, not the bottom (in a long reply that is text not yet spoken), until the person
scrolls away; what the microphone hears shows live in a bubble of its own."""

from __future__ import annotations

import html

from PySide6.QtCore import QPoint, QRect, Qt, QTimer, Signal
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import (
    QAbstractSlider,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from voicedesk.app.controller import TURNS_KEPT
from voicedesk.app.conversation import Run, RunStyle, Turn, TurnKind, TurnState
from voicedesk.app.ui.theme import PALETTE

RUN_CSS = {
    RunStyle.SPOKEN: f"color:{PALETTE.text};",
    RunStyle.CURRENT: f"background-color:{PALETTE.highlight}; color:{PALETTE.accent_text};",
    RunStyle.UPCOMING: f"color:{PALETTE.text_muted};",
    RunStyle.PENDING: f"color:{PALETTE.text_muted}; font-style:italic;",
    RunStyle.UNHEARD: "color:#B4B9C4; text-decoration:line-through;",
}

STATE_BADGES = {
    TurnState.WAITING: ("Thinking…", PALETTE.warning),
    TurnState.SPEAKING: ("Speaking", PALETTE.accent),
    TurnState.DONE: ("", PALETTE.text_muted),
    TurnState.CUT: ("Stopped", PALETTE.warning),
    TurnState.FAILED: ("Failed", PALETTE.error),
}


FOLLOW_MARGIN = 48
VIEWS_KEPT = TURNS_KEPT
"""Bubbles shown: as many turns as the controller remembers (a retry finds its turn)."""
"""Pixels kept in sight below the line being heard."""


def runs_html(runs: list[Run]) -> str:
    parts = []
    for run in runs:
        text = html.escape(run.text).replace("\n", "<br>")
        parts.append(f"<span style='{RUN_CSS[run.style]}'>{text}</span>")
    return "".join(parts)


def anchor_offset(runs: list[Run]) -> int | None:
    """Character offset (in the shown text) of the word being heard, or None when no word is lit."""
    offset = 0
    for run in runs:
        if run.style is RunStyle.CURRENT:
            return offset
        offset += len(run.text)
    return None


def _chip(text: str, soft: str, strong: str) -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    label.setStyleSheet(f"background:{soft}; color:{strong}; border-radius:8px; padding:4px 10px; font-size:9pt;")
    return label


class TurnView(QWidget):
    """A turn: the question (agent turns), the spoken reply with live highlighting, and its marks."""

    def __init__(self, turn: Turn, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.turn = turn
        self._last_html = ""
        self._anchor: int | None = None
        self._layout_document: QTextDocument | None = None
        self._document_html = ""
        self._chips: list[QLabel] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(6)
        if turn.kind is TurnKind.AGENT:
            row = QHBoxLayout()
            row.addStretch(1)
            self.user_bubble = QFrame()
            self.user_bubble.setObjectName("UserBubble")
            user_layout = QVBoxLayout(self.user_bubble)
            user_layout.setContentsMargins(14, 9, 14, 9)
            question = QLabel(turn.prompt)
            question.setTextFormat(Qt.TextFormat.PlainText)
            question.setObjectName("UserText")
            question.setWordWrap(True)
            question.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            user_layout.addWidget(question)
            self.question = question
            row.addWidget(self.user_bubble)
            layout.addLayout(row)
        else:
            self.user_bubble = None
        row = QHBoxLayout()
        self.bubble = QFrame()
        self.bubble.setObjectName("Bubble")
        self.bubble.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        bubble_layout = QVBoxLayout(self.bubble)
        bubble_layout.setContentsMargins(16, 10, 16, 12)
        bubble_layout.setSpacing(6)
        self.meta = QLabel()
        self.meta.setObjectName("BubbleMeta")
        self.text = QLabel()
        self.text.setObjectName("BubbleText")
        self.text.setWordWrap(True)
        self.text.setTextFormat(Qt.TextFormat.RichText)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.chip_box = QVBoxLayout()
        self.chip_box.setSpacing(4)
        self.retry = QPushButton("↻ Ask again")
        self.retry.setObjectName("Link")
        self.retry.setToolTip("Ask the agent this question again")
        self.retry.hide()
        bubble_layout.addWidget(self.meta)
        bubble_layout.addWidget(self.text)
        bubble_layout.addLayout(self.chip_box)
        bubble_layout.addWidget(self.retry, 0, Qt.AlignmentFlag.AlignLeft)
        row.addWidget(self.bubble)
        row.addStretch(1)
        layout.addLayout(row)

    def set_max_width(self, width: int) -> None:
        self._max_width = width
        self.bubble.setMaximumWidth(width)
        if self.user_bubble is not None:
            self.user_bubble.setMaximumWidth(int(width * 0.85))
            self.user_bubble.setMinimumWidth(self._fit(self.question, self.turn.prompt, int(width * 0.85), 30))
        self._fit_bubble()

    def _fit(self, label: QLabel, text: str, limit: int, padding: int) -> int:
        """The width a bubble needs for ``text`` on one line per paragraph, up to ``limit``."""
        metrics = label.fontMetrics()
        widest = max((metrics.horizontalAdvance(line) for line in text.splitlines() or [""]), default=0)
        return min(widest + padding, limit)

    def _fit_bubble(self) -> None:
        width = getattr(self, "_max_width", 600)
        text = self.turn.text or "Waiting for the first words…"
        needed = max(self._fit(self.text, text, width, 36), 260)
        self.bubble.setMinimumWidth(min(needed, width))

    def refresh(self, position_s: float | None) -> None:
        turn = self.turn
        runs = turn.runs(position_s)
        self._anchor = anchor_offset(runs)
        body = runs_html(runs)
        if not body and turn.active:
            body = f"<span style='color:{PALETTE.text_muted}; font-style:italic'>Waiting for the first words…</span>"
        elif not body:
            body = f"<span style='color:{PALETTE.text_muted}; font-style:italic'>Nothing was said.</span>"
        if body != self._last_html:
            self.text.setText(body)
            self._last_html = body
        self.meta.setText(self._meta_html())
        self._refresh_chips()
        self.retry.setVisible(turn.kind is TurnKind.AGENT and turn.state is TurnState.FAILED)
        self._fit_bubble()

    def anchor_rect(self) -> QRect | None:
        """Where the word being heard is, in this view's coordinates (its whole line), or None."""
        if self._anchor is None or self.text.width() <= 0:
            return None
        # One document per bubble, owned by it: a QTextDocument freed by Python (possibly on another thread,
        # by the garbage collector) leaves its layout timers behind, and Qt later fires one at freed memory.
        document = self._layout_document
        if document is None:
            document = self._layout_document = QTextDocument(self)
            document.setDocumentMargin(0)
        document.setDefaultFont(self.text.font())
        if self._document_html != self._last_html:
            document.setHtml(self._last_html)
            self._document_html = self._last_html
        document.setTextWidth(self.text.contentsRect().width())
        block = document.findBlock(self._anchor)
        if not block.isValid():
            return None
        block_top = document.documentLayout().blockBoundingRect(block).top()  # lays the document out
        line = block.layout().lineForTextPosition(self._anchor - block.position())
        if not line.isValid():
            return None
        top = block_top + line.y()
        origin = self.text.mapTo(self, QPoint(0, 0))
        return QRect(origin.x(), origin.y() + round(top), self.text.width(), max(round(line.height()), 1))

    def _meta_html(self) -> str:
        turn = self.turn
        who = {TurnKind.SPEAK: "Read aloud", TurnKind.AGENT: "Agent reply", TurnKind.PREVIEW: "Voice preview"}
        engines = list(dict.fromkeys(s.engine for s in turn.sentences)) or [turn.engine]
        parts = [who[turn.kind], " → ".join(engines)]
        if turn.audio_s:
            parts.append(f"{turn.audio_s:.1f} s")
        meta = " · ".join(html.escape(p) for p in parts)
        badge, color = STATE_BADGES[turn.state]
        if badge:
            meta += f"&nbsp;&nbsp;<span style='color:{color}; font-weight:600'>● {badge}</span>"
        return meta

    def _refresh_chips(self) -> None:
        wanted: list[tuple[str, str, str]] = []
        turn = self.turn
        for note in turn.notes:
            wanted.append((f"⇄  {note}", PALETTE.info_soft, PALETTE.info))
        if turn.cut is not None:
            heard = f"heard up to “{turn.cut.quote}”" if turn.cut.quote else "before any word was heard"
            wanted.append((f"✂  Stopped — {heard}", PALETTE.warning_soft, PALETTE.warning))
        for sentence in turn.sentences:
            if sentence.error:
                wanted.append((f"⚠  Sentence {sentence.index + 1} skipped: {sentence.error}", *_error_colors()))
        if turn.error:
            wanted.append((f"⚠  {turn.error}", *_error_colors()))
        if [c.text() for c in self._chips] == [w[0] for w in wanted]:
            return
        for chip in self._chips:
            chip.deleteLater()
        self._chips = [_chip(*w) for w in wanted]
        for chip in self._chips:
            self.chip_box.addWidget(chip)


def _error_colors() -> tuple[str, str]:
    return PALETTE.error_soft, PALETTE.error


class ConversationView(QScrollArea):
    retry_requested = Signal(int)
    """A failed agent turn's "Ask again" (the turn's id)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.following = True
        """Keep the word being heard in sight (off once the person scrolls away from it)."""
        self.setMinimumHeight(120)
        # Not a Tab stop (the composer, the sidebar's and the console's controls are): the mouse wheel scrolls it,
        # and it follows the word being heard by itself.
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setObjectName("Conversation")
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        body = QWidget()
        body.setObjectName("ConversationBody")
        self._layout = QVBoxLayout(body)
        self._layout.setContentsMargins(24, 20, 24, 20)
        self._layout.setSpacing(16)
        self._empty = self._empty_state()
        self._layout.addWidget(self._empty)
        self._layout.addStretch(1)
        self.setWidget(body)
        self.views: dict[int, TurnView] = {}
        self.views_kept = VIEWS_KEPT
        self._active: TurnView | None = None
        self._follow_pending = False
        self._followed: tuple[object, ...] = ()
        self.verticalScrollBar().actionTriggered.connect(self._scrolled_by_hand)
        self.heard = QLabel()
        self.heard.setObjectName("UserText")
        self.heard.setWordWrap(True)
        self.heard.setTextFormat(Qt.TextFormat.PlainText)
        self.heard_final = False
        self._heard_row = QWidget()
        heard_row = QHBoxLayout(self._heard_row)
        heard_row.setContentsMargins(0, 0, 0, 0)
        heard_row.addStretch(1)
        bubble = QFrame()
        bubble.setObjectName("UserBubble")
        QVBoxLayout(bubble).addWidget(self.heard)
        heard_row.addWidget(bubble)
        self._heard_row.hide()
        self._layout.insertWidget(self._layout.count() - 1, self._heard_row)

    def show_heard(self, text: str, final: bool) -> None:
        """What the microphone hears: a partial transcript (italic) or the final one; empty text hides it."""
        self.heard.setText(text)
        self.heard.setStyleSheet("" if final else "font-style: italic;")
        self.heard_final = final
        self._heard_row.setVisible(bool(text))
        if text:
            self._empty.hide()
            self._layout.removeWidget(self._heard_row)  # always the newest
            self._layout.insertWidget(self._layout.count() - 1, self._heard_row)

    def _empty_state(self) -> QWidget:
        box = QWidget()
        layout = QVBoxLayout(box)
        layout.setContentsMargins(0, 60, 0, 0)
        title = QLabel("Say something")
        title.setObjectName("EmptyTitle")
        title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        text = QLabel(
            "Type below and press <b>Speak</b> — speech starts with the first words, not the whole text.<br>"
            "Switch to <b>Ask agent</b> to hear a reply while it is still being written. "
            "<b>Esc</b> stops at once."
        )
        text.setObjectName("EmptyHint")
        text.setAlignment(Qt.AlignmentFlag.AlignCenter)
        text.setWordWrap(True)
        layout.addWidget(title)
        layout.addWidget(text)
        return box

    def show_turn(self, turn: Turn, position_s: float | None) -> TurnView:
        view = self.views.get(turn.id)
        if view is None:
            self._forget_oldest()
            self._empty.hide()
            view = TurnView(turn)
            view.set_max_width(self._bubble_width())
            view.retry.clicked.connect(lambda _checked=False, tid=turn.id: self.retry_requested.emit(tid))
            self._layout.insertWidget(self._layout.count() - 1, view)
            self.views[turn.id] = view
            if turn.kind is TurnKind.AGENT and turn.prompt == self.heard.text():
                self.show_heard("", False)  # its own bubble says it now
            self.following = True  # a new turn: follow it
        view.refresh(position_s)
        if turn.active or view is self._active:
            self._active = view if turn.active else None
            if self.following and not self._follow_pending:
                self._follow_pending = True
                QTimer.singleShot(0, self, lambda: self._follow(view))  # after the layout has taken the new text
        return view

    def _forget_oldest(self) -> None:
        """A console left open all day would keep a bubble per announcement for ever: beyond the newest
        ``VIEWS_KEPT`` the oldest go (the history panel keeps what was said)."""
        while len(self.views) >= self.views_kept:
            oldest = next((turn_id for turn_id, view in self.views.items() if view is not self._active), None)
            if oldest is None:
                return
            view = self.views.pop(oldest)
            self._layout.removeWidget(view)
            view.deleteLater()

    def current_word_rect(self) -> QRect | None:
        """The line being heard, in the viewport's coordinates (None when no word is lit)."""
        view = self._active
        rect = view.anchor_rect() if view is not None else None
        if rect is None:
            return None
        return rect.translated(view.mapTo(self.viewport(), QPoint(0, 0)))

    def _follow(self, view: TurnView) -> None:
        self._follow_pending = False
        if not self.following or view.parent() is None:
            return
        # Every 40 ms while speaking: nothing to do unless the lit word, the text or the view changed (this runs
        # on the thread that also feeds the audio callback its GIL).
        state = (
            view._anchor,
            view._last_html,
            view.height(),
            self.viewport().height(),
            self.verticalScrollBar().value(),
        )
        if state == self._followed:
            return
        self._followed = state
        self.widget().layout().activate()
        rect = view.anchor_rect()
        if rect is None:  # nothing lit (waiting, between sentences, done): keep the bubble's end in sight
            bottom = view.mapTo(self.widget(), QPoint(0, view.height())).y()
            self.ensureVisible(0, bottom, 0, 8)
            return
        top = view.mapTo(self.widget(), rect.topLeft()).y()
        self.ensureVisible(0, top + rect.height() // 2, 0, rect.height() // 2 + FOLLOW_MARGIN)

    def _scrolled_by_hand(self, action: int) -> None:
        if action == QAbstractSlider.SliderAction.SliderNoAction:
            return
        QTimer.singleShot(0, self, self._decide_following)

    def _decide_following(self) -> None:
        bar = self.verticalScrollBar()
        rect = self.current_word_rect()
        in_sight = rect is not None and self.viewport().rect().intersects(rect)
        self.following = bar.value() >= bar.maximum() - 8 or in_sight

    def _bubble_width(self) -> int:
        return max(int(self.viewport().width() * 0.8) - 48, 280)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        for view in self.views.values():
            view.set_max_width(self._bubble_width())
