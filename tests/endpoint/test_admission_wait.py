"""Admission by expected wait over a real server: the same number of sentences waiting for the model is a refusal
on a slow model and no reason to refuse on a fast one.

The model is the paced stand-in (``app.lab.paced_synth``), whose speed is set per call: one request teaches the
scheduler the model's forward cost (as serving does), then a burst of sessions queues its first sentences behind
a call held long (the stand-in slowed for it; the scheduler still believes the learned speed, as it would for an
unusually long sentence). What differs between the two cases is only the learned speed; the count of waiting
sentences is the same, and asserted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.support.endpoint import GUARD_S, bidi
from tests.support.fast_synth import start_fast_server
from tests.support.load import wait_until
from voicedesk.app.lab.paced_synth import PacedSynthesizer
from voicedesk.endpoint.runner import ServerThread
from voicedesk.endpoint.runtime import Lease
from voicedesk.engine.errors import ErrorCode
from voicedesk.engine.local import LocalSession
from voicedesk.engine.protocol import SynthesizeRequest, encode_command

TARGET_S = 2.0
"""Far from both cases' waits (about 6 s slow, well under 1 s fast even on a loaded machine)."""
LEARN_TEXT = "The cat sat on a mat."
BURST_TEXT = "Somebody waits here for the model to start."
BURST = 5
"""Sessions in the burst: one on the model, four first sentences waiting."""
HOLD_FACTOR = 0.1
"""The held call's speed: it outlasts the test's checks, which end it by closing its session."""


@pytest.fixture
def paced() -> PacedSynthesizer:
    return PacedSynthesizer()


@pytest.fixture
def server(paced) -> Iterator[ServerThread]:
    running = start_fast_server(paced, first_audio_target_s=TARGET_S, idle_timeout_s=120.0)
    yield running
    running.stop()


def _post(server: ServerThread, text: str) -> httpx.Response:
    body = {"text": text, "format": "pcm", "request_id": "new"}
    return httpx.post(server.http_url + "/invocations", json=body, timeout=GUARD_S)


def _learn_then_burst(server: ServerThread, paced: PacedSynthesizer, factor: float) -> list[tuple[Lease, LocalSession]]:
    """One request served at ``factor`` (the scheduler learns that speed), then BURST sessions' first sentences:
    one held on the model, the rest waiting."""
    paced.realtime_factor = factor
    assert _post(server, LEARN_TEXT).status_code == 200
    assert server.runtime.scheduler.estimated_call_s(10) is not None
    paced.realtime_factor = HOLD_FACTOR
    runtime = server.runtime
    opened: list[tuple[Lease, LocalSession]] = []

    async def start() -> None:
        for _ in range(BURST):
            lease = runtime.admit("test-burst")
            session = runtime.open_session(lease)
            opened.append((lease, session))
            await session.send_text(BURST_TEXT)
            await session.flush()

    server.call(start)
    wait_until(lambda: runtime.queue_depth == BURST - 1 and runtime.scheduler.busy, "the burst waits")
    # A call reads the speed when it starts: once the held one has started, only it is slow.
    assert paced.wait_for_call(lambda call: call.text.strip() in BURST_TEXT, GUARD_S) is not None  # (its first part)
    paced.realtime_factor = factor
    return opened


def _close(server: ServerThread, opened: list[tuple[Lease, LocalSession]]) -> None:
    async def stop() -> None:
        for lease, session in opened:
            await session.aclose()
            server.runtime.release(lease)

    server.call(stop)


async def test_burst_over_the_expected_wait_is_refused_with_a_retry_hint(server, paced):
    opened = _learn_then_burst(server, paced, factor=2.0)
    try:
        load = server.runtime.queue_load()
        assert load.queue_depth == BURST - 1
        assert load.expected_wait_s() > TARGET_S
        refused = _post(server, "Can I have a word?")
        assert refused.status_code == 503
        answer = refused.json()
        assert answer["error"] == answer["code"] == ErrorCode.QUEUE_SATURATED
        assert answer["message"].startswith("queue_saturated: a new sentence would wait about")
        assert answer["expected_wait_s"] > answer["first_audio_target_s"] == TARGET_S
        assert int(refused.headers["retry-after"]) == answer["retry_after_s"] >= 1
        assert answer["queue_depth"] == BURST - 1 and answer["max_queue_depth"] is None

        # The same refusal as a WebSocket whole request: an error frame with the hint, and the session goes on.
        async with bidi(server) as ws:
            await ws.send(encode_command(SynthesizeRequest("Can I have a word?", request_id="ws")))
            frame = json.loads(await ws.recv())
        assert frame["type"] == "error" and frame["code"] == ErrorCode.QUEUE_SATURATED
        assert frame["request_id"] == "ws" and frame["retry_after_s"] >= 1
    finally:
        _close(server, opened)
    wait_until(lambda: server.runtime.queue_depth == 0, "the burst is dropped")
    assert _post(server, "Hi.").status_code == 200  # load gone, served again


def test_same_count_waiting_on_a_fast_model_is_admitted(server, paced):
    opened = _learn_then_burst(server, paced, factor=400.0)
    with ThreadPoolExecutor(1) as pool:
        try:
            load = server.runtime.queue_load()
            assert load.queue_depth == BURST - 1
            assert load.expected_wait_s() < TARGET_S
            answer = pool.submit(_post, server, "Can I have a word?")
            # Admitted: its sentence joins the queue (a refusal would answer at once and queue nothing).
            wait_until(lambda: server.runtime.queue_depth == BURST or answer.done(), "the request is queued")
            assert not answer.done(), answer.result().text
        finally:
            _close(server, opened)
        response = answer.result(GUARD_S)
    assert response.status_code == 200 and len(response.content) > 0
