"""Scenario 5: bytes on the wire per second of audio, binary WebSocket frames vs SSE (base64 in JSON).

The measurement itself is ``app.lab.wire_cost`` (one implementation). This module only finds the server: the
URL given (``--server-url``, or the websocket engine's own host, which is the in-process endpoint with
``--serve``), or an endpoint started in-process on 127.0.0.1 around the local engine's model. Through SageMaker
there is no SSE route, so the scenario says so and measures nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

from voicedesk.app.lab.context import LabContext
from voicedesk.app.lab.runs import ScenarioResult, ratio
from voicedesk.engine.events import BYTES_PER_SAMPLE, SAMPLE_RATE
from voicedesk.engine.local import LocalEngine
from voicedesk.engine.measure.metrics import summarize
from voicedesk.engine.protocol import BIDI_PATH

BINARY = "binary WebSocket frames"
SSE = "SSE, base64 in JSON"


def http_url_of(target: str) -> str:
    """ws(s)://host:port/path or http(s)://host:port → http(s)://host:port."""
    parts = urlsplit(target if "://" in target else f"ws://{target}")
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    return urlunsplit((scheme, parts.netloc, "", "", ""))


@contextlib.asynccontextmanager
async def _server(ctx: LabContext) -> AsyncIterator[str | None]:
    if ctx.server_url is not None:
        yield http_url_of(ctx.server_url)
        return
    engine = await ctx.get_engine()
    if not isinstance(engine, LocalEngine):
        yield None
        return
    synthesizer = engine.synthesizer
    from voicedesk.endpoint.runner import ServerThread
    from voicedesk.endpoint.server import create_app

    ctx.progress("transport: starting the endpoint in-process on 127.0.0.1…")
    server = ServerThread(create_app(synthesizer))
    await asyncio.to_thread(server.start)
    try:
        yield server.http_url
    finally:
        await asyncio.to_thread(server.stop)


async def run_transport(ctx: LabContext) -> ScenarioResult:
    from voicedesk.app.lab.wire_cost import binary_wire_cost, sse_wire_cost

    cfg = ctx.config
    result = ScenarioResult("transport", "Transport overhead: wire bytes per second of audio")
    headers = {"Authorization": f"Bearer {ctx.server_token}"} if ctx.server_token else {}
    async with _server(ctx) as http_url:
        if http_url is None:
            result.skipped = (
                f"{ctx.engine_label} offers no SSE route to compare with (SageMaker's bidirectional stream carries "
                "binary parts only); measure the container itself with --server-url http://HOST:PORT"
            )
            return result
        ws_url = "ws" + http_url.removeprefix("http") + BIDI_PATH
        binary: list[float | None] = []
        sse: list[float | None] = []
        for i in range(cfg.repeat):
            ctx.progress(f"transport: repeat {i + 1}/{cfg.repeat} against {http_url}")
            binary.append(await binary_wire_cost(ws_url, headers, cfg.text, cfg.voice))
            sse.append(await sse_wire_cost(http_url, headers, cfg.text, cfg.voice))
    raw = SAMPLE_RATE * BYTES_PER_SAMPLE
    rows = []
    for name, values in ((BINARY, binary), (SSE, sse)):
        per_s = summarize(values)
        rows.append(
            {
                "transport": name,
                "bytes_per_audio_s": per_s,
                "overhead": ratio(per_s["p50"], raw),
                "overhead_of": f"p50 bytes per audio second ÷ raw PCM16 ({raw} B/s)",
            }
        )
    result.summary = {
        "server": http_url,
        "transports": rows,
        "ratio": ratio(rows[1]["bytes_per_audio_s"]["p50"], rows[0]["bytes_per_audio_s"]["p50"]),
        "ratio_of": "p50 bytes per audio second, SSE ÷ binary",
        "measured_by": "endpoint.wire_cost: payload bytes of every frame / SSE body byte, control messages included",
    }
    return result
