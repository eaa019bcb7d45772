"""Bad input and limits on the WebSocket: each gets a structured error and the session keeps serving; caps on
sessions and idle time close with a clear code; a loading or broken model is reported, not crashed on."""

from __future__ import annotations

import asyncio
import json
import threading

import httpx
import pytest
from websockets.exceptions import InvalidStatus

from tests.support.endpoint import bidi, receive_all, receive_until, wait_for
from voicedesk.engine.errors import ErrorCode, WeightsMissingError
from voicedesk.engine.limits import SessionLimits
from voicedesk.engine.protocol import Cancel, Flush, SendText, SynthesizeRequest, encode_command


async def _error_for(ws, frame: str | bytes) -> dict:
    await ws.send(frame)
    return (await receive_until(ws, "error")).of_type("error")[0]


async def test_bad_frames_get_structured_errors_and_the_session_keeps_serving(server):
    cases = [
        ("{not json", ErrorCode.BAD_JSON, None),
        (b"\xff\xfe not utf-8", ErrorCode.BAD_JSON, None),
        ('{"type": "dance"}', ErrorCode.UNKNOWN_TYPE, None),
        ('["a list"]', ErrorCode.BAD_MESSAGE, None),
        ('{"type": "text"}', ErrorCode.BAD_MESSAGE, None),
        ('{"text": "Hi.", "voice": "zz_nobody", "request_id": "v"}', ErrorCode.UNKNOWN_VOICE, "v"),
        ('{"text": "Hi.", "voice": "/etc/passwd", "request_id": "p"}', ErrorCode.UNKNOWN_VOICE, "p"),
        ('{"text": "Hi.", "speed": 9, "request_id": "s"}', ErrorCode.BAD_SPEED, "s"),
        ('{"text": "Hi.", "speed": "fast", "request_id": "s2"}', ErrorCode.BAD_SPEED, "s2"),
        ('{"text": "   ", "request_id": "e"}', ErrorCode.EMPTY_TEXT, "e"),
        ('{"type": "config", "voice": "zz_nobody"}', ErrorCode.UNKNOWN_VOICE, None),
        ('{"type": "config", "speed": 0}', ErrorCode.BAD_SPEED, None),
        ('{"text": "Hi.", "speed": ' + "9" * 400 + ', "request_id": "n"}', ErrorCode.BAD_SPEED, "n"),
        ('{"text": "Hi.", "voice": "af_heart:1e308,am_adam:1e308", "request_id": "w"}', ErrorCode.UNKNOWN_VOICE, "w"),
        ("[" * 100_000, ErrorCode.BAD_JSON, None),
    ]
    async with bidi(server) as ws:
        for frame, code, request_id in cases:
            error = await _error_for(ws, frame)
            assert error["code"] == code, frame
            assert error["request_id"] == request_id, frame
            assert len(error["message"]) > 20, frame
        # None of that hurt the session.
        await ws.send(encode_command(SynthesizeRequest("Still here.", request_id="ok")))
        frames = await receive_until(ws, "synthesis_complete")
    assert frames.of_type("synthesis_complete")[0]["request_id"] == "ok"
    assert not frames.of_type("error")
    assert len(frames.audio) > 0


async def test_size_limits_are_structured_errors(make_server):
    limits = SessionLimits(max_message_chars=80, max_buffered_chars=120)
    running = make_server(limits=limits, max_frame_bytes=1024)
    async with bidi(running) as ws:
        error = await _error_for(ws, json.dumps({"type": "text", "text": "a" * 2000}))
        assert error["code"] == ErrorCode.FRAME_TOO_LARGE
        assert "1,024" in error["message"]
        error = await _error_for(ws, json.dumps({"text": "b" * 100, "request_id": "long"}))
        assert (error["code"], error["request_id"]) == (ErrorCode.TEXT_TOO_LONG, "long")
        error = await _error_for(ws, encode_command(SendText("c" * 100)))
        assert error["code"] == ErrorCode.TEXT_TOO_LONG
        # Unfinished words pile up in the chunker until the buffer limit says no.
        for _ in range(2):
            await ws.send(encode_command(SendText("d" * 50)))
        error = await _error_for(ws, encode_command(SendText("e" * 50)))
        assert error["code"] == ErrorCode.BUFFER_FULL
        error = await _error_for(ws, json.dumps({"text": "f" * 50, "request_id": "full"}))
        assert (error["code"], error["request_id"]) == (ErrorCode.BUFFER_FULL, "full")
        await ws.send(encode_command(Cancel()))
        await receive_until(ws, "cancelled")
        await ws.send(encode_command(SendText("Fine again.")))
        await ws.send(encode_command(Flush()))
        frames = await receive_until(ws, "flushed")
    assert not frames.of_type("error")
    assert len(frames.audio) > 0


async def test_too_many_sessions_is_refused_with_1013_and_the_slot_comes_back(make_server):
    running = make_server(max_sessions=1)
    async with bidi(running) as first:
        await first.send(encode_command(SynthesizeRequest("Hi.", request_id="first")))
        async with bidi(running) as second:
            refused = await receive_all(second)
            assert second.close_code == 1013
        assert refused.messages[0]["code"] == ErrorCode.TOO_MANY_SESSIONS
        assert refused.messages[0]["fatal"] is True
        # The refused connection did not disturb the one being served.
        frames = await receive_until(first, "synthesis_complete")
        assert frames.of_type("synthesis_complete")[0]["request_id"] == "first"
    await wait_for(lambda: running.runtime.active_sessions == 0, "the first session's slot was not released")
    async with bidi(running) as third:
        await third.send(encode_command(SynthesizeRequest("Hi.", request_id="third")))
        frames = await receive_until(third, "synthesis_complete")
    assert frames.of_type("synthesis_complete")[0]["request_id"] == "third"


async def test_idle_session_is_told_and_closed(make_server):
    running = make_server(idle_timeout_s=0.3)
    async with bidi(running) as ws:
        frames = await receive_all(ws)
        assert ws.close_code == 1000
    assert frames.kinds == ["error", "closed"]
    assert frames.messages[0]["code"] == ErrorCode.IDLE_TIMEOUT
    assert frames.messages[1]["reason"] == "idle_timeout"


async def test_token_guards_every_route_but_ping(make_server):
    running = make_server(token="s3cret")
    async with httpx.AsyncClient(base_url=running.http_url) as client:
        assert (await client.get("/ping")).status_code == 200
        refused = await client.get("/v1/audio/voices")
        assert refused.status_code == 401
        assert refused.json()["code"] == ErrorCode.UNAUTHORIZED
        wrong = await client.get("/v1/audio/voices", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        ok = await client.get("/v1/audio/voices", headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200
        posted = await client.post("/invocations", json={"text": "Hi."})
        assert posted.status_code == 401
    with pytest.raises(InvalidStatus) as refused_ws:
        async with bidi(running):
            pass
    assert refused_ws.value.response.status_code == 401
    async with bidi(running, additional_headers={"Authorization": "Bearer s3cret"}) as ws:
        await ws.send(encode_command(SynthesizeRequest("Hi.", request_id="authed")))
        frames = await receive_until(ws, "synthesis_complete")
    assert frames.of_type("synthesis_complete")[0]["request_id"] == "authed"


async def test_ping_says_503_while_loading_then_200(make_server, synthesizer):
    release = threading.Event()

    def slow_loader():
        release.wait(60)
        return synthesizer

    running = make_server(slow_loader, wait_ready=False)
    async with httpx.AsyncClient(base_url=running.http_url) as client:
        async with asyncio.timeout(60):
            while True:
                try:
                    loading = await client.get("/ping")
                    break
                except httpx.ConnectError:  # the thread has not bound yet
                    await asyncio.sleep(0.02)
        assert loading.status_code == 503
        assert loading.json()["code"] == ErrorCode.NOT_READY
        speech = await client.post("/invocations", json={"text": "Hi."})
        assert (speech.status_code, speech.json()["code"]) == (503, ErrorCode.NOT_READY)
        async with bidi(running) as ws:
            refused = await receive_all(ws)
            assert ws.close_code == 1013
        assert refused.messages[0]["code"] == ErrorCode.NOT_READY
        release.set()
        assert await asyncio.to_thread(running.runtime.wait_ready, 60)
        assert (await client.get("/ping")).status_code == 200


async def test_a_model_that_cannot_load_is_reported_not_crashed_on(make_server):
    def missing():
        raise WeightsMissingError("Kokoro's weights are not here. Run `voicedesk models fetch`.")

    running = make_server(missing, wait_ready=False)
    assert not await asyncio.to_thread(running.runtime.wait_ready, 60)
    async with httpx.AsyncClient(base_url=running.http_url) as client:
        ping = await client.get("/ping")
        assert ping.status_code == 503
        assert ping.json()["code"] == ErrorCode.WEIGHTS_MISSING
        assert "models fetch" in ping.json()["message"]
        speech = await client.post("/invocations", json={"text": "Hi."})
        assert speech.status_code == 503
        assert speech.json()["code"] == ErrorCode.WEIGHTS_MISSING
