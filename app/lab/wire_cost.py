"""Wire bytes per second of audio on the endpoint's two audio transports, against a real server with real clients:
binary WebSocket frames (the AWS sample's request flow on ``/invocations-bidirectional-stream``) and SSE (base64
audio in JSON events on ``POST /invocations`` with ``transport: sse``).

Payload bytes of every frame / SSE body byte are counted, control messages included; HTTP and WebSocket framing
are not. The lab's transport scenario (``voicedesk bench transport``, docs/bench.md) reports them side by side.
"""

from __future__ import annotations

import asyncio
import json


async def binary_wire_cost(ws_url: str, headers: dict[str, str], text: str, voice: str) -> float | None:
    """Bytes on the WebSocket per second of audio for one whole request (binary PCM frames + JSON control)."""
    from websockets.asyncio.client import connect

    from voicedesk.engine.measure.metrics import transport_cost

    wire = 0
    async with connect(ws_url, additional_headers=headers, max_size=None) as ws:
        await ws.send(json.dumps({"text": text, "voice": voice, "request_id": "wire"}))
        async with asyncio.timeout(300):
            while True:
                frame = await ws.recv()
                wire += len(frame) if isinstance(frame, bytes) else len(frame.encode())
                if isinstance(frame, str) and json.loads(frame).get("type") == "synthesis_complete":
                    audio_s = json.loads(frame)["total_duration_s"]
                    break
    return transport_cost(wire, audio_s).bytes_per_audio_s if audio_s > 0 else None


async def sse_wire_cost(http_url: str, headers: dict[str, str], text: str, voice: str) -> float | None:
    """Bytes of the SSE body per second of audio for the same request (base64 audio in events)."""
    import httpx

    from voicedesk.engine.measure.metrics import transport_cost

    wire = 0
    audio_s = 0.0
    body = {"text": text, "voice": voice, "transport": "sse", "request_id": "wire"}
    buffered = b""
    async with (
        httpx.AsyncClient(timeout=300, headers=headers) as client,
        client.stream("POST", http_url + "/invocations", json=body) as response,
    ):
        response.raise_for_status()
        async for chunk in response.aiter_raw():
            wire += len(chunk)
            buffered += chunk
    for line in buffered.decode().splitlines():
        if line.startswith("data: ") and '"audio_stream_end"' in line:
            audio_s = json.loads(line.removeprefix("data: "))["duration_s"]
    return transport_cost(wire, audio_s).bytes_per_audio_s if audio_s > 0 else None
