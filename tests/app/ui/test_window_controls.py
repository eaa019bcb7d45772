"""Controls that do what the operator means (issue 21 point 7): the mouse wheel scrolls the settings column
instead of changing (and saving) every control it passes; a control changes by wheel only once it has the focus."""

from __future__ import annotations

import asyncio

import pytest
from PySide6.QtCore import QPoint, QPointF, QRect, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication, QDialogButtonBox

from tests.app.helpers import until
from voicedesk.app.settings import load_settings
from voicedesk.app.ui.phrase_actions import PhraseDialog


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


@pytest.mark.slow
def test_the_underruns_headline_counts_stalls_the_listener_heard_and_their_length(make_window, qtbot, qloop):
    """Played through the real PortAudio stream (the null sink): random weights on a CPU make audio slower than
    real time, so the player runs dry between sentences; each dry spell is one stall, however many callbacks."""
    from voicedesk.app.ui.waterfall import format_s

    window = make_window()
    player = window.controller.player
    assert player is not None, "needs an audio output (source tests/support/headless.sh)"
    before_stalls, before_frames = player.buffer.underruns, player.buffer.underrun_frames
    window.composer.editor.setPlainText("The first sentence. A second one follows it. A third ends it.")
    qtbot.mouseClick(window.composer.speak, Qt.MouseButton.LeftButton)
    qloop.run_until_complete(until(lambda: window.controller.turns and not window.controller.turns[-1].active))
    run = window.controller.last_run
    stalls = player.buffer.underruns - before_stalls
    heard_s = (player.buffer.underrun_frames - before_frames) / player.buffer.sample_rate
    chip = window.latency.metrics["underruns"].text()
    assert f"<b>{stalls}</b> stall" in chip and "underrun" not in chip
    # The rows count those a late sentence caused; the headline every gap heard (the device's own too).
    assert sum(s.underruns or 0 for s in window.latency.timeline.sentences) <= stalls
    assert abs(run.stalled_s - heard_s) < 0.05
    if stalls:
        assert format_s(run.stalled_s) in chip


def test_a_new_phrase_cannot_take_a_shortcut_already_taken_and_recording_one_fires_none(make_window, qtbot, qloop):
    window = make_window(start=False)  # the default phrases: Dinner on Ctrl+Alt+1, Front door on Ctrl+Alt+2
    window.desktop.apply()
    assert window.desktop._window_shortcuts and all(s.isEnabled() for s in window.desktop._window_shortcuts)
    before = [(p.name, p.shortcut) for p in window.settings.phrases]
    qtbot.mouseClick(window.console.phrases.add, Qt.MouseButton.LeftButton)
    dialog = window.findChild(PhraseDialog)
    qtbot.waitExposed(dialog)
    qtbot.keyClicks(dialog.name, "Laundry")
    qtbot.keyClicks(dialog.text, "The laundry is done.")
    dialog.activateWindow()
    dialog.shortcut.setFocus()
    qloop.run_until_complete(until(lambda: dialog.shortcut.hasFocus()))
    assert window.desktop.suspended  # recording: no shortcut may fire
    assert not any(s.isEnabled() for s in window.desktop._window_shortcuts)
    keys = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier
    qtbot.keyClick(dialog.shortcut, Qt.Key.Key_1, keys)
    assert dialog.phrase().shortcut == "Ctrl+Alt+1"
    assert not window.controller.turns and not window.announce.console.busy
    qtbot.mouseClick(dialog.buttons.button(QDialogButtonBox.StandardButton.Save), Qt.MouseButton.LeftButton)
    assert dialog.isVisible(), "a shortcut another phrase has must be refused"
    assert "Ctrl+Alt+1" in dialog.problem.text() and "“Dinner”" in dialog.problem.text()
    assert [(p.name, p.shortcut) for p in window.settings.phrases] == before

    dialog.shortcut.clear()
    dialog.shortcut.setFocus()
    qtbot.keyClick(dialog.shortcut, Qt.Key.Key_5, keys)
    qtbot.mouseClick(dialog.buttons.button(QDialogButtonBox.StandardButton.Save), Qt.MouseButton.LeftButton)
    qloop.run_until_complete(until(lambda: not dialog.isVisible()))
    assert [(p.name, p.shortcut) for p in window.settings.phrases] == [*before, ("Laundry", "Ctrl+Alt+5")]
    assert not window.desktop.suspended
    assert window.desktop._window_shortcuts and all(s.isEnabled() for s in window.desktop._window_shortcuts)


def test_the_ab_window_shows_its_controls_whole_and_closes(make_window, qtbot, qloop):
    window = make_window(start=False)
    menus = {a.text(): a.menu() for a in window.menuBar().actions()}
    assert "A/B latency runs…" in [a.text() for a in menus["&Tools"].actions()]  # the lab's tool, by entry point
    window.tools["ab_runs"].action.trigger()
    view = window.tools["ab_runs"].view
    qtbot.waitExposed(view)
    view.resize(1024, 640)
    qloop.run_until_complete(asyncio.sleep(0.2))
    for widget in (
        view.start,
        view.cancel,
        view.export,
        view.runs.fewer,
        view.runs.more,
        view.close_button,
        view.engine_b,
    ):
        corner = widget.mapTo(view, QPoint(0, 0))
        assert view.rect().contains(QRect(corner, widget.size())), widget
        assert widget.width() >= widget.minimumSizeHint().width(), widget
    shown = view.runs.label.text()
    assert shown == "5 per engine" and view.runs.label.width() >= view.runs.label.fontMetrics().horizontalAdvance(shown)
    lines = view.text.fontMetrics().lineSpacing()
    assert view.text.viewport().height() >= 3 * lines  # three whole lines of the text to say
    qtbot.mouseClick(view.runs.more, Qt.MouseButton.LeftButton)
    assert view.runs.value() == 6
    qtbot.mouseClick(view.close_button, Qt.MouseButton.LeftButton)
    assert not view.isVisible()
    window.tools["ab_runs"].action.trigger()
    qtbot.waitExposed(view)
    view.activateWindow()
    qloop.run_until_complete(until(lambda: QApplication.activeWindow() is view))
    qtbot.keyClick(view.text, Qt.Key.Key_Escape)
    assert not view.isVisible()


def test_the_stop_shortcut_cannot_take_a_phrases_shortcut(make_window, qtbot):
    """Issue 33.8: the Desktop card's Stop took a phrase's shortcut silently (the phrase's then did nothing)."""
    window = make_window(start=False)  # the default phrases: Dinner on Ctrl+Alt+1
    field, before = window.sidebar.desktop.stop_shortcut, window.settings.desktop.stop_shortcut
    field.setText("Ctrl+Alt+1")
    field.editingFinished.emit()
    assert field.text() == before and window.settings.desktop.stop_shortcut == before
    assert "Ctrl+Alt+1 is the shortcut of the phrase “Dinner”" in window.status.text
    assert [p.shortcut for p in window.settings.phrases if p.title == "Dinner"] == ["Ctrl+Alt+1"]
    field.setText("Ctrl+Alt+9")
    field.editingFinished.emit()
    assert window.settings.desktop.stop_shortcut == "Ctrl+Alt+9"
