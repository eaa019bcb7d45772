"""Controls that do what the operator means (issue 21 point 7): the mouse wheel scrolls the settings column
instead of changing (and saving) every control it passes; a control changes by wheel only once it has the focus."""

from __future__ import annotations

import asyncio

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication

from voicedesk.app.settings import load_settings


def wheel(widget, steps: int = -1) -> None:
    """A real wheel event over the middle of ``widget``, delivered as Qt delivers the mouse's (with propagation)."""
    centre = QPointF(widget.rect().center())
    event = QWheelEvent(
        centre,
        QPointF(widget.mapToGlobal(centre.toPoint())),
        QPoint(0, 0),
        QPoint(0, 120 * steps),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(widget, event)


def test_the_wheel_scrolls_the_settings_column_and_changes_only_a_focused_control(make_window, qloop, tmp_path):
    window = make_window(start=False)
    window.resize(1024, 640)
    qloop.run_until_complete(asyncio.sleep(0.2))
    voice = window.sidebar.voice
    speed, blend = voice.speed.value(), voice.blend.currentIndex()
    bar = window.sidebar.verticalScrollBar()
    assert bar.maximum() > 0, "the settings column must be taller than the window for this test"
    window.sidebar.ensureWidgetVisible(voice.speed)
    qloop.run_until_complete(asyncio.sleep(0.05))
    before = bar.value()
    for control in (voice.speed, voice.blend, voice.blend_weight):
        wheel(control, -1)
        qloop.run_until_complete(asyncio.sleep(0.05))
    assert (voice.speed.value(), voice.blend.currentIndex()) == (speed, blend)
    assert bar.value() > before, "the wheel over an unfocused control scrolls the column"
    window.save_settings()
    assert load_settings(tmp_path / "settings.json").settings.voice.speed == speed / 100

    window.activateWindow()
    voice.speed.setFocus(Qt.FocusReason.MouseFocusReason)
    qloop.run_until_complete(asyncio.sleep(0.1))
    assert voice.speed.hasFocus()
    wheel(voice.speed, 1)
    assert voice.speed.value() != speed, "a focused control still follows the wheel"
