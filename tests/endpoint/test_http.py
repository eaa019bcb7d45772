"""HTTP routes with real clients: ``/invocations`` (WAV, PCM, SSE) over httpx, and the OpenAI-compatible
``/v1/audio/speech`` through the official ``openai`` client."""

from __future__ import annotations

import base64
import json
import logging

import httpx
import openai
import pytest

from tests.support.endpoint import GUARD_S, TWO_SENTENCES, pcm_seconds
from voicedesk.engine.audio import streaming_wav_header
from voicedesk.engine.errors import ErrorCode


def _post(server, path: str, body: object) -> httpx.Response:
    return httpx.post(server.http_url + path, json=body, timeout=GUARD_S)


def _sse_events(lines: list[str]) -> list[tuple[str | None, dict]]:
    events, name = [], None
    for line in lines:
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            events.append((name, json.loads(line.removeprefix("data: "))))
            name = None
    return events


def test_invocation_streams_wav_header_first(server):
    chunks = []
    with httpx.stream(
        "POST", server.http_url + "/invocations", json={"text": "Hello there.", "format": "wav"}, timeout=GUARD_S
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "audio/wav"
        assert response.headers["x-sample-rate"] == "24000"
        chunks = list(response.iter_raw())
    body = b"".join(chunks)
    header = streaming_wav_header()
    assert body.startswith(header)
    assert len(body) > len(header) + 1000
    assert (len(body) - len(header)) % 2 == 0


def test_invocation_streams_raw_pcm(server):
    response = _post(server, "/invocations", {"text": "Hello there.", "format": "pcm", "speed": 1.5})
    assert response.status_code == 200
    assert response.headers["content-type"] == "audio/pcm"
    assert not response.content.startswith(b"RIFF")
    assert len(response.content) > 1000 and len(response.content) % 2 == 0


def test_invocation_sse_carries_base64_chunks_and_their_duration(server):
    with httpx.stream(
        "POST",
        server.http_url + "/invocations",
        json={"text": TWO_SENTENCES, "transport": "sse", "request_id": "sse-1"},
        timeout=GUARD_S,
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = _sse_events(list(response.iter_lines()))
    names = [name for name, _ in events]
    assert names[0] == "audio_stream_start" and names[-1] == "audio_stream_end"
    assert set(names[1:-1]) == {"audio_chunk"}
    assert all(data["type"] == name for name, data in events)
    start, end = events[0][1], events[-1][1]
    assert start["sample_rate"] == 24000 and start["encoding"] == "pcm_s16le"
    pcm = b"".join(base64.b64decode(data["audio"]) for name, data in events if name == "audio_chunk")
    assert len(pcm) > 0
    assert end["request_id"] == "sse-1"
    assert end["duration_s"] == pytest.approx(pcm_seconds(len(pcm)), abs=1e-5)
    assert end["sentences"] == len([n for n in names if n == "audio_chunk"]) == 2


@pytest.mark.parametrize(
    ("body", "status", "code", "hint"),
    [
        (b"{nope", 400, ErrorCode.BAD_JSON, "JSON"),
        ({"voice": "af_heart"}, 400, ErrorCode.BAD_MESSAGE, "'text'"),
        ({"text": "  "}, 400, ErrorCode.EMPTY_TEXT, "empty"),
        ({"text": "Hi.", "voice": "zz_nobody"}, 400, ErrorCode.UNKNOWN_VOICE, "af_heart"),
        ({"text": "Hi.", "speed": 0.1}, 400, ErrorCode.BAD_SPEED, "0.25"),
        ({"text": "Hi.", "format": "ogg"}, 400, ErrorCode.BAD_MESSAGE, "pcm, wav, mp3, opus, flac, aac"),
        ({"text": "Hi.", "transport": "carrier pigeon"}, 400, ErrorCode.BAD_MESSAGE, "binary, sse"),
        ({"text": "x" * 20_001, "request_id": "big"}, 413, ErrorCode.TEXT_TOO_LONG, "20,000"),
        ({"text": "x" * 300_000}, 413, ErrorCode.FRAME_TOO_LARGE, "bytes"),
    ],
)
def test_invocation_refuses_bad_requests_clearly(server, body, status, code, hint):
    if isinstance(body, bytes):
        response = httpx.post(server.http_url + "/invocations", content=body, timeout=GUARD_S)
    else:
        response = _post(server, "/invocations", body)
    assert response.status_code == status
    answer = response.json()
    assert answer["code"] == code
    assert hint in answer["message"]
    if isinstance(body, dict) and "request_id" in body:
        assert answer["request_id"] == body["request_id"]


def _openai(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.http_url + "/v1", api_key="unused", max_retries=0, timeout=GUARD_S)


def test_openai_client_streams_speech_unchanged(server):
    client = _openai(server)
    with client.audio.speech.with_streaming_response.create(
        model="kokoro", voice="af_heart", input="Hello there.", response_format="wav"
    ) as response:
        body = b"".join(response.iter_bytes())
    assert body.startswith(b"RIFF") and body[8:12] == b"WAVE"
    assert len(body) > 44 + 1000
    with client.audio.speech.with_streaming_response.create(
        model="tts-1", voice="coral", input="Hello there.", response_format="pcm", speed=1.25
    ) as response:
        pcm = b"".join(response.iter_bytes())
    assert len(pcm) > 1000 and not pcm.startswith(b"RIFF")


def test_openai_client_gets_a_clear_error_for_formats_we_do_not_make(server):
    client = _openai(server)
    with pytest.raises(openai.BadRequestError) as refused:
        client.audio.speech.create(model="kokoro", voice="af_heart", input="Hi.", response_format="ogg")  # type: ignore[arg-type]
    assert "pcm, wav, mp3, opus, flac, aac" in refused.value.message
    with pytest.raises(openai.BadRequestError) as unknown:
        client.audio.speech.create(model="kokoro", voice="alloy", input="Hi.", response_format="wav")
    assert "af_alloy" in unknown.value.message  # alloy maps to af_alloy, not in the test cache


def test_openai_sse_stream_format(server):
    with httpx.stream(
        "POST",
        server.http_url + "/v1/audio/speech",
        json={
            "model": "kokoro",
            "voice": "am_adam",
            "input": "Hi there.",
            "stream_format": "sse",
            "response_format": "pcm",
        },
        timeout=GUARD_S,
    ) as response:
        assert response.status_code == 200
        events = [data for _, data in _sse_events(list(response.iter_lines()))]
    assert [e["type"] for e in events][-1] == "speech.audio.done"
    deltas = [base64.b64decode(e["audio"]) for e in events if e["type"] == "speech.audio.delta"]
    assert deltas and all(len(d) % 2 == 0 for d in deltas)


def test_voices_are_listed(server, synthesizer):
    response = httpx.get(server.http_url + "/v1/audio/voices", timeout=GUARD_S)
    assert response.status_code == 200
    voices = response.json()["voices"]
    assert voices == synthesizer.list_voices()
    assert {"af_heart", "am_adam", "bf_emma"} <= set(voices)


def test_logs_hold_the_text_only_with_debug_logging(server, caplog):
    with caplog.at_level(logging.INFO):
        response = _post(
            server, "/invocations", {"text": "Purple elephants.", "request_id": "rid-7731", "format": "pcm"}
        )
    assert response.status_code == 200
    assert "rid-7731" in caplog.text  # the request was logged...
    assert "elephants" not in caplog.text  # ...without what was said
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="voicedesk.endpoint"):
        response = _post(server, "/invocations", {"text": "Green giraffes.", "request_id": "debug", "format": "pcm"})
    assert response.status_code == 200
    assert "giraffes" in caplog.text
