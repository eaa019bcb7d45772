"""Home Assistant as the agent (issue 29 points 4 and 7): a question typed into the real window goes to a real Home
Assistant's conversation API, its Assist switches a template light, and its answer is spoken by the real (random
weight) Kokoro into the null sink; a refused token and a Home Assistant that is down fail the turn with a message
saying what to do, and the question stays there to be asked again.

Home Assistant runs from ``.cache/ha-venv`` (tests/support/install_home_assistant.sh) with a package holding only
``conversation:``, an input_boolean and a template light over it: nothing beyond what its core needs.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMessageBox

from tests.app.helpers import until
from tests.app.test_app_audio import PREBUFFER_S, player_factory
from tests.support.audio_capture import SinkCapture, locate, require_null_sink
from tests.support.home_assistant import HA_VENV, HomeAssistant, hass_executable
from tests.support.net import free_port
from voicedesk.app.choices import make_source
from voicedesk.app.conversation import TurnState
from voicedesk.app.settings import AppSettings
from voicedesk.app.sources import ChatMessage
from voicedesk.app.sources.home_assistant import HomeAssistantSource
from voicedesk.engine.audio import pcm16_to_float
from voicedesk.engine.errors import LocalErrorCode, VoicedeskError

needs_home_assistant = pytest.mark.skipif(
    hass_executable() is None,
    reason=f"no Home Assistant in {HA_VENV}: run tests/run.sh (it installs it; needs Python 3.13)",
)
LIGHT = "light.kitchen_light"
KITCHEN = """\
conversation:
input_boolean:
  kitchen_power:
    name: Kitchen power
light:
  - platform: template
    lights:
      kitchen_light:
        friendly_name: Kitchen light
        value_template: "{{ is_state('input_boolean.kitchen_power', 'on') }}"
        turn_on:
          action: input_boolean.turn_on
          target: {entity_id: input_boolean.kitchen_power}
        turn_off:
          action: input_boolean.turn_off
          target: {entity_id: input_boolean.kitchen_power}
"""


@pytest.fixture(scope="module")
def house(tmp_path_factory) -> Iterator[HomeAssistant]:
    ha = HomeAssistant(tmp_path_factory.mktemp("home-assistant"), None, packages={"kitchen": KITCHEN})
    try:
        ha.start()
        yield ha
    finally:
        ha.stop()


def light_is(house: HomeAssistant, state: str) -> None:
    house.call("light", f"turn_{state}", entity_id=LIGHT)
    assert house.state(LIGHT)["state"] == state


def ask(window, qtbot, question: str, url: str, token: str) -> None:
    """The Agent card set to Home Assistant as a person would (the token pasted), then the question asked."""
    agent = window.sidebar.agent
    agent.source.setCurrentIndex(agent.source.findData("homeassistant"))
    for edit, text in ((agent.ha_url, url), (agent.ha_token, token)):
        edit.clear()
        qtbot.keyClicks(edit, text)
    qtbot.mouseClick(window.composer.mode.buttons["agent"], Qt.MouseButton.LeftButton)
    qtbot.keyClicks(window.composer.editor, question)
    qtbot.mouseClick(window.composer.speak, Qt.MouseButton.LeftButton)


async def turn_ended(window, count: int):
    await until(lambda: len(window.controller.turns) == count and not window.controller.turns[-1].active)
    return window.controller.turns[-1]


@needs_home_assistant
@pytest.mark.slow
@pytest.mark.audio
def test_a_typed_command_switches_the_light_and_home_assistants_answer_is_heard(make_window, qtbot, qloop, house):
    light_is(house, "on")
    with SinkCapture(require_null_sink()) as capture:
        window = make_window(player_factory=player_factory(PREBUFFER_S))
        assert window.controller.player is not None, window.banners.visible_texts()
        ask(window, qtbot, "Turn off the kitchen light", house.url, house.token)
        turn = qloop.run_until_complete(turn_ended(window, 1))
        assert (turn.state, turn.error) == (TurnState.DONE, None)
        assert house.state(LIGHT)["state"] == "off"
        assert " ".join(s.text for s in turn.sentences) == "Turned off the light"  # Assist's own answer
        qloop.run_until_complete(asyncio.sleep(window.controller.player.output_latency_s + 0.3))  # plays out
        run = window.controller.last_run
        first_conversation = window.agent.source.conversation_id

        # The next question continues Home Assistant's conversation (it answers with the id it was sent).
        qtbot.keyClicks(window.composer.editor, "Turn on the kitchen light")
        qtbot.mouseClick(window.composer.speak, Qt.MouseButton.LeftButton)
        assert qloop.run_until_complete(turn_ended(window, 2)).state is TurnState.DONE
        assert house.state(LIGHT)["state"] == "on"
        assert first_conversation and window.agent.source.conversation_id == first_conversation
        qloop.run_until_complete(window.shutdown())
        captured = capture.stop()
    spoken = pcm16_to_float(b"".join(run.pcm))
    assert spoken.size > 0
    start = locate(captured, spoken)
    assert np.array_equal(captured[start : start + spoken.size], spoken)  # the answer, sample for sample


@needs_home_assistant
@pytest.mark.slow
def test_a_refused_token_fails_the_turn_and_asking_again_with_the_right_one_works(make_window, qtbot, qloop, house):
    light_is(house, "on")
    window = make_window()
    ask(window, qtbot, "Turn off the kitchen light", house.url, "not-the-token")
    turn = qloop.run_until_complete(turn_ended(window, 1))
    assert turn.state is TurnState.FAILED
    assert f"Home Assistant at {house.url} refused the access token" in turn.error
    assert "Token field" in turn.error and "refused the access token" in window.status.text
    assert window.composer.text() == "Turn off the kitchen light"  # back in the composer
    view = window.conversation.views[turn.id]
    assert view.retry.isVisible()
    assert house.state(LIGHT)["state"] == "on"

    window.composer.editor.clear()
    window.sidebar.agent.ha_token.setText(house.token)  # pasted
    qtbot.mouseClick(view.retry, Qt.MouseButton.LeftButton)  # ↻ Ask again
    retried = qloop.run_until_complete(turn_ended(window, 2))
    assert (retried.prompt, retried.state) == ("Turn off the kitchen light", TurnState.DONE)
    assert house.state(LIGHT)["state"] == "off"
    assert window.controller.turns[0] is turn and turn.state is TurnState.FAILED  # the failed one stays shown


def test_a_home_assistant_that_is_down_fails_the_turn_with_the_address_and_keeps_the_question(
    make_window, qtbot, qloop
):
    window = make_window()
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    ask(window, qtbot, "Turn off the kitchen light", url, "some-token")
    turn = qloop.run_until_complete(turn_ended(window, 1))
    assert turn.state is TurnState.FAILED
    assert f"Could not reach Home Assistant at {url}" in turn.error and "Is it running?" in turn.error
    assert window.composer.text() == "Turn off the kitchen light"
    assert window.conversation.views[turn.id].retry.isVisible()  # ↻ Ask again, once it is up


@needs_home_assistant
async def test_an_agent_home_assistant_does_not_have_is_named(house):
    source = HomeAssistantSource(house.url, house.token, agent_id="conversation.nope")
    with pytest.raises(VoicedeskError) as raised:
        async for _ in source.reply([ChatMessage("user", "Turn on the kitchen light")]):
            pass
    assert raised.value.code == LocalErrorCode.USAGE
    assert "no conversation agent 'conversation.nope'" in raised.value.message


@needs_home_assistant
async def test_the_conversation_starts_afresh_when_the_app_does(house):
    """Home Assistant's conversation id is sent back while the app's conversation goes on, and dropped with it."""
    source = HomeAssistantSource(house.url, house.token, language="en-GB")
    question = ChatMessage("user", "Turn on the kitchen light")
    said = [fragment async for fragment in source.reply([question])]
    first = source.conversation_id
    assert said == ["Turned on the light"] and first
    said = [f async for f in source.reply([question, ChatMessage("assistant", said[0]), question])]
    assert source.conversation_id == first
    said = [f async for f in source.reply([question])]  # "New conversation" in the app: nothing before it
    assert source.conversation_id not in (None, first)


@needs_home_assistant
@pytest.mark.slow
def test_the_token_goes_over_plain_http_to_another_host_only_if_the_person_says_so(make_window, qtbot, qloop, house):
    host = socket.gethostname()
    assert socket.gethostbyname(host).startswith("127."), "this test needs the machine's name to be on loopback"
    light_is(house, "on")
    window = make_window()
    ask(window, qtbot, "Turn off the kitchen light", house.url.replace("127.0.0.1", host), house.token)

    async def answer(button: str) -> None:
        await until(lambda: _question() is not None)
        box = _question()
        assert "unencrypted" in box.text() and host in box.text()
        qtbot.mouseClick(next(b for b in box.buttons() if b.text() == button), Qt.MouseButton.LeftButton)

    qloop.run_until_complete(answer("Ask without the token"))
    qloop.run_until_complete(until(lambda: "chose not to send the token" in window.status.text))
    assert window.composer.text() == "Turn off the kitchen light" and not window.controller.turns
    assert house.state(LIGHT)["state"] == "on"


def _question() -> QMessageBox | None:
    boxes = [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible()]
    return boxes[0] if boxes else None


async def test_without_a_token_it_says_where_to_get_one():
    with pytest.raises(VoicedeskError) as raised:
        await HomeAssistantSource("http://127.0.0.1:9", None).reply([ChatMessage("user", "Hello")]).__anext__()
    assert raised.value.code == "unauthorized"
    assert "long-lived access token" in raised.value.message and "HASS_TOKEN" in raised.value.message


@needs_home_assistant
async def test_assist_is_asked_in_the_voices_language_unless_the_settings_name_one(house):
    settings = AppSettings()
    settings.source.kind, settings.source.ha_url, settings.voice.voice = "homeassistant", house.url, "ff_siwis"
    light_is(house, "on")
    said = [f async for f in make_source(settings, house.token).reply([ChatMessage("user", "Éteins Kitchen light")])]
    assert said == ["Éteint"] and house.state(LIGHT)["state"] == "off"
    settings.source.ha_language = "en"
    said = [f async for f in make_source(settings, house.token).reply([ChatMessage("user", "Turn on Kitchen light")])]
    assert said == ["Turned on the light"] and house.state(LIGHT)["state"] == "on"
