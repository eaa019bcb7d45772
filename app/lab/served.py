"""``--serve``: the endpoint container's app started in-process (uvicorn on 127.0.0.1) around the local model, and
measured through the websocket engine, a real client on a real socket: an endpoint's numbers without a deploy.

``voicedesk bench server`` (an alias of the concurrency and transport scenarios) uses it when no ``--url`` is given.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from voicedesk.app.lab.context import LabContext
from voicedesk.engine.api import Engine


def served_engine_opener(ctx: LabContext, device: str | None, max_sessions: int) -> Callable[[], Awaitable[Engine]]:
    """Opens the engine under test: loads the model, starts the endpoint around it (stopped when ``ctx`` closes)
    and connects the websocket engine to it; points ``ctx.server_url`` (the transport scenario) at it too."""

    async def open_served() -> Engine:
        from voicedesk.endpoint.runner import ServerThread
        from voicedesk.endpoint.server import create_app
        from voicedesk.endpoint.settings import ServerSettings
        from voicedesk.engine.engine_spec import EngineSpec
        from voicedesk.engine.factory import open_engine
        from voicedesk.engine.model.kokoro_synth import KokoroSynthesizer

        ctx.progress("bench: loading the model for the in-process endpoint…")
        synthesizer = await asyncio.to_thread(KokoroSynthesizer.load, device)
        # Room for every session of the widest level, plus the transport scenario's own connections.
        settings = ServerSettings(max_sessions=max_sessions + 2)
        server = ServerThread(create_app(synthesizer, settings))
        await asyncio.to_thread(server.start)
        ctx.on_close(lambda: asyncio.to_thread(server.stop))
        ctx.progress(f"bench: endpoint running at {server.http_url} ({synthesizer.device})")
        ctx.server_url = server.http_url
        ctx.engine_label = f"websocket {server.ws_url} (in-process endpoint, model on {synthesizer.device})"
        return await open_engine(EngineSpec("websocket", server.ws_url))

    return open_served
