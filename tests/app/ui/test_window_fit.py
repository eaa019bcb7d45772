"""The window fits the screen it opens on, and the latency panel shows everything at 1280×800 and 1024×640
(issue 21 point 7): no horizontal scroll bar hiding Export, the stalls chip or the RTF and stalls columns, several
rows at 1280×800, the first row whole at 1024×640, the conversation keeping its room. The screenshots go to
test-artifacts/ (docs/app-window-*.png are copies, refreshed by hand)."""

from __future__ import annotations

import asyncio

import pytest
from PySide6.QtCore import QRect, Qt

from tests.app.helpers import ARTIFACTS, until
from voicedesk.app.settings import AppSettings, save_settings
from voicedesk.app.ui.waterfall import ROW_HEIGHT
from voicedesk.app.ui.window_size import CONVERSATION_ROOM

THREE = "The kettle is on. The toast is ready. Breakfast is served in the kitchen now."


def settle(qloop, seconds: float = 0.3) -> None:
    qloop.run_until_complete(asyncio.sleep(seconds))


def inside(widget, area) -> bool:
    """``widget`` lies wholly within ``area``'s visible rectangle (both on screen)."""
    top_left = widget.mapTo(area, widget.rect().topLeft())
    return area.rect().contains(QRect(top_left, widget.size()))


@pytest.mark.slow
def test_the_latency_panel_shows_everything_at_1280x800_and_1024x640(make_window, qtbot, qloop):
    window = make_window()
    window.composer.editor.setPlainText(THREE)
    qtbot.mouseClick(window.composer.speak, Qt.MouseButton.LeftButton)
    qloop.run_until_complete(until(lambda: window.controller.turns and not window.controller.turns[-1].active))
    panel, pane = window.latency, window.splitter.widget(1)
    made = len(panel.timeline.sentences)
    assert made >= 2  # the chunker may join short sentences
    for (width, height), rows in (((1280, 800), min(made, 3)), ((1024, 640), 1)):
        window.resize(width, height)
        settle(qloop)
        assert pane.verticalScrollBar().maximum() == 0, "the panel scrolls as a whole: something is cut"
        assert pane.horizontalScrollBar().maximum() == 0
        for item in (panel.toggle, *panel.metrics.values(), panel.export):
            assert item.isVisible() and inside(item, pane.viewport()), (width, item.text())
        assert all(rect.right() <= panel.axis.width() for rect in panel.axis.header_rects())  # RTF and stalls
        assert panel.scroll.viewport().height() >= rows * ROW_HEIGHT, (width, panel.scroll.viewport().height())
        assert window.conversation.height() >= CONVERSATION_ROOM
        ARTIFACTS.mkdir(exist_ok=True)
        assert window.grab().save(str(ARTIFACTS / f"app-window-{width}.png"))


def test_the_window_opens_within_a_smaller_screen_and_restores_a_saved_geometry_that_fits(make_window, qloop, tmp_path):
    window = make_window(start=False)
    small = QRect(0, 0, 1100, 680)
    window.place_on(small)
    settle(qloop, 0.1)
    assert small.contains(window.geometry()), window.geometry()
    assert (window.width(), window.height()) == (1100, 680)

    window.setGeometry(QRect(40, 30, 1000, 620))
    settle(qloop, 0.1)
    window.save_settings()
    settings_path = tmp_path / "settings.json"
    again = make_window(settings_path, start=False)
    again.place_on(QRect(0, 0, 1280, 800))
    assert again.geometry() == QRect(40, 30, 1000, 620)  # it fits: kept where the person left it
    again.place_on(QRect(0, 0, 1020, 640))  # a smaller screen now: the saved place would hang off it
    assert QRect(0, 0, 1020, 640).contains(again.geometry()), again.geometry()


def test_a_fresh_window_is_never_larger_than_the_screen(make_window, tmp_path):
    save_settings(AppSettings(), tmp_path / "settings.json")
    window = make_window(tmp_path / "settings.json", start=False)
    available = window.screen().availableGeometry()
    assert available.contains(window.geometry()) or window.size() == window.minimumSize()
