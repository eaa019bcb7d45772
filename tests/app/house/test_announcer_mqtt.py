"""The headless announcer against a real Mosquitto broker with real paho clients: every priority, TTL expiry,
merging, refused payloads (and nothing disturbed), a broker restart, and Home Assistant discovery."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from tests.app.house.helpers import outcomes, paced_opener, running_console, until
from voicedesk.app.console.announcement import Request
from voicedesk.app.console.core import Policy
from voicedesk.app.lab.paced_synth import PacedSynthesizer
from voicedesk.app.settings import save_app_lexicon
from voicedesk.engine.text.frontend.lexicon import parse_lexicon


def nxt(listener, topic, within_s=60.0, where=lambda v: True):
    return asyncio.to_thread(listener.next, topic, within_s, where)


async def test_each_priority_is_said_and_its_outcome_and_the_state_published(broker, listen):
    async with running_console(broker.port) as house:
        topics = house.mqtt.topics
        client = listen(topics.outcome, topics.state)
        for priority in ("urgent", "normal", "low"):
            client.publish(topics.say, json.dumps({"text": f"A {priority} one.", "priority": priority, "id": priority}))
        got = [await nxt(client, topics.outcome) for _ in range(3)]
        assert {(o["id"], o["outcome"], o["priority"], o["source"]) for o in got} == {
            ("urgent", "spoken", "urgent", "mqtt"),
            ("normal", "spoken", "normal", "mqtt"),
            ("low", "spoken", "low", "mqtt"),
        }
        client.publish(topics.say, "Plain text works too.")
        plain = await nxt(client, topics.outcome)
        assert (plain["text"], plain["outcome"], plain["priority"]) == ("Plain text works too.", "spoken", "normal")
        state = await nxt(client, topics.state, where=lambda s: s["state"] == "idle" and s["queued"] == 0)
        assert state["engine"] == "local" and state["engine_state"] == "ready"


async def test_a_low_one_expires_after_its_ttl_and_duplicates_merge(broker, listen):
    async with running_console(broker.port, realtime_factor=1.0) as house:  # synthesis at speaking pace: busy
        topics = house.mqtt.topics
        client = listen(topics.outcome)
        client.publish(topics.say, json.dumps({"text": "Four words take time.", "id": "long"}))
        await until(lambda: house.runner.core.current is not None)
        client.publish(topics.say, json.dumps({"text": "Too late.", "priority": "low", "ttl_s": 0.2, "id": "late"}))
        client.publish(topics.say, json.dumps({"text": "The washer is done.", "id": "w1"}))
        client.publish(topics.say, json.dumps({"text": "The washer is done.", "id": "w2"}))
        got = {}
        while len(got) < 4:
            outcome = await nxt(client, topics.outcome)
            got[outcome["id"]] = outcome
        assert got["late"]["outcome"] == "expired" and "TTL" in got["late"]["reason"]
        assert (got["w2"]["outcome"], got["w2"]["into"]) == ("merged", "w1")
        assert got["w1"]["outcome"] == got["long"]["outcome"] == "spoken"
        assert [r.text for r in outcomes(house) if r.outcome == "spoken"] == [
            "Four words take time.",
            "The washer is done.",  # once
        ]


async def test_malformed_payloads_are_refused_with_the_reason_and_nothing_else_is_disturbed(broker, listen):
    async with running_console(broker.port, realtime_factor=1.0) as house:
        topics = house.mqtt.topics
        client = listen(topics.outcome, topics.error, "test/replies")
        client.publish(topics.say, json.dumps({"text": "Queued before the junk.", "id": "good"}))
        await until(lambda: house.runner.core.current is not None)
        bad = {
            b'{"text": "unclosed': "not valid JSON",
            b'{"text": "x", "priority": "panic"}': "unknown priority 'panic'",
            b'{"priority": "low"}': "no 'text'",
            b"   ": "empty",
            b"\xff\xfe": "not UTF-8",
            b'{"text": "x", "ttl_s": -3}': "'ttl_s' must be above 0",
            b'{"text": "x", "chime": "gong"}': "unknown chime 'gong'",
            b'{"text": "x", "colour": "red"}': "unknown field(s) 'colour'",
        }
        for payload, reason in bad.items():
            client.publish(topics.say, payload)
            error = await nxt(client, topics.error)
            assert reason in error["error"], (payload, error)
        # An MQTT 5 request with a response topic gets the refusal there too.
        properties = Properties(PacketTypes.PUBLISH)
        properties.ResponseTopic = "test/replies"
        client.client.publish(topics.say, b'{"text": 5}', qos=1, properties=properties).wait_for_publish(10)
        reply = await nxt(client, "test/replies")
        assert "'text' must be a string" in reply["error"]
        done = await nxt(client, topics.outcome)
        assert (done["id"], done["outcome"]) == ("good", "spoken")
        assert [r.id for r in outcomes(house)] == ["good"]


async def test_the_announcer_survives_a_broker_restart_and_republishes_what_the_house_must_see(broker, listen):
    async with running_console(broker.port) as house:
        topics = house.mqtt.topics
        assert house.mqtt.connects == 1
        broker.restart()  # retained messages are gone with it (no persistence)
        await until(lambda: house.mqtt.connects == 2, within_s=60)
        client = listen(topics.outcome, topics.availability, topics.state, "homeassistant/#")
        assert await nxt(client, topics.availability, within_s=10) == "online"
        assert (await nxt(client, topics.state, within_s=10))["state"] in ("idle", "speaking")
        config = await nxt(client, f"homeassistant/button/{house.mqtt.settings.node_id}/stop/config", within_s=10)
        assert config["command_topic"] == topics.stop
        client.publish(topics.say, "Back again.")
        assert (await nxt(client, topics.outcome))["outcome"] == "spoken"


async def test_an_outcome_reached_while_the_broker_is_down_reaches_the_broker_after_it_returns(broker):
    async with running_console(broker.port, realtime_factor=1.0) as house:
        house.runner.submit(Request("While the broker is down."))
        broker.stop()
        try:
            await until(lambda: outcomes(house), within_s=60)
        finally:
            broker.start()
        await until(lambda: house.mqtt.connects == 2, within_s=60)
        # paho kept the QoS 1 outcome and sent it on reconnect: the broker acknowledged it (the out-queue drains).
        await until(lambda: not house.mqtt.client._out_messages, within_s=20)
        assert outcomes(house)[0].outcome == "spoken"


# ---- Home Assistant discovery -------------------------------------------------------------------------------

# Home Assistant's MQTT discovery schema, the keys each platform requires and the ones it knows (full names), as in
# homeassistant/components/mqtt/{binary_sensor,text,button,sensor}.py and abbreviations.py (2024.x).
COMMON_KEYS = {
    "name", "unique_id", "device", "availability_topic", "payload_available", "payload_not_available", "icon",
    "qos", "object_id", "entity_category", "enabled_by_default", "json_attributes_topic", "availability",
}  # fmt: skip
SCHEMA = {
    "binary_sensor": ({"state_topic"}, {"state_topic", "value_template", "payload_on", "payload_off", "device_class",
                                        "expire_after", "force_update", "off_delay"}),
    "text": ({"command_topic"}, {"command_topic", "command_template", "state_topic", "value_template", "mode",
                                 "min", "max", "pattern", "retain"}),
    "button": ({"command_topic"}, {"command_topic", "payload_press", "device_class", "retain"}),
    "sensor": ({"state_topic"}, {"state_topic", "value_template", "unit_of_measurement", "device_class",
                                 "state_class", "expire_after", "force_update"}),
}  # fmt: skip
DEVICE_KEYS = {"identifiers", "connections", "name", "manufacturer", "model", "sw_version", "hw_version",
               "suggested_area", "via_device", "configuration_url"}  # fmt: skip


def check_discovery(component: str, config: dict) -> None:
    required, specific = SCHEMA[component]
    assert required <= set(config), f"{component}: missing {required - set(config)}"
    assert set(config) <= COMMON_KEYS | specific, f"{component}: unknown keys {set(config) - COMMON_KEYS - specific}"
    assert isinstance(config["unique_id"], str) and config["unique_id"]
    device = config["device"]
    assert set(device) <= DEVICE_KEYS and (device.get("identifiers") or device.get("connections"))
    for key, value in config.items():
        if key.endswith("_topic"):
            assert isinstance(value, str) and value and "#" not in value and "+" not in value, key
    if component == "text":
        assert config["mode"] in ("text", "password") and 0 <= config["min"] <= config["max"] <= 255


async def test_discovery_messages_are_retained_and_meet_home_assistants_schema(broker, listen):
    async with running_console(broker.port) as house:
        node = house.mqtt.settings.node_id
        # Subscribed after the broker took the configs (paho's QoS 1 out-queue drained): they arrive as retained.
        await until(lambda: not house.mqtt.client._out_messages, within_s=20)
        client = listen(f"homeassistant/+/{node}/+/config")
        configs = {}
        while len(configs) < 4:
            topic, payload, retained = await asyncio.to_thread(client.messages.get, True, 10)
            assert retained, topic
            configs[topic] = json.loads(payload)
        components = {topic.split("/")[1]: config for topic, config in configs.items()}
        assert set(components) == {"binary_sensor", "text", "button", "sensor"}
        for component, config in components.items():
            check_discovery(component, config)
        identities = {json.dumps(c["device"], sort_keys=True) for c in components.values()}
        assert len(identities) == 1  # one device holds all four entities
        # The entities work: the "say" text entity's command topic speaks, the speaking sensor follows the state.
        topics = house.mqtt.topics
        watcher = listen(topics.outcome, topics.state)
        watcher.publish(components["text"]["command_topic"], "Said from Home Assistant.")
        assert (await nxt(watcher, topics.outcome))["outcome"] == "spoken"
        assert components["binary_sensor"]["state_topic"] == topics.state
        assert "value_json.state == 'speaking'" in components["binary_sensor"]["value_template"]


async def test_the_stop_button_cuts_what_is_being_said(broker, listen):
    async with running_console(broker.port, realtime_factor=0.5) as house:  # slower than speech: still going
        topics = house.mqtt.topics
        client = listen(topics.outcome)
        client.publish(topics.say, "One sentence here. And another one there. And a third.")
        await until(lambda: house.controller.run is not None and house.controller.run.turn.sentences)
        client.publish(topics.stop, "PRESS")
        report = await nxt(client, topics.outcome)
        assert (report["outcome"], report["reason"]) == ("interrupted", "stopped")


async def test_an_unknown_voice_is_said_in_the_default_one_and_the_outcome_says_so(broker, listen):
    """The engine refuses the voice, the session keeps its own: the words are said, and the house learns from the
    outcome's reason (not only from the console's log) that they were not said in the voice it asked for."""
    async with running_console(broker.port) as house:
        topics = house.mqtt.topics
        client = listen(topics.outcome)
        client.publish(topics.say, json.dumps({"text": "Dinner is ready.", "voice": "zz_nobody", "id": "odd"}))
        client.publish(topics.say, json.dumps({"text": "The door is locked.", "id": "plain"}))
        got = [await nxt(client, topics.outcome) for _ in range(2)]
        assert [(o["id"], o["outcome"]) for o in got] == [("odd", "spoken"), ("plain", "spoken")]
        assert "zz_nobody" in got[0]["reason"] and "af_heart" in got[0]["reason"]  # which voice, and what there is
        assert "reason" not in got[1]  # the next one, in the default voice, has nothing to tell
        said = [turn for turn in house.controller.turns if turn.prompt == "Dinner is ready."]
        assert said and said[0].audio_s > 0


async def test_plain_text_with_a_name_fixed_inline_is_said_and_the_lexicon_file_is_read_again_when_it_changes(
    broker, listen, tmp_path
):
    """Issue 33.5: ``[Name](/phonemes/) is at the door.`` was refused as bad JSON; and the announcer had no lexicon.
    Its lexicon is the window's file (``--lexicon`` another): edited while it runs, the next announcement uses it."""
    lexicon = tmp_path / "lexicon.json"
    save_app_lexicon(parse_lexicon([{"word": "Siobhan", "phonemes": "ʃɪvˈɔn"}]), lexicon)
    synthesizer = PacedSynthesizer(20.0)
    async with running_console(broker.port, opener=paced_opener(synthesizer), lexicon_file=lexicon) as house:
        topics = house.mqtt.topics
        client = listen(topics.outcome, topics.error)
        client.publish(topics.say, "[Aoife](/ˈiːfə/) is at the door.")
        said = await nxt(client, topics.outcome)
        assert (said["outcome"], said["text"]) == ("spoken", "[Aoife](/ˈiːfə/) is at the door.")
        assert [e.word for e in synthesizer.calls[-1].settings.lexicon.entries] == ["Siobhan"]
        await asyncio.sleep(0.05)  # a later modification time than the first version's, on any file system
        save_app_lexicon(parse_lexicon([{"word": "Niamh", "phonemes": "nˈiːv"}]), lexicon)
        client.publish(topics.say, "Niamh is home.")
        assert (await nxt(client, topics.outcome))["outcome"] == "spoken"
        assert [e.word for e in synthesizer.calls[-1].settings.lexicon.entries] == ["Niamh"]


def test_an_announcer_refused_for_its_options_leaves_nothing_in_home_assistant(broker, listen):
    """Issue 33.6: on 0.0.0.0 without a token it was refused only after loading the model and publishing discovery,
    leaving a device in Home Assistant that never ran. The options are checked first: refused at once, nothing sent."""
    env = {k: v for k, v in os.environ.items() if k != "VOICEDESK_ANNOUNCER_TOKEN"}
    command = [sys.executable, "-m", "voicedesk.engine.commands", "announcer", "--mqtt", f"127.0.0.1:{broker.port}"]
    command += ["--name", "refused", "--http-host", "0.0.0.0", "--http-port", "0", "--engine", "local"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode != 0 and "without a token" in done.stderr, done.stderr
    client = listen("homeassistant/#", "voicedesk/refused/#")  # retained messages arrive on subscribing
    with pytest.raises(TimeoutError):
        client.next("homeassistant/binary_sensor/refused/speaking/config", within_s=2)


async def test_the_one_playing_absorbs_its_copies_however_long_it_waited(broker, listen):
    """Issue 33.3: merging counted from when the first copy arrived, so a copy of the one playing, which had waited
    longer than the merge window, was said again right after it."""
    async with running_console(broker.port, realtime_factor=1.0, policy=Policy(merge_window_s=1.0)) as house:
        topics = house.mqtt.topics
        client = listen(topics.outcome)
        client.publish(topics.say, json.dumps({"text": "One two three four five six.", "id": "first"}))
        client.publish(topics.say, json.dumps({"text": "The washer is done.", "id": "w1"}))
        core = house.runner.core
        await until(lambda: core.current is not None and core.current.id == "w1")  # it waited well over 1 s
        client.publish(topics.say, json.dumps({"text": "The washer is done.", "id": "w2"}))
        got = {}
        while len(got) < 3:
            outcome = await nxt(client, topics.outcome)
            got[outcome["id"]] = outcome
    assert (got["w2"]["outcome"], got["w2"].get("into")) == ("merged", "w1")
    assert [r.text for r in outcomes(house) if r.outcome == "spoken"].count("The washer is done.") == 1


async def test_the_shell_commands_docs_house_md_gives_work(broker, listen):
    """docs/house.md tells users to try mosquitto_pub (tests/run.sh installs mosquitto-clients for it)."""
    async with running_console(broker.port) as house:
        topics = house.mqtt.topics
        client = listen(topics.outcome)
        command = ["mosquitto_pub", "-p", str(broker.port), "-t", topics.say, "-m", "The mail is here."]
        published = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=30)
        assert published.returncode == 0, published.stderr
        outcome = await nxt(client, topics.outcome)
        assert (outcome["text"], outcome["outcome"]) == ("The mail is here.", "spoken")
