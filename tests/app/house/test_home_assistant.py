"""The console in a real Home Assistant: its MQTT discovery makes one device with the "speaking" sensor, the "say"
text entity, the "stop" button and the state sensor (no YAML on Home Assistant's side, only the MQTT integration's
config entry pointing at the test broker), Home Assistant's own services on those entities reach the console, a
restarted Home Assistant finds it again, and the recipes in docs/house.md work as written.

Home Assistant runs from its own Python 3.13 venv (``.cache/ha-venv``), which tests/run.sh makes unless
``VOICEDESK_HOME_ASSISTANT=0`` (see docs/testing.md); without that venv these tests are skipped, saying why.
"""

from __future__ import annotations

import argparse
import asyncio
import queue
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.app.house.helpers import running_console, until
from tests.support.home_assistant import HA_VENV, HA_VERSION, HomeAssistant, hass_executable
from tests.support.net import free_port
from voicedesk.app.house.cli import add_input_arguments, mqtt_from_args

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        hass_executable() is None,
        reason=f"no Home Assistant in {HA_VENV}: run tests/run.sh (it installs it; needs Python 3.13)",
    ),
]

ENTITIES = ("speaking", "say", "stop", "state")
HOUSE_DOC = Path(__file__).resolve().parents[3] / "docs" / "house.md"
DOC_CONSOLE_URL = "http://hallway-console.local:8766"
"""Where the docs' rest_command recipe reaches the console; the test's console listens on loopback instead."""
RECIPE_TOKEN = "recipe-token"


def doc_recipes(http_port: int) -> dict[str, str]:
    """The YAML blocks of docs/house.md's Home Assistant section, as Home Assistant packages."""
    section = HOUSE_DOC.read_text().split("\n## Home Assistant\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert len(blocks) == 3 and sum(block.count(DOC_CONSOLE_URL) for block in blocks) == 1, "the recipes changed"
    return {
        f"recipe_{number}": block.replace(DOC_CONSOLE_URL, f"http://127.0.0.1:{http_port}")
        for number, block in enumerate(blocks, start=1)
    }


@pytest.fixture(scope="module")
def recipe_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def home_assistant(broker, tmp_path_factory, recipe_port) -> Iterator[HomeAssistant]:
    ha = HomeAssistant(
        tmp_path_factory.mktemp("home-assistant"),
        broker.port,
        packages=doc_recipes(recipe_port),
        secrets={"console_token_header": f"Bearer {RECIPE_TOKEN}"},
    )
    try:
        ha.start()
        assert ha.rest("GET", "/api/config")["version"] == HA_VERSION
        yield ha
    finally:
        ha.stop()


async def discovered(ha: HomeAssistant, node_id: str) -> dict[str, str]:
    """Our four entities once Home Assistant has them all and they are available: role → entity id. (Registered
    comes before available: Home Assistant skips a service call on an entity not yet available, e.g. Say.)"""
    wanted = {f"voicedesk_{node_id}_{role}": role for role in ENTITIES}
    found: dict[str, str] = {}

    async def all_there() -> bool:
        entities = await asyncio.to_thread(ha.entities)
        found.clear()
        found.update({wanted[e.unique_id]: e.entity_id for e in entities if e.unique_id in wanted})
        if len(found) < len(wanted):
            return False
        states = await asyncio.gather(*(ha_state(ha, entity_id) for entity_id in found.values()))
        return "unavailable" not in states

    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while not await all_there():
        assert loop.time() < deadline, f"Home Assistant has {found} of {ENTITIES}: {ha.tail()}"
        await asyncio.sleep(0.2)
    return found


async def ha_state(ha: HomeAssistant, entity_id: str) -> str:
    try:
        return (await asyncio.to_thread(ha.state, entity_id))["state"]
    except httpx.HTTPStatusError as exc:
        if exc.response.status_code == 404:  # registered, not yet in the state machine
            return "absent"
        raise


async def until_ha(ha: HomeAssistant, entity_id: str, state: str, within_s: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    while (seen := await ha_state(ha, entity_id)) != state:
        assert loop.time() < deadline, f"{entity_id} stayed {seen!r}, expected {state!r}"
        await asyncio.sleep(0.1)


async def test_home_assistant_shows_the_console_as_one_device_with_its_entities(broker, home_assistant):
    ha = home_assistant
    async with running_console(broker.port) as house:
        node = house.mqtt.settings.node_id
        entities = await discovered(ha, node)
        assert {role: entity_id.split(".")[0] for role, entity_id in entities.items()} == {
            "speaking": "binary_sensor",
            "say": "text",
            "stop": "button",
            "state": "sensor",
        }
        registry = {e.entity_id: e for e in await asyncio.to_thread(ha.entities)}
        device_ids = {registry[entity_id].device_id for entity_id in entities.values()}
        assert len(device_ids) == 1 and None not in device_ids  # one device holds all four
        device = (await asyncio.to_thread(ha.devices))[device_ids.pop()]
        assert ["mqtt", f"voicedesk_{node}"] in device["identifiers"]
        assert (device["name"], device["manufacturer"], device["model"]) == (
            house.mqtt.settings.name,
            "voicedesk",
            "voicedesk announcer",
        )
        # Available (our availability topic says online) and reading the console's retained state.
        await until_ha(ha, entities["state"], "idle")
        await until_ha(ha, entities["speaking"], "off")
        say = await asyncio.to_thread(ha.state, entities["say"])
        assert say["state"] != "unavailable" and say["attributes"]["mode"] == "text"
        assert await ha_state(ha, entities["stop"]) != "unavailable"
        # The console going away shows as unavailable (its last word on the availability topic).
    await until_ha(ha, entities["speaking"], "unavailable")


async def test_home_assistants_say_and_stop_reach_the_console(broker, listen, home_assistant):
    ha = home_assistant
    async with running_console(broker.port, realtime_factor=0.5) as house:  # slower than speech: still going
        entities = await discovered(ha, house.mqtt.settings.node_id)
        await until_ha(ha, entities["speaking"], "off")
        watcher = listen(house.mqtt.topics.outcome)
        commands: queue.Queue[tuple[str, bytes, int]] = queue.Queue()
        spy = listen(house.mqtt.topics.say, house.mqtt.topics.stop)
        spy.client.on_message = lambda _client, _userdata, m: commands.put((m.topic, bytes(m.payload), m.qos))

        text = "Said from Home Assistant. It keeps going for a while. And a third sentence."
        await asyncio.to_thread(ha.call, "text", "set_value", entity_id=entities["say"], value=text)
        # Published by Home Assistant at the QoS the discovery asks for (1), so a broker keeps it for the console.
        assert await asyncio.to_thread(commands.get, True, 30) == (house.mqtt.topics.say, text.encode(), 1)
        await until(lambda: house.controller.run is not None and house.controller.run.turn.sentences)
        # Home Assistant sees it speaking, through the state the console publishes.
        await until_ha(ha, entities["speaking"], "on")
        assert await ha_state(ha, entities["state"]) == "speaking"

        await asyncio.to_thread(ha.call, "button", "press", entity_id=entities["stop"])
        assert await asyncio.to_thread(commands.get, True, 30) == (house.mqtt.topics.stop, b"PRESS", 1)
        report = await asyncio.to_thread(watcher.next, house.mqtt.topics.outcome, 60.0)
        assert (report["text"], report["source"]) == (text, "mqtt")
        assert (report["outcome"], report["reason"]) == ("interrupted", "stopped")
        await until_ha(ha, entities["speaking"], "off")
        assert await ha_state(ha, entities["state"]) == "idle"


async def test_a_restarted_home_assistant_finds_the_console_again(broker, home_assistant):
    """The discovery configs, the availability and the state are retained, so Home Assistant coming back (an
    update, a reboot) knows the console at once, without the console reconnecting."""
    ha = home_assistant
    async with running_console(broker.port) as house:
        entities = await discovered(ha, house.mqtt.settings.node_id)
        await until_ha(ha, entities["state"], "idle")
        connects = house.mqtt.connects
        await asyncio.to_thread(ha.restart)
        await until_ha(ha, entities["state"], "idle")
        await until_ha(ha, entities["speaking"], "off")
        assert await ha_state(ha, entities["say"]) != "unavailable"
        assert house.mqtt.connects == connects  # nothing was sent again by the console


async def test_the_home_assistant_recipes_in_the_docs_reach_the_console(broker, listen, home_assistant, recipe_port):
    """docs/house.md's three automations, loaded by Home Assistant as written (the rest_command's host aside), each
    fired by its trigger's state: the leak over MQTT, the washer over HTTP with the token, the doorbell through the
    discovered Say entity; on a console started with the announcer's options for the name the docs use."""
    ha = home_assistant
    parser = argparse.ArgumentParser()
    add_input_arguments(parser)
    args = parser.parse_args(["--mqtt", f"127.0.0.1:{broker.port}", "--name", "Hallway console"])
    settings = mqtt_from_args(args)
    async with running_console(None, mqtt=settings, http_port=recipe_port, http_token=RECIPE_TOKEN) as house:
        entities = await discovered(ha, settings.node_id)
        assert entities["say"] == "text.hallway_console_say"  # the entity id the doorbell recipe names
        watcher = listen(house.mqtt.topics.outcome)
        for entity_id, before, after, expected in (
            ("binary_sensor.basement_leak", "off", "on", ("Water leak in the basement!", "mqtt", "urgent")),
            ("sensor.washer_state", "running", "idle", ("The washing machine has finished.", "http", "low")),
            ("binary_sensor.doorbell", "off", "on", ("Someone is at the front door.", "mqtt", "normal")),
        ):
            for state in (before, after):  # the trigger's device, as a state set through Home Assistant's API
                await asyncio.to_thread(ha.rest, "POST", f"/api/states/{entity_id}", {"state": state})
            try:
                report = await asyncio.to_thread(watcher.next, house.mqtt.topics.outcome, 60.0)
            except TimeoutError:
                raise AssertionError(f"nothing said for {entity_id}: {ha.tail()}") from None
            assert (report["text"], report["source"], report["priority"]) == expected
            assert report["outcome"] == "spoken"
