"""Valid input that costs the server work (issue 34), over real sockets: a real uvicorn server around the test-only
fast synthesizer, real ``websockets`` clients."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from websockets.asyncio.client import connect

from tests.support.endpoint import GUARD_S, receive_all, receive_until
from tests.support.fast_synth import FAST_FACTOR, start_fast_server
from voicedesk.app.lab.paced_synth import PacedSynthesizer
from voicedesk.endpoint import bidi
from voicedesk.engine.connection import decode
from voicedesk.engine.errors import ErrorCode
from voicedesk.engine.protocol import BIDI_PATH

pytestmark = pytest.mark.alone  # times it side by side (tests/support/parallel.py)


async def _thread_id() -> int:
    return threading.get_ident()


async def test_a_lexicon_config_is_parsed_off_the_event_loop(monkeypatch) -> None:
    """A 6,000-entry lexicon (250 KB, tens of ms to parse) is decoded on a worker thread, never on the event loop's,
    so the loop serves everyone else meanwhile. The test records which thread ran the real decoder: CPU-time
    comparisons on a shared machine were noise (the loop's socket reads alone swung from a third of a parse to more
    than one)."""
    lexicon = [{"word": f"t{i}", "phonemes": "tˈɜm"} for i in range(6_000)]
    frame = json.dumps({"type": "config", "lexicon": lexicon}, ensure_ascii=False)
    parsed_on: list[tuple[int, int]] = []

    def recording_decode(codec, raw):  # type: ignore[no-untyped-def]
        parsed_on.append((threading.get_ident(), len(raw)))
        return decode(codec, raw)

    monkeypatch.setattr(bidi, "decode", recording_decode)
    running = start_fast_server(idle_timeout_s=60.0)  # the paced reads of 900 frames' worth take seconds
    try:
        assert running.loop is not None
        loop_thread = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(_thread_id(), running.loop))  # type: ignore[arg-type]
        async with connect(running.ws_url + BIDI_PATH, max_size=None, open_timeout=GUARD_S) as ws:
            for _ in range(3):
                await ws.send(frame)
            await ws.send(json.dumps({"type": "flush", "request_id": "after"}))
            answered = await receive_until(ws, "flushed")  # every frame before it has been dealt with
        assert not answered.of_type("error")
        threads = [thread for thread, size in parsed_on if size == len(frame)]
        assert len(threads) == 3 and loop_thread not in threads, (loop_thread, parsed_on)
    finally:
        running.stop()


async def test_unknown_voices_are_refused_from_the_voice_list_and_counted_as_junk() -> None:
    synthesizer = PacedSynthesizer(FAST_FACTOR)
    looked_up: list[str] = []
    check_voice = synthesizer.check_voice
    synthesizer.check_voice = lambda voice: looked_up.append(voice) or check_voice(voice)  # type: ignore[method-assign]
    running = start_fast_server(synthesizer, junk_burst=5, junk_per_s=0.1)
    try:
        async with connect(running.ws_url + BIDI_PATH, open_timeout=GUARD_S, local_addr=("127.0.0.4", 0)) as ws:
            for i in range(6):
                await ws.send(json.dumps({"type": "config", "voice": f"zz_nobody{i}"}))
            told = await receive_all(ws)
        codes = [m["code"] for m in told.of_type("error")]
        assert codes == [ErrorCode.UNKNOWN_VOICE] * 5 + [ErrorCode.RATE_LIMITED]
        assert "af_heart" in told.of_type("error")[0]["message"]  # the voices there are
        assert ws.close_code == 1008
        assert looked_up == []  # none cost the synthesizer a look-up
    finally:
        running.stop()


async def test_websocket_pings_are_read_no_faster_than_frames() -> None:
    """Pings are answered inside the WebSocket layer, below the session's read pacing; a flood of them is read at
    the frame rate too (the rest wait in the kernel), instead of costing the server a pong each at any rate."""
    running = start_fast_server(frames_per_s=100, frame_burst=100, idle_timeout_s=60.0)
    try:
        async with connect(running.ws_url + BIDI_PATH, open_timeout=GUARD_S) as ws:
            waiters = []
            for batch in range(20):  # 20,000 pings in separate writes
                for n in range(1_000):
                    waiters.append(await ws.ping((batch * 1_000 + n).to_bytes(4, "big")))
                await asyncio.sleep(0.01)
            await asyncio.sleep(1.0)
            answered = sum(waiter.done() for waiter in waiters)
        assert 0 < answered < 10_000, answered  # unpaced, all 20,000 came back at once
    finally:
        running.stop()
