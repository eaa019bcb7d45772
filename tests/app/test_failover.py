"""Failover, for real: the window speaks through a WebSocket connection to a real endpoint server (uvicorn on
127.0.0.1, the container's app around the suite's random-weight Kokoro); the server is shut down mid-reply and the
reply continues on the local engine from the first sentence whose audio never arrived, losing no text."""

from __future__ import annotations

import asyncio

import pytest
from PySide6.QtCore import Qt

from tests.app.helpers import until
from tests.support.endpoint import server_settings
from voicedesk.app.conversation import TurnState
from voicedesk.app.engines import EngineState

# The agent writes slowly (6 tokens/s) so that, however fast the machine, text is still arriving when the server
# goes away: the part sent after that point can only be spoken by the local engine.
REPLY = "The first part arrives now. Then the second part follows. A third part comes later. The end is here."


@pytest.mark.slow
def test_a_remote_engine_dying_mid_reply_hands_the_rest_to_the_local_engine(make_window, qtbot, qloop, synthesizer):
    from voicedesk.endpoint.runner import ServerThread
    from voicedesk.endpoint.server import create_app

    server = ServerThread(create_app(synthesizer, server_settings(idle_timeout_s=120))).start()
    try:
        window = make_window()
        engine = window.sidebar.engine
        qtbot.mouseClick(engine.switch.buttons["websocket"], Qt.MouseButton.LeftButton)
        engine.ws_url.clear()
        qtbot.keyClicks(engine.ws_url, server.ws_url)
        qtbot.mouseClick(engine.ws_connect, Qt.MouseButton.LeftButton)

        async def scenario():
            await until(lambda: window.hub.status.kind == "websocket" and window.hub.status.state is EngineState.READY)
            assert window.header_status.title.text() == "Connected"
            window.sidebar.agent.source.setCurrentIndex(window.sidebar.agent.source.findData("scripted"))
            window.sidebar.agent.tokens_per_s.setValue(6)
            qtbot.mouseClick(window.composer.mode.buttons["agent"], Qt.MouseButton.LeftButton)
            qtbot.keyClicks(window.composer.editor, REPLY)
            qtbot.mouseClick(window.composer.speak, Qt.MouseButton.LeftButton)
            await until(lambda: window.controller.turns)
            turn = window.controller.turns[-1]
            await until(lambda: turn.sentences and turn.sentences[0].audio_s > 0)  # the remote engine is speaking
            assert turn.sentences[0].engine == "WebSocket"
            await asyncio.to_thread(server.stop)  # shuts the endpoint down mid-reply
            await until(lambda: not turn.active, within_s=240)
            return turn

        turn = qloop.run_until_complete(scenario())
    finally:
        server.stop()

    assert turn.state is TurnState.DONE, turn.error
    engines = [s.engine for s in turn.sentences]
    assert engines[0] == "WebSocket" and engines[-1] == "Local"
    assert engines == sorted(engines, key=lambda e: e == "Local")  # remote first, then local, never back
    rows = window.latency.timeline.sentences  # the latency panel names the engine that spoke each row
    assert [(s.seq, s.engine) for s in rows] == [(k, engine) for k, engine in enumerate(engines)]
    assert rows[-1].engine_seq is not None and all(s.first_byte_at_s is not None for s in rows)
    # Every word of the reply was spoken exactly once, across both engines.
    assert " ".join(s.text for s in turn.sentences).split() == REPLY.split()
    assert all(s.audio_s > 0 for s in turn.sentences)
    assert any("continued on the local engine" in note for note in turn.notes)
    assert "Continuing on the local engine" in window.status.text
    assert window.hub.status.state is EngineState.DISCONNECTED  # the switcher shows the lost connection
    view = window.conversation.views[turn.id]
    assert any("continued on the local engine" in chip.text() for chip in view._chips)
