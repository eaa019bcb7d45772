"""The window on a small laptop screen and from the keyboard (issue 13, bugs 1 and 7): it fits 1024×640 with room
for the conversation, no tab label is clipped, every Tab stop shows a focus ring, and during a long reply the
word being heard stays in sight (no scrolling into blank space). The screenshots in docs/ are taken here (into
test-artifacts/; a test run never rewrites docs/)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QApplication, QWidget

from tests.app.helpers import until
from voicedesk.app.phrases import Phrase
from voicedesk.app.settings import AppSettings, save_settings
from voicedesk.app.ui.latency_panel import LatencyPanel
from voicedesk.app.ui.widgets import Segmented

SCREENSHOTS = Path(__file__).resolve().parents[3] / "test-artifacts"
"""Where the queue-and-phrases screenshots go (docs/app-console-*.png are copies of them, refreshed by hand)."""
LONG_REPLY = (
    "The first sentence starts the reply. The second one follows it closely. A third sentence adds more. "
    "The fourth keeps the listener busy. The fifth is nearly the last. The sixth one ends it."
)


def settle(qloop, seconds: float = 0.2) -> None:
    qloop.run_until_complete(asyncio.sleep(seconds))


def test_the_window_fits_a_small_laptop_and_the_conversation_keeps_its_room(make_window, qloop):
    window = make_window()
    assert window.minimumSize().width() <= 1024 and window.minimumSize().height() <= 640
    window.resize(1024, 640)
    settle(qloop)
    assert (window.width(), window.height()) == (1024, 640)
    assert window.conversation.height() >= 180, window.conversation.height()
    # The latency panel gives way: dragged down, the conversation takes the room.
    total = sum(window.splitter.sizes())
    window.splitter.setSizes([total, 0])
    settle(qloop)
    assert window.conversation.height() >= total - 80
    for column in (window.sidebar, window.console):  # the side columns show their cards whole
        assert column.width() >= column.widget().minimumSizeHint().width()


def test_no_switch_label_is_clipped_when_selected(make_window, qloop):
    window = make_window(start=False)
    window.resize(1024, 640)
    for kind in ("websocket", "sagemaker", "local"):
        window.sidebar.engine.switch.buttons[kind].click()
        settle(qloop, 0.05)
        for switch in window.findChildren(Segmented):
            for button in switch.buttons.values():
                if not button.isVisible():
                    continue
                bold = QFont(button.font())
                bold.setWeight(QFont.Weight.DemiBold)
                needed = QFontMetrics(bold).horizontalAdvance(button.text())
                assert button.contentsRect().width() >= needed, (button.text(), button.width(), needed)


def test_every_tab_stop_shows_a_focus_ring(make_window, qloop):
    window = make_window(start=False)
    window.resize(1280, 800)
    window.activateWindow()
    settle(qloop)
    start = window.composer.editor
    start.setFocus()
    settle(qloop, 0.05)
    seen: list[QWidget] = []
    widget = start
    for _ in range(200):
        window.focusNextChild()
        settle(qloop, 0.02)
        widget = QApplication.focusWidget()
        if widget is None or widget is start or widget in seen:
            break
        seen.append(widget)
    checked = 0
    for widget in seen:
        if not widget.isVisible() or _inside(widget, LatencyPanel):  # the latency panel is checked with it
            continue
        widget.setFocus(Qt.FocusReason.TabFocusReason)
        settle(qloop, 0.03)
        focused = widget.grab().toImage()
        widget.clearFocus()
        settle(qloop, 0.03)
        unfocused = widget.grab().toImage()
        assert focused != unfocused, f"no focus ring on {type(widget).__name__} {widget.objectName()!r}"
        checked += 1
    assert checked >= 20, checked
    assert {type(w).__name__ for w in seen} >= {"QPushButton", "QLineEdit", "QComboBox", "QSlider", "QCheckBox"}


def _inside(widget: QWidget, kind: type) -> bool:
    parent = widget
    while parent is not None:
        if isinstance(parent, kind):
            return True
        parent = parent.parentWidget()
    return False


def test_a_long_reply_keeps_the_word_being_heard_in_sight(make_window, qtbot, qloop, tmp_path):
    settings = AppSettings()
    settings.phrases = [
        Phrase("Dinner", "Dinner is ready.", shortcut="Ctrl+Alt+1"),
        Phrase("Door", "Someone is at the front door.", voice="am_adam", shortcut="Ctrl+Alt+2"),
        Phrase("Laundry", "The laundry is done.", shortcut="Ctrl+Alt+3"),
        Phrase("Leaving", "We are leaving in five minutes."),
    ]
    save_settings(settings, tmp_path / "settings.json")
    window = make_window(tmp_path / "settings.json")
    window.resize(1024, 640)
    settle(qloop)
    for text in ("Good morning.", "The coffee is ready."):
        window.composer.editor.setPlainText(text)
        qtbot.mouseClick(window.composer.speak, Qt.MouseButton.LeftButton)
        qloop.run_until_complete(until(lambda: window.controller.turns and not window.controller.turns[-1].active))
    window.composer.editor.setPlainText(LONG_REPLY)
    qtbot.mouseClick(window.composer.speak, Qt.MouseButton.LeftButton)

    async def watch():
        await until(lambda: len(window.controller.turns) == 3)
        turn = window.controller.turns[-1]
        samples, outside, shot = 0, [], False
        while turn.active:
            await asyncio.sleep(0.04)
            rect = window.conversation.current_word_rect()
            followed = window.conversation._active
            if rect is None or followed is None or followed.turn is not turn:
                continue  # the next queued one, prepared ahead, is lit as its audio starts, before this one ends
            samples += 1
            if not window.conversation.viewport().rect().contains(rect):
                outside.append((rect, window.conversation.verticalScrollBar().value()))
            if not shot and len(turn.sentences) >= 4:
                for text in ("Is the car in the garage?", "Turn off the lights."):
                    window.composer.editor.setPlainText(text)
                    qtbot.mouseClick(window.composer.speak, Qt.MouseButton.LeftButton)
                await until(lambda: len(window.announce.console.core) == 2)
                await asyncio.sleep(0.1)
                for size, name in (((1024, 640), "app-console-1024.png"), ((1280, 800), "app-console-1280.png")):
                    window.resize(*size)
                    await asyncio.sleep(0.3)
                    SCREENSHOTS.mkdir(exist_ok=True)
                    assert window.grab().save(str(SCREENSHOTS / name))
                window.resize(1024, 640)
                shot = True
        return samples, outside

    samples, outside = qloop.run_until_complete(watch())
    assert samples >= 5, samples
    assert outside == []
    window.announce.console.clear()
