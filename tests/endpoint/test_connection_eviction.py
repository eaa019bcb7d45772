"""A connection closed to make room on a full server is told why, over real sockets (a real uvicorn server with the
test-only fast synthesizer, a real ``websockets`` client, 127.0.0.x loopback addresses as distinct clients).

Fair admission (``endpoint.fair_admission``) closes the idlest connection of the address holding the most when a
newcomer from an address holding less finds the connection cap full. A WebSocket closed this way gets what an
evicted session gets: a fatal ``error`` frame (``too_many_connections``), ``closed``, then close code 1013 with the
code as the reason; an idle HTTP connection gets a 429 JSON answer with the same code, then the end of the stream.
"""

from __future__ import annotations

import asyncio
import json

import httpx
from websockets.asyncio.client import connect

from tests.support.endpoint import GUARD_S, receive_all, receive_until
from tests.support.fast_synth import start_fast_server
from voicedesk.app.lab.paced_synth import PacedSynthesizer
from voicedesk.engine.errors import ErrorCode
from voicedesk.engine.protocol import BIDI_PATH


async def test_an_evicted_websocket_connection_gets_too_many_connections_and_1013() -> None:
    running = start_fast_server(PacedSynthesizer(2_000.0), max_connections=3, max_connections_per_client=3)
    url = running.ws_url + BIDI_PATH
    try:
        async with (
            connect(url, open_timeout=GUARD_S, local_addr=("127.0.0.2", 0)) as idlest,
            connect(url, open_timeout=GUARD_S, local_addr=("127.0.0.2", 0)) as second,
            connect(url, open_timeout=GUARD_S, local_addr=("127.0.0.2", 0)) as third,
        ):
            for ws in (second, third):  # they speak: the first one stays the idlest
                await ws.send(json.dumps({"text": "Hello there.", "request_id": "busy"}))
                await receive_until(ws, "synthesis_complete")
            # The server is full; a newcomer from another address takes the idlest connection's place.
            async with connect(url, open_timeout=GUARD_S, local_addr=("127.0.0.3", 0)) as newcomer:
                await newcomer.send(json.dumps({"text": "Hello there.", "request_id": "new"}))
                served = await receive_until(newcomer, "synthesis_complete")
            assert not served.of_type("error") and served.audio
            told = await receive_all(idlest)
            assert [m["type"] for m in told.messages] == ["error", "closed"]
            error = told.of_type("error")[0]
            assert error["code"] == ErrorCode.TOO_MANY_CONNECTIONS and error["fatal"] is True
            assert "closed to make room" in error["message"]
            assert told.of_type("closed")[0]["reason"] == ErrorCode.TOO_MANY_CONNECTIONS
            assert (idlest.close_code, idlest.close_reason) == (1013, ErrorCode.TOO_MANY_CONNECTIONS)
            # The others were left alone and still speak.
            await third.send(json.dumps({"text": "Still here.", "request_id": "after"}))
            assert not (await receive_until(third, "synthesis_complete")).of_type("error")
    finally:
        running.stop()


async def test_an_evicted_idle_http_connection_gets_a_429_too_many_connections_answer() -> None:
    running = start_fast_server(PacedSynthesizer(2_000.0), max_connections=2, max_connections_per_client=2)
    held = []
    try:
        for _ in range(2):  # idle connections that never send a request
            held.append(await asyncio.open_connection("127.0.0.1", running.port, local_addr=("127.0.0.2", 0)))
        transport = httpx.AsyncHTTPTransport(local_address="127.0.0.3")
        async with httpx.AsyncClient(transport=transport, timeout=GUARD_S) as client:
            assert (await client.get(running.http_url + "/ping")).status_code == 200
        reader, _ = held[0]  # the idlest
        async with asyncio.timeout(GUARD_S):
            answer = await reader.read()  # up to the end of the stream: the server closed it
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 429 ")
        assert b"content-type: application/json" in head.lower()
        assert json.loads(body)["code"] == ErrorCode.TOO_MANY_CONNECTIONS
    finally:
        for _, writer in held:
            writer.close()
        running.stop()


async def test_http_streams_are_evicted_fairly_and_told_why() -> None:
    """Four streams of one address held every session slot; a newcomer from another address is served, and the
    stream that made room ends with an SSE ``error`` (``too_many_sessions``)."""
    running = start_fast_server(PacedSynthesizer(1.0), max_sessions=2, max_sessions_per_client=2)
    long_text = "This sentence keeps the stream speaking for a while. " * 6
    try:
        transport = httpx.AsyncHTTPTransport(local_address="127.0.0.2")
        async with httpx.AsyncClient(transport=transport, timeout=GUARD_S) as holder:
            body = {"text": long_text, "transport": "sse"}
            streams = [holder.stream("POST", running.http_url + "/invocations", json=body) for _ in range(2)]
            responses = [await stream.__aenter__() for stream in streams]
            lines = [response.aiter_lines() for response in responses]
            for line in lines:  # both have started: the server holds two speaking streams of 127.0.0.2
                assert "audio_stream_start" in await anext(line)
            url = running.ws_url + BIDI_PATH
            async with connect(url, open_timeout=GUARD_S, local_addr=("127.0.0.3", 0)) as newcomer:
                await newcomer.send(json.dumps({"text": "Hello there.", "request_id": "new"}))
                served = await receive_until(newcomer, "synthesis_complete")
            assert not served.of_type("error") and served.audio
            errors = []
            for line in lines:
                rest = [json.loads(item.removeprefix("data: ")) async for item in line if item.startswith("data: ")]
                assert rest[-1]["type"] == "audio_stream_end"
                errors.append([event["code"] for event in rest if event["type"] == "error"])
            assert sorted(errors) == [[], [ErrorCode.TOO_MANY_SESSIONS]]
            for stream in streams:
                await stream.__aexit__(None, None, None)
    finally:
        running.stop()
