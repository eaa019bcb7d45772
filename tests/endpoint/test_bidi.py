"""The bidirectional WebSocket with a real websockets client: the AWS sample's flow, streaming text, flush,
cancel, close, pings, and a client that walks away mid-utterance."""

from __future__ import annotations

import json

import httpx
import pytest
from websockets.asyncio.client import connect

from tests.support.endpoint import (
    FIVE_SENTENCES,
    THREE_SENTENCES,
    bidi,
    pcm_seconds,
    receive_all,
    receive_until,
    receive_until_audio,
    wait_for,
)
from voicedesk.engine.protocol import BIDI_PATH, Cancel, Close, Flush, SendText, SynthesizeRequest, encode_command


@pytest.mark.parametrize("frame_kind", ["text", "binary"])
async def test_whole_request_follows_the_aws_sample_flow(server, frame_kind):
    request = encode_command(SynthesizeRequest("Hello there.", voice="af_heart", request_id="r-1"))
    async with bidi(server) as ws:
        # SageMaker delivers request parts as binary frames unless the client set DataType=UTF8.
        await ws.send(request if frame_kind == "text" else request.encode())
        frames = await receive_until(ws, "synthesis_complete")
    assert frames.kinds[0] == "synthesis_start"
    assert frames.messages[0]["request_id"] == "r-1"
    assert "audio" in frames.kinds
    complete = frames.of_type("synthesis_complete")[0]
    assert complete["request_id"] == "r-1"
    assert complete["total_duration_s"] == pytest.approx(pcm_seconds(len(frames.audio)), abs=1e-5)
    assert complete["total_duration_s"] > 0
    assert complete["elapsed_s"] > 0
    assert len(frames.audio) % 2 == 0


async def test_three_sentences_on_one_session_give_three_segments_with_their_durations(server):
    async with bidi(server) as ws:
        for text in THREE_SENTENCES:
            await ws.send(encode_command(SendText(text + " ")))
        await ws.send(encode_command(Flush("three")))
        frames = await receive_until(ws, "flushed")
    starts = frames.of_type("sentence_start")
    ends = frames.of_type("sentence_end")
    assert [s["text"] for s in starts] == list(THREE_SENTENCES)
    assert [e["seq"] for e in ends] == [s["seq"] for s in starts]
    by_sentence = frames.audio_by_sentence()
    assert len(by_sentence) == 3
    for end in ends:
        assert by_sentence[end["seq"]] > 0
        assert end["duration_s"] == pytest.approx(pcm_seconds(by_sentence[end["seq"]]), abs=1e-5)
    flushed = frames.of_type("flushed")[0]
    assert flushed == {"type": "flushed", "last_seq": ends[-1]["seq"], "request_id": "three"}


async def test_flush_speaks_text_without_a_sentence_end(server):
    async with bidi(server) as ws:
        await ws.send(encode_command(SendText("Hello there")))
        await ws.send(encode_command(Flush("f-1")))
        frames = await receive_until(ws, "flushed")
    assert frames.kinds[0] == "sentence_start"
    assert frames.messages[0]["text"] == "Hello there"
    assert frames.kinds[-2:] == ["sentence_end", "flushed"]
    assert frames.of_type("flushed")[0]["request_id"] == "f-1"
    assert len(frames.audio) > 0


async def test_cancel_leaves_no_stale_audio(server):
    async with bidi(server) as ws:
        await ws.send(encode_command(SendText(FIVE_SENTENCES)))
        await ws.send(encode_command(Flush()))
        await receive_until_audio(ws)
        await ws.send(encode_command(Cancel()))
        cancelled = await receive_until(ws, "cancelled")
        last_seq = cancelled.of_type("cancelled")[0]["last_seq"]
        await ws.send(encode_command(SendText("Bye now.")))
        await ws.send(encode_command(Flush("after")))
        after = await receive_until(ws, "flushed")
    # Whatever was already on the wire before `cancelled` is fine; nothing of the old utterance after it.
    assert after.kinds[0] == "sentence_start"
    assert [s["text"] for s in after.of_type("sentence_start")] == ["Bye now."]
    assert all(s["seq"] > last_seq for s in after.of_type("sentence_start"))
    assert all(m.get("seq", last_seq + 1) > last_seq for m in after.messages if m["type"] != "flushed")
    assert after.of_type("flushed")[0]["request_id"] == "after"
    assert len(after.audio) > 0


async def test_close_finishes_what_was_asked_then_says_closed_and_closes_1000(server):
    async with bidi(server) as ws:
        await ws.send(encode_command(SynthesizeRequest("Good bye.", request_id="last")))
        await ws.send(encode_command(Close()))
        frames = await receive_all(ws)
        assert ws.close_code == 1000
    assert frames.kinds[-2:] == ["synthesis_complete", "closed"]
    assert frames.of_type("synthesis_complete")[0]["request_id"] == "last"
    assert frames.messages[-1] == {"type": "closed", "reason": "closed"}
    assert len(frames.audio) > 0


async def test_configure_changes_voice_and_speed_for_later_text(server):
    async with bidi(server) as ws:
        await ws.send(json.dumps({"type": "config", "voice": "am_adam", "speed": 2.0}))
        await ws.send(encode_command(SendText("Hello there.")))
        await ws.send(encode_command(Flush()))
        fast = await receive_until(ws, "flushed")
        await ws.send(json.dumps({"type": "config", "speed": 1.0}))
        await ws.send(encode_command(SendText("Hello there.")))
        await ws.send(encode_command(Flush()))
        normal = await receive_until(ws, "flushed")
    assert not fast.of_type("error") and not normal.of_type("error")
    # Durations are pinned per phoneme in the test model, so speed 2 gives about half the audio.
    assert len(fast.audio) < 0.7 * len(normal.audio)


async def test_session_answers_websocket_pings(server):
    async with bidi(server) as ws:
        pong = await ws.ping(b"are you there")
        latency = await pong
        assert latency >= 0
        await ws.send(encode_command(SynthesizeRequest("Hi.", request_id="after-ping")))
        frames = await receive_until(ws, "synthesis_complete")
    assert frames.of_type("synthesis_complete")[0]["request_id"] == "after-ping"


async def test_ping_answers_while_busy_and_a_disconnect_mid_utterance_stops_generation(server):
    runtime = server.runtime
    async with bidi(server) as ws:
        await ws.send(encode_command(SendText(FIVE_SENTENCES)))
        await ws.send(encode_command(Flush()))
        await receive_until_audio(ws)
        async with httpx.AsyncClient(base_url=server.http_url) as client:
            ping = await client.get("/ping")
        assert ping.status_code == 200 and ping.json()["sessions"] == 1
        # The utterance was still being synthesized after /ping answered: it never waits for the model thread.
        more = await receive_until_audio(ws)
        assert not more.of_type("flushed")
        session_ids = runtime.session_ids()
        assert len(session_ids) == 1
        jobs_before = runtime.scheduler.jobs_run
    # The client went away after the first sentence: its session must end and take its queued work with it.
    await wait_for(lambda: runtime.active_sessions == 0, "the server still holds the session")
    assert await runtime.scheduler.wait_idle(60)
    assert not session_ids & runtime.scheduler.pending_sessions()
    # At most the sentence that was already running when the client left; never the other two.
    assert runtime.scheduler.jobs_run - jobs_before <= 1


async def test_sample_rate_format_and_staleness_of_whole_requests_like_the_aws_sample(server):
    import time

    async with bidi(server) as ws:
        await ws.send(encode_command(SynthesizeRequest("Hi.", request_id="mp3", audio_format="mp3")))
        refused = (await receive_until(ws, "error")).of_type("error")[0]
        assert (refused["code"], refused["request_id"]) == ("bad_message", "mp3")
        stale = SynthesizeRequest("Hi.", request_id="old", request_timestamp=time.time() - 120)
        await ws.send(encode_command(stale))
        refused = (await receive_until(ws, "error")).of_type("error")[0]
        assert (refused["code"], refused["request_id"]) == ("request_stale", "old")
        assert refused["message"].startswith("request_stale")  # the token the sample's client looks for
        fresh = SynthesizeRequest("Hello there.", request_id="16k", sample_rate=16000, request_timestamp=time.time())
        await ws.send(encode_command(fresh))
        frames = await receive_until(ws, "synthesis_complete")
    for end in frames.of_type("sentence_end"):
        sent = frames.audio_by_sentence()[end["seq"]]
        assert sent / (2 * 16000) == pytest.approx(end["duration_s"], abs=0.002)
    assert not frames.of_type("error")


@pytest.mark.parametrize("rate", ["11025", "fast"])
async def test_a_rate_the_server_cannot_give_in_the_query_string_ends_the_session_before_any_audio(server, rate):
    # A later `config` with a bad rate is answered and the session goes on; a rate set when connecting is a
    # promise about every frame to come, so a client that ignores error frames must not get 24 kHz unawares.
    async with connect(server.ws_url + BIDI_PATH + f"?sample_rate={rate}") as ws:
        frames = await receive_all(ws)
        assert ws.close_code == 1008
    assert frames.kinds == ["error", "closed"] and not frames.audio
    error = frames.of_type("error")[0]
    assert (error["code"], error["fatal"]) == ("bad_message", True)
    assert "8000, 16000, 22050, 24000" in error["message"] and "connect again" in error["message"]
    assert repr(rate) in error["message"] or f" {rate} " in error["message"]  # what was wrong, as it was sent


async def test_the_rate_can_come_in_the_query_string_as_pipecat_sends_it(server):
    async with connect(server.ws_url + BIDI_PATH + "?sample_rate=8000&encoding=linear16") as ws:
        await ws.send(encode_command(SendText("Hello there, friends.")))
        await ws.send(encode_command(Flush("q")))
        frames = await receive_until(ws, "flushed")
    ends = frames.of_type("sentence_end")
    assert ends
    assert sum(frames.audio_by_sentence().values()) / (2 * 8000) == pytest.approx(
        sum(e["duration_s"] for e in ends), abs=0.003
    )
