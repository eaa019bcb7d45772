"""The latency panel and the A/B runs window in the real window (pytest-qt; Xvfb and the PulseAudio null sink under
tests/run.sh, so turns play through a real PortAudio stream), on the real local engine with random weights.

Issue 13's bugs, each driven through the window: every row reachable with the first-audio row in view (not
scrolled away to the last), no axis label running into a column header, every tab stop of the panel with a focus
ring and Export reachable by Tab; plus the session export, collapsing and resizing, and the A/B comparison showing
the numbers `voicedesk bench ab` prints, with its screenshots at 1280×800 and 1024×640.
"""

from __future__ import annotations

import itertools
import json
import os

import pytest
from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QWidget

from tests.app.helpers import ARTIFACTS, until
from tests.app.lab.test_ab_runs import runs_from
from tests.support.endpoint import server_settings
from voicedesk.app.conversation import TurnState
from voicedesk.app.lab.ab import ab_summary
from voicedesk.app.lab.ab_runs import AbPhase
from voicedesk.app.lab.table import ab_stage_table, format_lab
from voicedesk.app.urls import engine_url
from voicedesk.engine.measure.timeline import timelines_from_document

REPLY = "Good morning to you all. The kitchen lights are off. The front door is locked."
"""Three sentences, each long enough not to be merged with the next: three rows."""


def tab_until(window, target: QWidget, presses: int = 60) -> bool:
    """Presses Tab from the composer until ``target`` has the focus (True) or it never came (False)."""
    window.activateWindow()
    assert QTest.qWaitForWindowActive(window)
    window.composer.editor.setFocus()
    chain = []
    for _ in range(presses):
        QApplication.processEvents()
        focused = QApplication.focusWidget()
        if focused is target:
            return True
        chain.append(type(focused).__name__)
        QTest.keyClick(focused or window, Qt.Key.Key_Tab)
    print("focus chain:", chain)
    return False


def shows_focus_ring(widget: QWidget, elsewhere: QWidget) -> bool:
    widget.setFocus(Qt.FocusReason.TabFocusReason)
    QApplication.processEvents()
    focused = widget.grab().toImage()
    elsewhere.setFocus(Qt.FocusReason.TabFocusReason)
    QApplication.processEvents()
    return focused != widget.grab().toImage()


def speak(window, qtbot, qloop, text: str):  # type: ignore[no-untyped-def]
    window.composer.editor.clear()
    qtbot.keyClicks(window.composer.editor, text)
    before = len(window.controller.turns)
    qtbot.mouseClick(window.composer.speak, Qt.MouseButton.LeftButton)

    async def done():  # type: ignore[no-untyped-def]
        await until(lambda: len(window.controller.turns) > before and not window.controller.turns[-1].active)

    qloop.run_until_complete(done())
    turn = window.controller.turns[-1]
    assert turn.state is TurnState.DONE, turn.error
    return turn


@pytest.mark.slow
def test_latency_panel_rows_axis_keyboard_collapse_and_session_export(make_window, qtbot, qloop, tmp_path):
    window = make_window()
    panel = window.latency
    assert tab_until(window, panel.export)  # reachable before the first turn: its entries say there is nothing yet
    assert not panel.export_actions["json"].isEnabled()
    splitter, _pane = panel._splitter()
    total = sum(splitter.sizes())
    splitter.setSizes([total - 130, 130])  # a small panel: room for a row or two
    splitter.splitterMoved.emit(total - 130, 1)  # as a drag says it: the window no longer shares the column itself
    first = speak(window, qtbot, qloop, REPLY)
    assert len(first.sentences) == 3

    # Every row is there and the view starts at the first one, which holds the turn's first audio.
    rows, scroll = panel.rows, panel.scroll
    QApplication.processEvents()
    assert len(rows.sentences) == 3
    assert scroll.viewport().height() < 2 * 22  # the panel really is too small for all three …
    assert scroll.verticalScrollBar().maximum() > 0
    assert scroll.verticalScrollBar().value() == 0
    top_row = rows.row_rect(0).toRect()
    visible = QRect(rows.mapFrom(scroll.viewport(), QPoint(0, 0)), scroll.viewport().size())
    assert visible.contains(top_row)  # … and the first-audio row is the one in sight
    assert rows.sentences[0].first_audible_at_s == panel.timeline.first_audible_at_s
    scroll.verticalScrollBar().setValue(scroll.verticalScrollBar().maximum())  # the last one can be reached
    QApplication.processEvents()
    visible = QRect(rows.mapFrom(scroll.viewport(), QPoint(0, 0)), scroll.viewport().size())
    assert visible.contains(rows.row_rect(2).toRect())
    # Played through the real stream: each row has its DAC time and an underrun count.
    assert all(s.dac_at_s is not None and isinstance(s.underruns, int) for s in rows.sentences)

    # No axis label reaches a column header, at this size and at a small laptop's.
    for size in (None, (1024, 640)):
        if size:
            window.resize(*size)
            QApplication.processEvents()
        headers = panel.axis.header_rects()
        ticks = panel.axis.ticks()
        assert len(ticks) >= 2
        assert all(tick.right <= min(h.left() for h in headers) - 4 for tick in ticks), (size, ticks, headers)
        assert all(b.left >= a.right for a, b in itertools.pairwise(ticks))  # nor each other
        width = panel.axis.width()
        metrics = panel.axis.metrics()
        assert all(x + 17 + metrics.horizontalAdvance(text) <= width for x, _, text in panel.axis.legend())

    # The keyboard: Tab reaches the collapse button and Export, and both show where the focus is.
    assert tab_until(window, panel.toggle)
    assert tab_until(window, panel.export)
    for widget in (panel.toggle, panel.export):
        assert shows_focus_ring(widget, window.composer.editor), widget.text()

    # Collapsing keeps the header line and gives the room to the conversation; expanding gives it back.
    before = splitter.sizes()
    QTest.keyClick(panel.toggle, Qt.Key.Key_Space)
    QApplication.processEvents()
    assert panel.collapsed and not panel.body.isVisible() and panel.metrics["first_audio"].isVisible()
    collapsed = splitter.sizes()
    assert collapsed[1] < before[1] and collapsed[0] > before[0]
    QTest.keyClick(panel.toggle, Qt.Key.Key_Space)
    QApplication.processEvents()
    assert not panel.collapsed and panel.body.isVisible() and splitter.sizes() == before

    # The whole session, not only the last reply.
    second = speak(window, qtbot, qloop, "Bye for now, my friend.")
    window.files.export_timeline("session-json", tmp_path / "session.json")
    timelines = timelines_from_document(json.loads((tmp_path / "session.json").read_text()))
    assert [t.label for t in timelines] == [f"turn {first.id}", f"turn {second.id}"]
    assert [len(t.sentences) for t in timelines] == [3, len(second.sentences)]
    assert all(s.engine == "Local" for t in timelines for s in t.sentences)  # per-row engine labels
    window.files.export_timeline("session-csv", tmp_path / "session.csv")
    lines = (tmp_path / "session.csv").read_text().splitlines()
    assert len(lines) == 1 + 3 + len(second.sentences)


@pytest.mark.slow
def test_ab_window_shows_bench_ab_numbers_and_fits_a_small_laptop(make_window, qtbot, qloop, tmp_path, synthesizer):
    from voicedesk.endpoint.runner import ServerThread
    from voicedesk.endpoint.server import create_app

    window = make_window()
    with ServerThread(create_app(synthesizer, server_settings(idle_timeout_s=120))) as server:
        window.sidebar.engine.ws_url.clear()
        qtbot.keyClicks(window.sidebar.engine.ws_url, server.ws_url)  # B is set up, not selected: A stays local
        window.tools["ab_runs"].action.trigger()
        view = window.tools["ab_runs"].view
        qtbot.waitExposed(view)
        view.text.setPlainText("Lights off now.")
        view.runs.setValue(1)
        view.engine_b.setCurrentIndex(view.engine_b.findData("websocket"))
        assert view.engine_b.currentText() == "WebSocket"
        qtbot.mouseClick(view.start, Qt.MouseButton.LeftButton)

        async def finished():  # type: ignore[no-untyped-def]
            await until(lambda: view.runner is not None and view.runner.progress.phase is not AbPhase.RUNNING)

        qloop.run_until_complete(finished())
        progress = view.runner.progress
        assert progress.phase is AbPhase.DONE, progress.message
        document = view.runner.document()
    engines = {"A": "Local", "B": f"WebSocket {engine_url(server.ws_url)}"}  # the address in its one form
    assert progress.summary["engines"] == engines
    # The cells on screen are the bench's, recomputed from the recorded timelines alone.
    assert view.cell_texts() == ab_stage_table(ab_summary(runs_from(document), engines))
    printed = format_lab(document)
    assert "== A/B: A = Local, B = WebSocket ws://127.0.0.1:" in printed
    view.export_report(tmp_path / "ab.json")
    assert json.loads((tmp_path / "ab.json").read_text())["schema"] == "voicedesk.bench-lab/1"
    assert window.hub.status.kind == "local"  # the app's own engine was neither switched nor closed

    ARTIFACTS.mkdir(exist_ok=True)
    for width, height in ((1280, 800), (1024, 640)):
        view.resize(width, height)
        QApplication.processEvents()
        assert (view.width(), view.height()) == (width, height)
        inside = view.rect()
        for widget in (view.start, view.cancel, view.export, view.table, view.ratio, view.runs, view.engine_b):
            corner = widget.mapTo(view, QPoint(0, 0))
            assert inside.contains(QRect(corner, widget.size())), (width, height, widget)
        table = view.table
        assert not table.horizontalScrollBar().isVisible()  # every column fits
        assert not table.verticalScrollBar().isVisible()  # every stage fits
        if os.environ.get("DISPLAY"):
            view.grab().save(str(ARTIFACTS / f"ab-runs-{width}x{height}.png"))
