"""Flow control on input and fair admission, over real sockets: a real uvicorn server (with the test-only fast
synthesizer, ``tests/support/fast_synth.py``), real ``websockets`` clients, and 127.0.0.x loopback addresses as
distinct clients.

- A client sending 1,500 one-word frames as fast as it can is read at the server's frame rate (TCP slows it) and
  every word is spoken, in order, with ``flushed`` answered and no error: nothing is dropped.
- Four addresses filling the server cannot shut a fifth out: it takes the place of the idlest session (or
  connection) of the address holding the most.

How fast any of it is belongs to ``voicedesk bench abuse``; these tests check what happens, not how quickly.
"""

from __future__ import annotations

import asyncio
import json
import logging

import httpx
from websockets.asyncio.client import connect

from tests.support.endpoint import GUARD_S, receive_all, receive_until
from tests.support.fast_synth import start_fast_server
from voicedesk.app.lab.paced_synth import PacedSynthesizer
from voicedesk.engine.errors import ErrorCode
from voicedesk.engine.protocol import BIDI_PATH

WORDS = [f"w{i}" for i in range(1_500)]
FLOW = {"frames_per_s": 300.0, "frame_burst": 100}
"""Lower than the client sends, so the server must slow it down; high enough to keep the test short."""


def spoken_words(synthesizer: PacedSynthesizer) -> list[str]:
    return " ".join(call.text for call in synthesizer.calls).split()


async def test_1500_one_word_frames_sent_flat_out_are_all_spoken_in_order(caplog) -> None:
    caplog.set_level(logging.INFO)
    synthesizer = PacedSynthesizer(2_000.0)
    running = start_fast_server(synthesizer, **FLOW)
    try:
        async with connect(running.ws_url + BIDI_PATH, max_size=None) as ws:
            for word in WORDS:  # as fast as the socket takes them, one word per frame
                await ws.send(json.dumps({"type": "text", "text": word + " "}))
            await ws.send(json.dumps({"type": "flush", "request_id": "end"}))
            frames = await receive_until(ws, "flushed")
    finally:
        running.stop()
    assert frames.of_type("flushed")[0]["request_id"] == "end"
    assert frames.of_type("error") == []
    assert len(frames.audio) > 0
    assert spoken_words(synthesizer) == WORDS
    # The server slowed the sender rather than dropping anything, and said so in its log (as a count).
    assert [r for r in caplog.records if "slowed by the frame rate (none dropped)" in r.getMessage()]


async def test_a_cancel_and_a_close_behind_a_flood_are_obeyed() -> None:
    synthesizer = PacedSynthesizer(2_000.0)
    running = start_fast_server(synthesizer, frames_per_s=100.0, frame_burst=20)
    try:
        async with connect(running.ws_url + BIDI_PATH, max_size=None) as ws:
            for word in WORDS[:300]:
                await ws.send(json.dumps({"type": "text", "text": word + " "}))
            await ws.send(json.dumps({"type": "cancel"}))
            await ws.send(json.dumps({"type": "close"}))
            frames = await receive_all(ws)
            assert ws.close_code == 1000
    finally:
        running.stop()
    assert "cancelled" in frames.kinds
    assert frames.messages[-1] == {"type": "closed", "reason": "closed"}
    assert not frames.of_type("error")


async def _hold_session(url: str, source: str, ready: asyncio.Queue[str], outcome: list[str]) -> None:
    """An attacker's session: opens, says nothing more, waits to be closed."""
    async with connect(url, open_timeout=GUARD_S, local_addr=(source, 0)) as ws:
        await ready.put(source)
        frames = await receive_all(ws)
        codes = [m.get("code") for m in frames.of_type("error")]
        outcome.append(f"{codes[0] if codes else 'none'} {ws.close_code}")


async def test_four_addresses_holding_every_session_cannot_shut_a_fifth_out() -> None:
    running = start_fast_server(
        PacedSynthesizer(2_000.0), max_sessions=8, max_sessions_per_client=2, idle_timeout_s=GUARD_S
    )
    url = running.ws_url + BIDI_PATH
    ready: asyncio.Queue[str] = asyncio.Queue()
    outcomes: list[str] = []
    attackers = [asyncio.create_task(_hold_session(url, f"127.0.0.{2 + i // 2}", ready, outcomes)) for i in range(8)]
    try:
        async with asyncio.timeout(GUARD_S):
            for _ in attackers:
                await ready.get()
        assert running.runtime.active_sessions == 8
        # The server is full; a newcomer from a fifth address is served (and again once it left: its slot is free).
        for request_id in ("fifth-1", "fifth-2"):
            async with connect(url, open_timeout=GUARD_S, local_addr=("127.0.0.9", 0)) as ws:
                await ws.send(json.dumps({"text": "Hello there.", "request_id": request_id}))
                frames = await receive_until(ws, "synthesis_complete")
            assert not frames.of_type("error") and frames.audio
        async with asyncio.timeout(GUARD_S):
            while not outcomes:  # noqa: ASYNC110 - the evicted attackers' tasks record their close
                await asyncio.sleep(0.01)
        # One attacker's session, the idlest of an address holding two, was told why and closed with 1013.
        assert outcomes == [f"{ErrorCode.TOO_MANY_SESSIONS} 1013"]
        assert running.runtime.sessions_evicted == 1
    finally:
        for task in attackers:
            task.cancel()
        await asyncio.gather(*attackers, return_exceptions=True)
        running.stop()


async def test_four_addresses_holding_every_connection_cannot_shut_a_fifth_out() -> None:
    running = start_fast_server(PacedSynthesizer(2_000.0), max_connections=16, max_connections_per_client=4)
    held: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    try:
        for i in range(16):  # idle connections that never send a request
            source = f"127.0.0.{2 + i // 4}"
            held.append(await asyncio.open_connection("127.0.0.1", running.port, local_addr=(source, 0)))
        transport = httpx.AsyncHTTPTransport(local_address="127.0.0.9")
        async with httpx.AsyncClient(transport=transport, timeout=GUARD_S) as client:
            for _ in range(3):
                assert (await client.get(running.http_url + "/ping")).status_code == 200
    finally:
        for _, writer in held:
            writer.close()
        running.stop()
