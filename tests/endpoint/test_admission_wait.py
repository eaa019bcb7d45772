"""Admission by expected wait, per session, over a real server (issue 34.2): other sessions' work never refuses a
client that holds no backlog; a session whose own backlog would keep its next request waiting too long is refused
(``queue_saturated`` with a retry hint), on a slow model and not on a fast one.

The model is the paced stand-in (``app.lab.paced_synth``), whose speed is set per call: one request teaches the
scheduler the model's forward cost (as serving does), then the load is built by hand.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from tests.support.endpoint import GUARD_S, bidi, receive_until
from tests.support.fast_synth import start_fast_server
from tests.support.load import wait_until
from voicedesk.app.lab.paced_synth import PacedSynthesizer
from voicedesk.endpoint.runner import ServerThread
from voicedesk.endpoint.runtime import Lease
from voicedesk.engine.errors import ErrorCode
from voicedesk.engine.local import LocalSession
from voicedesk.engine.protocol import SynthesizeRequest, encode_command

TARGET_S = 2.0
LEARN_TEXT = "The cat sat on a mat."
BURST_TEXT = "Somebody waits here for the model to start."
BURST = 5
BACKLOG = " ".join(f"Sentence number {n} of a long reply is here." for n in range(30))
"""About 1,300 characters: tens of seconds of model time at 2× real time, a fraction of a second at 400×."""


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


def _learn(server: ServerThread, paced: PacedSynthesizer, factor: float) -> None:
    paced.realtime_factor = factor
    assert _post(server, LEARN_TEXT).status_code == 200
    assert server.runtime.scheduler.estimated_call_s(10) is not None


async def test_other_sessions_backlog_never_refuses_a_newcomer(server, paced):
    """Five sessions' first sentences wait behind a call held long, on a slow model: the old rule refused every
    newcomer; a client holding no backlog is admitted now, over HTTP and on the WebSocket."""
    _learn(server, paced, factor=2.0)
    paced.realtime_factor = 0.1  # the held call outlasts the checks, which end it by closing its session
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
    try:
        wait_until(lambda: runtime.queue_depth == BURST - 1 and runtime.scheduler.busy, "the burst waits")
        paced.realtime_factor = 50.0  # the newcomers' own calls, once they get the model
        async with bidi(server) as ws:
            await ws.send(encode_command(SynthesizeRequest("Can I have a word?", request_id="ws")))
            frame = json.loads(await ws.recv())
        assert frame["type"] != "error", frame
        assert runtime.queue_load().expected_wait_s() == 0.0  # a newcomer's own backlog is nothing
    finally:

        async def stop() -> None:
            for lease, session in opened:
                await session.aclose()
                runtime.release(lease)

        server.call(stop)
    assert _post(server, "Hi.").status_code == 200


@pytest.mark.parametrize("factor", [2.0, 400.0])
async def test_a_sessions_own_backlog_over_the_target_is_refused_on_a_slow_model_only(server, paced, factor):
    _learn(server, paced, factor=factor)
    async with bidi(server) as ws:
        await ws.send(encode_command(SynthesizeRequest(BACKLOG, request_id="long")))
        await ws.send(encode_command(SynthesizeRequest("And one more thing.", request_id="next")))
        if factor == 2.0:
            frame = json.loads(await ws.recv())
            while frame.get("request_id") != "next":
                frame = json.loads(await ws.recv())
            assert frame["type"] == "error" and frame["code"] == ErrorCode.QUEUE_SATURATED
            assert frame["message"].startswith("queue_saturated: this session's own requests ahead of this one")
            assert frame["retry_after_s"] >= 1
            # Meanwhile a client holding no backlog is served, and this session goes on.
            response = _post(server, "Hi.")
            assert response.status_code == 200 and response.content
            await ws.send(json.dumps({"type": "cancel"}))
            await receive_until(ws, "cancelled")
        else:
            done = await receive_until(ws, "synthesis_complete")
            while not any(m.get("request_id") == "next" for m in done.of_type("synthesis_complete")):
                done = await receive_until(ws, "synthesis_complete")
            assert not done.of_type("error")
