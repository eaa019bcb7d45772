"""Every house announcement the window takes ends with exactly one outcome, also when its speech cannot start: an
engine that cannot be reached (no turn is ever made) or the house's own start-up raising ends it ``failed``, with
the reason, on MQTT, and the window's queue carries on (the real window, a real broker, the real Kokoro)."""

from __future__ import annotations

import asyncio
import json
import socket

from tests.app.helpers import until
from tests.app.ui.test_window_errors import connect_to
from voicedesk.app.engines import EngineState
from voicedesk.app.house.inputs import HouseInputs
from voicedesk.app.house.mqtt import MqttSettings


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def house_window(make_window, qloop, broker, listen, name: str):
    settings = MqttSettings("127.0.0.1", broker.port, base=f"test/{name}", node_id=name, discovery=False)
    window = make_window(house=HouseInputs(mqtt=settings, loudness=False))
    qloop.run_until_complete(asyncio.wait_for(window.house.mqtt.connected.wait(), 20))
    return window, listen(f"test/{name}/outcome")


def test_an_announcement_whose_engine_cannot_be_reached_fails_once_with_the_reason(
    make_window, qtbot, qloop, broker, listen
):
    window, client = house_window(make_window, qloop, broker, listen, "unreachable")
    port = closed_port()
    window.sidebar.engine.failover.setChecked(False)  # no local engine standing in: the speech cannot start
    connect_to(window, qtbot, f"ws://127.0.0.1:{port}")
    qloop.run_until_complete(until(lambda: window.hub.status.state is EngineState.ERROR))

    async def outcomes() -> list[dict]:
        for number in (1, 2):
            client.publish("test/unreachable/say", json.dumps({"text": f"Number {number}.", "id": f"u{number}"}))
        # In order and once each: a second outcome for u1 would come before u2's.
        return [await asyncio.to_thread(client.next, "test/unreachable/outcome", 60) for _ in range(2)]

    first, second = qloop.run_until_complete(outcomes())
    assert [(o["id"], o["outcome"]) for o in (first, second)] == [("u1", "failed"), ("u2", "failed")]
    assert str(port) in first["reason"], first["reason"]  # the reason says which engine could not be reached
    console = window.announce.console
    assert not console.core.waiting and console.core.current is None and console.state().queued == 0
    assert not console.busy and not window.controller.turns  # no turn was ever made


def test_an_announcement_whose_start_raises_fails_with_the_reason_and_the_next_is_spoken(
    make_window, qloop, broker, listen
):
    """The front-end's start-up (the output, the status line) raising is a bug no input can trigger on purpose, so
    it is made to raise here, after the console has begun the announcement; the engine and all else are real."""
    window, client = house_window(make_window, qloop, broker, listen, "raising")
    before = window.announce.console.before
    raised: list[str] = []

    async def before_that_raises_once(item) -> None:
        await before(item)
        if not raised:
            raised.append(item.text)
            raise RuntimeError("the chime could not be mixed")

    window.announce.console.before = before_that_raises_once

    async def outcomes() -> list[dict]:
        client.publish("test/raising/say", json.dumps({"text": "First.", "id": "r1"}))
        client.publish("test/raising/say", json.dumps({"text": "Second.", "id": "r2"}))
        return [await asyncio.to_thread(client.next, "test/raising/outcome", 120) for _ in range(2)]

    first, second = qloop.run_until_complete(outcomes())
    assert raised == ["First."]
    assert (first["id"], first["outcome"], first["reason"]) == ("r1", "failed", "the chime could not be mixed.")
    assert (second["id"], second["outcome"]) == ("r2", "spoken")
    assert "“First.” could not start: the chime could not be mixed." in window.status.text
    qloop.run_until_complete(until(lambda: len(window.announce.history.entries) == 1))
    assert [entry.text for entry in window.announce.history.entries] == ["Second."]
