"""The SageMaker engine from the window, against the project's SageMaker stand-in (HTTP/2 + TLS + SigV4, the
bidirectional stream) in front of the real endpoint container: a wrong endpoint name is explained in the window,
the right one connects, and a reply is spoken through it."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from tests.app.helpers import until
from tests.support.endpoint import server_settings
from voicedesk.app.conversation import TurnState
from voicedesk.app.engines import EngineState

ENDPOINT = "voicedesk-app-test"
REGION = "us-east-1"


@pytest.fixture
def stand_in(synthesizer, tmp_path, monkeypatch):
    from tests.support.stand_in import StandInThread
    from voicedesk.app.lab.sagemaker_local.config import ContainerTarget, StandInConfig
    from voicedesk.endpoint.runner import ServerThread
    from voicedesk.endpoint.server import create_app

    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    container = ServerThread(create_app(synthesizer, server_settings(idle_timeout_s=120))).start()
    running = StandInThread(
        StandInConfig(ContainerTarget(container.http_url), endpoint_names=frozenset({ENDPOINT})), tmp_path / "state"
    ).start()
    # What `voicedesk sagemaker-local` prints: the SDK's endpoint and CA variables, and dummy credentials.
    for name, value in running.server.environment(REGION).items():
        monkeypatch.setenv(name, value)
    yield running
    running.stop()
    container.stop()


@pytest.mark.slow
def test_sagemaker_engine_explains_a_wrong_endpoint_then_speaks_through_the_right_one(
    stand_in, make_window, qtbot, qloop
):
    window = make_window()
    engine = window.sidebar.engine
    qtbot.mouseClick(engine.switch.buttons["sagemaker"], Qt.MouseButton.LeftButton)
    qtbot.keyClicks(engine.sm_endpoint, "no-such-endpoint")
    qtbot.keyClicks(engine.sm_region, REGION)
    qtbot.mouseClick(engine.sm_connect, Qt.MouseButton.LeftButton)

    async def scenario():
        await until(lambda: window.hub.status.kind == "sagemaker" and window.hub.status.state is EngineState.ERROR)
        assert "There is no endpoint 'no-such-endpoint' in us-east-1" in engine.message.text()
        assert engine.message.isVisible()
        assert "local engine instead" not in window.status.text  # a Connect click does not fall back

        engine.sm_endpoint.clear()
        qtbot.keyClicks(engine.sm_endpoint, ENDPOINT)
        qtbot.keyClick(engine.sm_endpoint, Qt.Key.Key_Return)
        await until(lambda: window.hub.status.state is EngineState.READY)
        assert window.sidebar.engine.status.title.text() == "Connected"
        assert ENDPOINT in window.sidebar.engine.status.detail.text()
        voice = window.sidebar.voice
        assert voice.note.isVisible() and "cannot list its voices" in voice.note.text()  # said, not guessed

        qtbot.keyClicks(window.composer.editor, "Hello from the cloud.")
        qtbot.mouseClick(window.composer.speak, Qt.MouseButton.LeftButton)
        await until(lambda: window.controller.turns and not window.controller.turns[-1].active)
        return window.controller.turns[-1]

    turn = qloop.run_until_complete(scenario())
    assert turn.state is TurnState.DONE
    assert [s.engine for s in turn.sentences] == ["SageMaker"]
    assert turn.sentences[0].audio_s > 0 and turn.sentences[0].finished
