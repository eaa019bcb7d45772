"""The desktop window takes announcements from the house too: MQTT and HTTP into its own queue, shown with their
source in the queue and the history, and outcomes back on MQTT (the real window, the real Kokoro, a real broker)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from tests.app.helpers import ARTIFACTS, until
from voicedesk.app.house.mqtt import MqttSettings
from voicedesk.app.house.window_house import HouseInputs


def rows(widget) -> list[str]:
    return [widget.item(i).text() for i in range(widget.count())]


@pytest.mark.slow  # the real Kokoro says two announcements
def test_mqtt_and_http_announcements_play_in_the_window_with_their_source(make_window, qloop, broker, listen):
    settings = MqttSettings("127.0.0.1", broker.port, base="test/window", node_id="window", discovery=False)
    window = make_window(house=HouseInputs(mqtt=settings, http_port=0))
    house = window.house
    qloop.run_until_complete(asyncio.wait_for(house.mqtt.connected.wait(), 20))
    client = listen("test/window/outcome")
    panel = window.console.announcements

    async def scenario() -> None:
        client.publish("test/window/say", json.dumps({"text": "From the house.", "id": "m1"}))
        await until(lambda: window.announce.announcer.current is not None)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{house.http.port}") as http:
            reply = await http.post("/announce", json={"text": "From a script.", "priority": "low", "id": "h1"})
            assert reply.status_code == 202
        # While the MQTT one plays, the HTTP one waits in the window's queue, with its source.
        assert any("From a script." in row and "HTTP · low" in row for row in rows(panel.queue))
        ARTIFACTS.mkdir(exist_ok=True)
        window.grab().save(str(ARTIFACTS / "house-window-queue.png"))  # docs/house-window.png comes from here
        outcomes = [await asyncio.to_thread(client.next, "test/window/outcome", 120) for _ in range(2)]
        assert [(o["id"], o["outcome"], o["source"]) for o in outcomes] == [
            ("m1", "spoken", "mqtt"),
            ("h1", "spoken", "http"),
        ]
        await until(lambda: len(window.announce.history.entries) == 2)

    qloop.run_until_complete(scenario())
    history = rows(panel.history)
    assert any("From the house." in row and "MQTT · normal" in row for row in history)
    assert any("From a script." in row and "HTTP · low" in row for row in history)
    panel.switch.buttons["history"].click()
    window.grab().save(str(ARTIFACTS / "house-window-history.png"))
