"""The status line and the engine card tell the truth (issue 21 point 7): a mistyped port is refused with a
specific reason (no "Something went wrong", no traceback) and the card shows the failure; an address without
``ws://`` is used in one normalized form everywhere, so the health check sees it healthy; errors whose cause is
gone leave the status line for good (none comes back when newer messages fade). Real endpoint servers on
127.0.0.1 and the real window."""

from __future__ import annotations

import logging
import time
from urllib.parse import urlsplit

import pytest
from PySide6.QtCore import Qt

from tests.app.helpers import until
from tests.app.test_engine_health import endpoint_server
from tests.support.endpoint import server_settings
from voicedesk.app.conversation import TurnState
from voicedesk.app.engines import EngineState

LATER_S = 3600.0
"""Looking an hour ahead: every info message has faded by then; only unresolved warnings and errors are left."""


def connect_to(window, qtbot, url: str) -> None:
    engine = window.sidebar.engine
    if window.sidebar.engine.switch.value() != "websocket":
        qtbot.mouseClick(engine.switch.buttons["websocket"], Qt.MouseButton.LeftButton)
    engine.ws_url.clear()
    qtbot.keyClicks(engine.ws_url, url)
    qtbot.mouseClick(engine.ws_connect, Qt.MouseButton.LeftButton)


def left_over(window) -> str:
    notice = window.status.board.current(time.time() + LATER_S)
    return notice.text if notice is not None else ""


def test_a_mistyped_port_is_refused_clearly_and_a_bare_host_port_connects_and_is_seen_healthy(
    make_window, qtbot, qloop, synthesizer, caplog
):
    window = make_window()
    engine = window.sidebar.engine
    server = endpoint_server(synthesizer)
    try:
        with caplog.at_level(logging.ERROR):
            connect_to(window, qtbot, f"ws://127.0.0.1:{server.port}x")
            qloop.run_until_complete(until(lambda: window.hub.status.state is EngineState.ERROR))
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR], "a traceback went to the terminal"
        assert engine.status.title.text() == "Not connected"  # not "Connecting…" for ever
        assert "port must be a number" in engine.message.text() and engine.message.isVisible()
        assert "Something went wrong" not in window.status.text

        connect_to(window, qtbot, f"127.0.0.1:{server.port}")  # no ws://
        qloop.run_until_complete(until(lambda: window.hub.status.state is EngineState.READY))
        normalized = f"ws://127.0.0.1:{server.port}/invocations-bidirectional-stream"
        assert engine.ws_url.text() == window.settings.engine.websocket_url == window.hub.spec.target == normalized
        assert "port must be a number" not in window.status.text
        assert left_over(window) == "", "a resolved error would come back when newer messages fade"
        window.engines.health.check_now()
        qloop.run_until_complete(until(lambda: "last seen healthy" in engine.health.text()))
    finally:
        server.stop()


@pytest.mark.slow
def test_an_engine_failure_mid_reply_leaves_the_status_line_once_reconnected(make_window, qtbot, qloop, synthesizer):
    server = endpoint_server(synthesizer)
    port = server.port
    window = make_window()
    window.sidebar.engine.failover.setChecked(False)
    try:
        connect_to(window, qtbot, server.ws_url)
        qloop.run_until_complete(until(lambda: window.hub.status.state is EngineState.READY))
        window.sidebar.agent.source.setCurrentIndex(window.sidebar.agent.source.findData("scripted"))
        window.sidebar.agent.tokens_per_s.setValue(6)  # slow, so the server goes while the reply is being made
        qtbot.mouseClick(window.composer.mode.buttons["agent"], Qt.MouseButton.LeftButton)
        qtbot.keyClicks(window.composer.editor, "One part arrives now. Another part follows. The end is here.")
        qtbot.mouseClick(window.composer.speak, Qt.MouseButton.LeftButton)
        qloop.run_until_complete(until(lambda: window.controller.turns))
        turn = window.controller.turns[-1]
        qloop.run_until_complete(until(lambda: turn.sentences and turn.sentences[0].audio_s > 0))
        server.stop()
        qloop.run_until_complete(until(lambda: not turn.active))
        assert turn.state is TurnState.FAILED
        assert "failed mid-reply" in window.status.text

        server = endpoint_server(synthesizer, port)
        qtbot.mouseClick(window.sidebar.engine.ws_connect, Qt.MouseButton.LeftButton)
        qloop.run_until_complete(until(lambda: window.hub.status.state is EngineState.READY))
        assert "mid-reply" not in window.status.text
        assert "mid-reply" not in left_over(window)
        assert "failed mid-reply" in (turn.error or "")  # the reply's bubble still says what happened to it
    finally:
        server.stop()


@pytest.mark.slow
def test_a_stopped_entry_replays_whole(make_window, qtbot, qloop, tmp_path):
    whole = "Stop me part way through this. The rest of it follows here."
    window = make_window(history_path=tmp_path / "history.json")
    window.composer.editor.setPlainText(whole)
    qtbot.mouseClick(window.composer.speak, Qt.MouseButton.LeftButton)

    async def scenario():
        await until(lambda: window.controller.turns and (window.controller.heard_position() or 0) > 0.8)
        qtbot.keyClick(window.composer.editor, Qt.Key.Key_Escape)
        await until(lambda: window.controller.turns[0].state is TurnState.CUT and window.announce.history.entries)
        (entry,) = window.announce.history.entries
        assert entry.state == "cut" and entry.text != whole and whole.startswith(entry.text.rstrip("…").strip())
        queue = window.console.announcements
        queue.history.setCurrentRow(0)
        qtbot.mouseClick(queue.replay, Qt.MouseButton.LeftButton)
        if window.announce.console.core.paused:  # Stop paused the queue; the operator carries on
            qtbot.mouseClick(queue.resume, Qt.MouseButton.LeftButton)
        await until(lambda: len(window.controller.turns) == 2)
        return window.controller.turns[1]

    replayed = qloop.run_until_complete(scenario())
    assert replayed.text == whole


def test_the_token_message_points_at_the_token_field(make_window, qtbot, qloop, synthesizer, monkeypatch):
    from voicedesk.endpoint.runner import ServerThread
    from voicedesk.endpoint.server import create_app

    monkeypatch.delenv("VOICEDESK_TOKEN", raising=False)
    window = make_window()
    engine = window.sidebar.engine
    with ServerThread(create_app(synthesizer, server_settings(token="s3cret", idle_timeout_s=120))) as server:
        window.activateWindow()
        connect_to(window, qtbot, server.ws_url)
        status = lambda: window.hub.status  # noqa: E731
        # the server's own refusal, not an earlier attempt at the address the switch held before
        here = urlsplit(server.ws_url).netloc
        # the server's own refusal (the card then reconnects, so its state moves on: the code is what it said)
        qloop.run_until_complete(until(lambda: here in status().detail and status().code == "unauthorized"))
        said = engine.message.text()
        # Issue 33.8: it showed a raw "HTTP 401" and gave its advice three times (the server's, the client's, ours).
        assert said.endswith("requires a token. Type it in the Token field (marked).") and "HTTP" not in said, said
        # the health check does not try the refused token again (it would wipe the message, and be refused)
        qloop.run_until_complete(window.engines.health.check())
        assert status().code == "unauthorized" and "Token field" in engine.message.text()
        assert engine.ws_token.objectName() == "Invalid"  # marked
        qloop.run_until_complete(until(lambda: engine.ws_token.hasFocus()))  # and the keyboard is there
        qtbot.keyClicks(engine.ws_token, "s3cret")
        assert engine.ws_token.objectName() == ""  # typing clears the mark
        qtbot.keyClick(engine.ws_token, Qt.Key.Key_Return)
        qloop.run_until_complete(until(lambda: window.hub.status.state is EngineState.READY))


def test_speak_while_the_model_loads_says_so_and_speaks_when_ready(make_window, qtbot, qloop, synthesizer):
    """The real model, opened behind a gate the test lifts: the window sees a model that takes its time to load."""
    import asyncio

    from voicedesk.engine.local import LocalEngine

    gate = asyncio.Event()

    async def slow_opener(spec):
        await gate.wait()
        return LocalEngine(synthesizer)

    window = make_window(engine_opener=slow_opener, start=False)
    starting = asyncio.ensure_future(window.start())
    qloop.run_until_complete(until(lambda: window.hub.status.state is EngineState.LOADING))
    window.composer.editor.setPlainText("Ready when you are.")
    qtbot.mouseClick(window.composer.speak, Qt.MouseButton.LeftButton)
    qloop.run_until_complete(until(lambda: "model is loading" in window.status.text))
    assert "Ready when you are." in window.status.text
    assert not window.controller.turns
    gate.set()
    qloop.run_until_complete(starting)
    qloop.run_until_complete(until(lambda: window.controller.turns and not window.controller.turns[-1].active))
    assert window.controller.turns[-1].text == "Ready when you are."
    assert window.controller.turns[-1].state is TurnState.DONE
    # The console runner tells the window a turn ended after the turn itself does (CI once looked in between).
    qloop.run_until_complete(until(lambda: "model is loading" not in window.status.text))
