"""``voicedesk announcer --listen``: push-to-talk from the house over real MQTT (Mosquitto) and HTTP, a wake word,
espeak-ng speech played into the virtual microphone, heard by real capture, VAD and tiny.en; what is heard goes out
on MQTT, or to the agent (here the scripted one) whose answer is said as the console's next turn."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
from dataclasses import replace

import httpx
import pytest

from tests.app.house.helpers import outcomes, running_console, until
from tests.app.test_home_assistant_agent import KITCHEN, LIGHT, light_is, needs_home_assistant
from tests.app.voice.conftest import mic_input, pactl, play_into, words
from tests.support.home_assistant import HomeAssistant
from voicedesk.app.house import listening as house_listening
from voicedesk.app.house.cli import listen_from_args, register
from voicedesk.app.house.listening import ListenConfig
from voicedesk.app.sources.scripted import ScriptedSource
from voicedesk.app.voice.turns import Mode
from voicedesk.app.voice.voice_input import VoiceSettings
from voicedesk.engine.errors import UsageError

COMMAND = "Turn off the kitchen lights."


def listening(mic: str, whisper, **config) -> ListenConfig:
    voice = VoiceSettings(enabled=True, input_device=mic_input(mic), mode=Mode.PUSH_TO_TALK, stt_device="cpu")
    return ListenConfig(voice, transcriber=whisper, **config)


async def test_a_wall_button_over_mqtt_opens_a_turn_and_what_is_heard_goes_out_on_mqtt(
    broker, listen, virtual_mic, speech, whisper
):
    async with running_console(broker.port, listen=listening(virtual_mic, whisper)) as house:
        base = house.mqtt.topics.base
        house_side = listen(f"{base}/heard", f"{base}/state", f"{base}/error", "homeassistant/#")
        button = house_side.next(f"homeassistant/button/{house.mqtt.settings.node_id}/listen/config")
        assert button["command_topic"] == f"{base}/listen" and button["payload_press"] == "start"
        await until(lambda: house.ears.input.listening, 30)
        house_side.publish(f"{base}/listen", "sing")  # not a listen command: refused, saying which
        refused = await asyncio.to_thread(house_side.next, f"{base}/error", 10)
        assert "'start' or 'stop'" in refused["error"] and refused["topic"] == f"{base}/listen"
        house_side.publish(f"{base}/listen", button["payload_press"])  # what Home Assistant's button sends
        await asyncio.to_thread(house_side.next, f"{base}/state", 10, lambda s: s["state"] == "listening")
        await play_into(virtual_mic, speech(COMMAND))
        heard = await asyncio.to_thread(house_side.next, f"{base}/heard", 60)
        assert words(heard["text"]) == words(COMMAND) and heard["agent"] is None
        await asyncio.to_thread(house_side.next, f"{base}/state", 10, lambda s: s["state"] == "idle")
        assert not house.runner.core.listening


async def test_post_listen_asks_the_agent_and_its_answer_is_said(virtual_mic, speech, whisper):
    agent = ScriptedSource(50.0, script="The kitchen lights are off.")
    config = listening(virtual_mic, whisper, agent=agent)
    async with running_console(None, http_port=0, http_token="s3cret", listen=config) as house:
        await until(lambda: house.ears.input.listening, 30)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{house.http.port}") as client:
            refused = await client.post("/listen")
            assert refused.status_code == 401  # the same token rules as /announce
            auth = {"Authorization": "Bearer s3cret"}
            bad = await client.post("/listen", content="later", headers=auth)
            assert bad.status_code == 400 and "'start' or 'stop'" in bad.json()["error"]
            started = await client.post("/listen", headers=auth)
            assert started.status_code == 202 and started.json() == {"listening": True}
        await play_into(virtual_mic, speech(COMMAND))
        await until(lambda: outcomes(house), 90)
    (report,) = outcomes(house)
    assert report.source.value == "voice" and words(report.text) == words(COMMAND)
    assert report.outcome.value == "spoken"
    turn = house.controller.turns[-1]
    assert turn.prompt == report.text and "kitchen lights are off" in turn.text


async def test_the_wake_word_opens_a_turn(broker, listen, virtual_mic, speech, whisper):
    async with running_console(broker.port, listen=listening(virtual_mic, whisper, wake_word="okay_nabu")) as house:
        base = house.mqtt.topics.base
        house_side = listen(f"{base}/heard")
        await until(lambda: house.ears.input.listening, 30)
        await play_into(virtual_mic, speech("Set the thermostat to twenty one."))  # no wake word: not a turn
        await play_into(virtual_mic, speech("Okay Nabu", "-v", "en-us", "-s", "150"))
        await play_into(virtual_mic, speech(COMMAND))
        heard = await asyncio.to_thread(house_side.next, f"{base}/heard", 60)
        assert house.ears.wakes == 1
        assert "kitchen lights" in words(heard["text"]) and "thermostat" not in words(heard["text"])


async def test_a_console_that_does_not_listen_says_so():
    async with running_console(None, http_port=0) as house:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{house.http.port}") as client:
            reply = await client.post("/listen")
        assert reply.status_code == 409 and "--listen" in reply.json()["error"]


async def test_a_missing_microphone_is_said_and_tried_again(whisper):
    config = listening("nowhere", whisper)
    async with running_console(None, http_port=0, listen=config) as house:
        await until(lambda: house.ears._closed, 30)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{house.http.port}") as client:
            reply = await client.post("/listen")
        error = reply.json()["error"]
        assert reply.status_code == 503 and "microphone is not open" in error and "not connected" in error
        assert "tried again every 10 s" in error and not house.runner.core.listening


async def test_a_microphone_plugged_in_later_is_listened_to_and_its_absence_logged_once(whisper, monkeypatch, caplog):
    """A console started before its microphone: the problem is logged once however often it is tried again, and the
    microphone is listened to once it is there (a PulseAudio sink made after the start, its monitor the input)."""
    monkeypatch.setattr(house_listening, "MICROPHONE_RETRY_S", 0.5)  # 10 s in the product
    later = f"voicedesk_later_{os.getpid()}"
    caplog.set_level(logging.DEBUG, logger=house_listening.__name__)
    async with running_console(None, http_port=0, listen=listening(later, whisper)) as house:
        await until(lambda: "still" in caplog.text, 30)  # tried again, in vain
        told = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(told) == 1 and "not connected" in told[0].getMessage(), caplog.text
        module = pactl("load-module", "module-null-sink", f"sink_name={later}", "rate=16000", "channels=1").strip()
        try:
            await until(lambda: house.ears.input.listening, 30)
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{house.http.port}") as client:
                assert (await client.post("/listen")).status_code == 202
        finally:
            pactl("unload-module", module)


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    return parser.parse_args(["announcer", *argv])


def test_listen_options_are_checked_before_anything_starts(monkeypatch):
    monkeypatch.delenv("HASS_TOKEN", raising=False)
    assert listen_from_args(_args("--mqtt", "localhost")) is None
    for argv, message in [
        (("--listen", "--http-port", "8766"), "would go nowhere"),
        (("--wake-word", "hey_nabu", "--mqtt", "h"), "no such model"),
        (("--listen", "--ha-url", "http://ha:8123", "--mqtt", "h"), "needs a token in $HASS_TOKEN"),
        (("--listen", "--ha-url", "ha:8123", "--mqtt", "h"), "--ha-url"),
        (("--listen", "--end-silence", "9", "--mqtt", "h"), "end_silence_s"),
        (("--listen", "--wyoming-stt", "tcp://ha:10300", "--stt-timeout", "0.1", "--mqtt", "h"), "stt_timeout_s"),
        (("--listen", "--wyoming-stt", "ha:10300", "--mqtt", "h"), "not a Wyoming speech-to-text address"),
    ]:
        with pytest.raises(UsageError, match=message.replace("$", r"\$")):
            listen_from_args(_args(*argv))
    monkeypatch.setenv("HASS_TOKEN", "t")
    config = listen_from_args(_args("--wake-word", "okay_nabu", "--ha-url", "http://ha:8123", "--voice", "bf_emma"))
    assert config.wake_word == "okay_nabu" and config.voice.mode is Mode.PUSH_TO_TALK
    assert config.agent.base_url == "http://ha:8123" and config.agent.language == "en-GB"
    assert json.dumps(config.voice.to_dict())  # a plain settings object
    config = listen_from_args(
        _args("--listen", "--wyoming-stt", "tcp://ha:10300", "--stt-timeout", "40", "--mqtt", "h")
    )
    assert (config.voice.stt, config.voice.wyoming_uri, config.voice.stt_timeout_s) == ("wyoming", "tcp://ha:10300", 40)


@pytest.mark.slow
@needs_home_assistant
async def test_a_spoken_command_switches_a_light_in_home_assistant_and_its_answer_is_said(
    tmp_path, monkeypatch, virtual_mic, speech, whisper
):
    ha = HomeAssistant(tmp_path / "ha", None, packages={"kitchen": KITCHEN})
    await asyncio.to_thread(ha.start)
    try:
        await asyncio.to_thread(light_is, ha, "on")
        monkeypatch.setenv("HASS_TOKEN", ha.token)
        argv = ("--listen", "--ha-url", ha.url, "--input-device", mic_input(virtual_mic), "--stt-device", "cpu")
        config = replace(listen_from_args(_args(*argv)), transcriber=whisper)  # as the command builds it
        async with running_console(None, http_port=0, listen=config) as house:
            await until(lambda: house.ears.input.listening, 30)
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{house.http.port}") as client:
                assert (await client.post("/listen")).status_code == 202
            await play_into(virtual_mic, speech("Turn off the kitchen light."))
            await until(lambda: outcomes(house), 120)
        (report,) = outcomes(house)
        assert report.source.value == "voice" and report.outcome.value == "spoken", report
        assert (await asyncio.to_thread(ha.state, LIGHT))["state"] == "off"
        answer = house.controller.turns[-1].text
        assert answer and answer != report.text  # Home Assistant's answer was said, not the question
    finally:
        await asyncio.to_thread(ha.stop)
