"""Issue 33.6: the house is heard from the first moment. The announcer and the window take announcements over HTTP
while the model is still loading (refused for ~45 s before) and say them once it is ready; the real announcer and
the real window, a real httpx client, an engine opener that holds the "model" until the test lets it load."""

from __future__ import annotations

import asyncio

import httpx

from tests.app.helpers import until
from tests.app.house.helpers import paced_opener
from voicedesk.app.console.announcement import Report
from voicedesk.app.engines import EngineState
from voicedesk.app.house.announcer import Announcer, AnnouncerConfig
from voicedesk.app.house.inputs import HouseInputs
from voicedesk.app.lab.paced_synth import PacedSynthesizer
from voicedesk.engine.events import SessionConfig


def slow_opener():
    """The paced stand-in behind an engine that takes until ``loaded.set()`` to load, like the model."""
    loaded = asyncio.Event()
    inner = paced_opener(PacedSynthesizer(20.0))

    async def opener(spec):
        await loaded.wait()
        return await inner(spec)

    return opener, loaded


async def announce_while_loading(port: int, hub, loaded: asyncio.Event) -> None:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        await until(lambda: hub.status.state is EngineState.LOADING)
        reply = await client.post("/announce", json={"text": "The doorbell rang.", "id": "early"})
        assert reply.status_code == 202, reply.text
        assert (await client.get("/state")).json()["engine_state"] == "loading"
    loaded.set()


async def test_the_announcer_takes_announcements_while_the_model_loads():
    opener, loaded = slow_opener()
    config = AnnouncerConfig(HouseInputs(http_port=0, loudness=False), voice=SessionConfig("af_heart"), audio=False)
    config.opener = opener
    house = Announcer(config)
    reports: list[Report] = []
    house.runner.reports.append(reports.append)
    starting = asyncio.ensure_future(house.start())
    try:
        await until(lambda: house.http is not None and house.http.started)
        await announce_while_loading(house.http.port, house.hub, loaded)
        await starting
        await until(lambda: reports)
        assert [(r.id, r.outcome.value) for r in reports] == [("early", "spoken")]
    finally:
        starting.cancel()
        await house.aclose()


def test_the_window_takes_announcements_while_the_model_loads(make_window, qloop):
    opener, loaded = slow_opener()
    window = make_window(engine_opener=opener, house=HouseInputs(http_port=0, loudness=False), start=False)
    reports: list[Report] = []
    window.announce.console.reports.append(reports.append)

    now = window.console.announcements.now

    async def scenario() -> None:
        starting = asyncio.ensure_future(window.start())
        await until(lambda: window.house is not None and window.house.http is not None)
        port = window.house.http.port
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            await until(lambda: window.hub.status.state is EngineState.LOADING)
            await client.post("/announce", json={"text": "Wait for it.", "id": "first"})
            await until(lambda: window.announce.console.busy)
            assert now.text().startswith("<b>Starting:</b> Wait for it.")  # issue 33.8: it said "Speaking:"
        await announce_while_loading(port, window.hub, loaded)
        await starting
        await until(lambda: now.text().startswith("<b>Speaking:</b> Wait for it."))  # once its turn has begun
        await until(lambda: len(reports) == 2)

    qloop.run_until_complete(scenario())
    assert [(r.id, r.outcome.value) for r in reports] == [("first", "spoken"), ("early", "spoken")]
