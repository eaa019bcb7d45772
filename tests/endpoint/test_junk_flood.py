"""A client sending junk frames and reconnecting each time it is closed, over real sockets (a real uvicorn server with
the test-only fast synthesizer, real ``websockets`` clients, 127.0.0.x loopback addresses as distinct clients).

The junk budget belongs to the client's address (``engine.limits.JunkByAddress``), not to one connection: a
client closed for junk that reconnects finds it empty, and while it is empty the transport refuses the address
before the WebSocket handshake (429 ``rate_limited``) instead of opening a session and answering its budget again.
Counts only: answers, sessions opened, refusals.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.support.endpoint import GUARD_S, receive_all, receive_until
from tests.support.fast_synth import start_fast_server
from voicedesk.app.lab.abuse_fuzz import Target
from voicedesk.app.lab.abuse_load import FloodStats, flood
from voicedesk.app.lab.paced_synth import PacedSynthesizer
from voicedesk.engine.errors import ErrorCode
from voicedesk.engine.limits import REFUSAL_HOLD_MAX_S
from voicedesk.engine.protocol import BIDI_PATH

pytestmark = pytest.mark.alone  # times it side by side (tests/support/parallel.py)

BURST = 5
PER_S = 0.2
"""Slow enough that the address is still empty when the client reconnects, on any machine (5 s per frame)."""


async def test_an_address_closed_for_junk_is_refused_before_the_handshake_and_others_are_still_served() -> None:
    running = start_fast_server(PacedSynthesizer(2_000.0), junk_per_s=PER_S, junk_burst=BURST)
    url = running.ws_url + BIDI_PATH
    runtime = running.runtime
    try:
        async with connect(url, open_timeout=GUARD_S, local_addr=("127.0.0.7", 0)) as junk:
            for _ in range(BURST + 3):
                await junk.send(b"\x00junk")
            told = await receive_all(junk)
        codes = [m["code"] for m in told.of_type("error")]
        assert codes == [ErrorCode.BAD_JSON] * BURST + [ErrorCode.RATE_LIMITED]
        assert junk.close_code == 1008
        opened = runtime.sessions_opened

        with pytest.raises(InvalidStatus) as refused:
            async with connect(url, open_timeout=GUARD_S, local_addr=("127.0.0.7", 0)):
                pass
        assert refused.value.response.status_code == 429
        body = json.loads(refused.value.response.body)
        assert body["code"] == ErrorCode.RATE_LIMITED and body["retry_after_s"] > 0
        assert "could not be understood" in body["message"]
        assert runtime.sessions_opened == opened  # no session, no handshake for the refused connection
        assert runtime.junk_by_address is not None and runtime.junk_by_address.refused == 1

        # Another address is not concerned.
        async with connect(url, open_timeout=GUARD_S, local_addr=("127.0.0.8", 0)) as other:
            await other.send(json.dumps({"text": "Hello there.", "request_id": "other"}))
            served = await receive_until(other, "synthesis_complete")
        assert served.audio and not served.of_type("error")
    finally:
        running.stop()


async def test_a_reconnecting_junk_flood_gets_its_address_budget_once_not_once_per_connection() -> None:
    running = start_fast_server(PacedSynthesizer(2_000.0), junk_per_s=PER_S, junk_burst=BURST)
    stats = FloodStats()
    attempts = 12
    began = time.monotonic()
    try:
        async with asyncio.timeout(GUARD_S):
            await flood(
                Target("127.0.0.1", running.port),
                "127.0.0.9",
                lambda: stats.connections + stats.refused.total() >= attempts,
                small_send_buffer=False,
                stats=stats,
            )
        elapsed = time.monotonic() - began
        # Without the address's budget every connection would be answered BURST junk frames (12 × 5).
        assert stats.errors[ErrorCode.BAD_JSON] <= BURST + PER_S * elapsed + 1, stats.to_json()
        assert stats.refused[f"429 {ErrorCode.RATE_LIMITED}"] >= attempts - 1 - PER_S * elapsed, stats.to_json()
        assert running.runtime.sessions_opened == stats.connections <= 1 + PER_S * elapsed + 1
    finally:
        running.stop()


async def test_a_client_reconnecting_into_its_session_cap_is_slowed_told_why_each_time_and_logs_little(
    caplog, monkeypatch
) -> None:
    """Reconnecting in a tight loop (issue 34.9): every attempt gets a clear reason, the answers come later and later
    (the loop costs the server about an attempt a second, not a thousand), and the log gets a bounded few lines."""
    caplog.set_level(logging.INFO)
    monkeypatch.setattr(logging.getLogger("uvicorn"), "propagate", True)  # uvicorn's per-WebSocket lines count too
    for name in ("uvicorn.error", "uvicorn.access"):
        caplog.set_level(logging.INFO, logger=name)
    running = start_fast_server(
        PacedSynthesizer(2_000.0), junk_per_s=PER_S, junk_burst=BURST, max_sessions_per_client=1, idle_timeout_s=30.0
    )
    url = running.ws_url + BIDI_PATH
    reasons: list[str] = []
    answer_s: list[float] = []
    try:
        async with connect(url, open_timeout=GUARD_S, local_addr=("127.0.0.11", 0)) as held:
            caplog.clear()
            began = time.monotonic()
            while time.monotonic() - began < 4.0:
                asked = time.monotonic()
                try:
                    async with connect(url, open_timeout=GUARD_S, local_addr=("127.0.0.11", 0)) as extra:
                        told = await receive_all(extra)
                    reasons.append(told.of_type("error")[0]["code"])
                    assert "close one first" in told.of_type("error")[0]["message"]
                except InvalidStatus as refused:
                    body = json.loads(refused.response.body)
                    assert refused.response.status_code == 429 and body["retry_after_s"] > 0
                    assert "session cap" in body["message"]
                    reasons.append(body["code"])
                answer_s.append(time.monotonic() - asked)
            assert held.close_code is None  # the session it holds is untouched
        lines = [r.getMessage() for r in caplog.records]
    finally:
        running.stop()
    # The session cap first (its refusals spend the address's budget), then 429 before the handshake.
    assert reasons[:BURST] == [ErrorCode.TOO_MANY_SESSIONS] * BURST, reasons
    assert ErrorCode.RATE_LIMITED in reasons[BURST:], reasons
    # Without the hold a client on loopback makes hundreds of attempts in 4 s; answers held up to 1 s leave ~10.
    assert len(reasons) <= 14, answer_s
    assert max(answer_s) >= REFUSAL_HOLD_MAX_S * 0.9, answer_s
    assert len(lines) <= 8, lines
