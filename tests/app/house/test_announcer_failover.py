"""The announcer on a remote engine (a real uvicorn endpoint over WebSocket, on the paced stand-in) that goes away:
the next announcement is said on the local engine, and the state shows the remote engine down."""

from __future__ import annotations

import asyncio

from tests.app.house.helpers import outcomes, running_console, until
from tests.support.fast_synth import start_fast_server
from voicedesk.app.console.announcement import Request, Source
from voicedesk.app.lab.paced_synth import PacedSynthesizer
from voicedesk.engine.engine_spec import EngineSpec
from voicedesk.engine.factory import open_engine


async def test_the_remote_engine_goes_away_and_the_next_announcement_is_said_locally():
    server = await asyncio.to_thread(start_fast_server, PacedSynthesizer(20.0))
    local = PacedSynthesizer(20.0)

    async def opener(spec: EngineSpec):
        if spec.kind == "local":
            from voicedesk.engine.local import LocalEngine

            return LocalEngine(local)
        return await open_engine(spec)

    try:
        async with running_console(None, engine=EngineSpec("websocket", target=server.ws_url), opener=opener) as house:
            house.runner.submit(Request("Said on the remote engine.", id="remote", source=Source.HTTP))
            await until(lambda: outcomes(house), within_s=60)
            assert outcomes(house)[0].outcome.value == "spoken"
            assert {s.engine for s in house.controller.turns[-1].sentences} == {"WebSocket"}
            assert not local.calls

            await asyncio.to_thread(server.stop)
            house.runner.submit(Request("Said on the local engine.", id="local", source=Source.HTTP))
            await until(lambda: len(outcomes(house)) == 2, within_s=60)
            assert outcomes(house)[1].outcome.value == "spoken"
            assert {s.engine for s in house.controller.turns[-1].sentences} == {"Local"}
            assert [c.text for c in local.calls] == ["Said on the local engine."]
            assert house.runner.state().engine_state in ("error", "disconnected")
    finally:
        await asyncio.to_thread(server.stop)
