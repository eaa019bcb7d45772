"""Formats, sample rates, whole bodies and admission answers on the HTTP routes, against a real
``voicedesk serve`` app: httpx for ``/invocations`` (the AWS Kokoro sample's fields, as its client sends them),
the official ``openai`` client for ``/v1/audio/speech`` with every ``response_format``. Each case is one of
issue 12's incompatibilities."""

from __future__ import annotations

import base64
import io
import time
import wave

import av
import httpx
import openai
import pytest

from tests.endpoint.test_http import _sse_events
from tests.support.endpoint import GUARD_S
from tests.support.load import busy_model
from voicedesk.engine.audio_formats import FORMATS, MIME_TYPES
from voicedesk.engine.errors import ErrorCode

TEXT = "Hello there."
DEMUXERS = {"mp3": "mp3", "opus": "ogg", "flac": "flac", "aac": "aac"}


def _post(server, body: dict, path: str = "/invocations") -> httpx.Response:
    return httpx.post(server.http_url + path, json=body, timeout=GUARD_S)


def decoded(data: bytes, audio_format: str, pcm_rate: int = 24000) -> tuple[float, int]:
    """(seconds, rate) as an independent reader sees them."""
    if audio_format == "pcm":
        return len(data) / 2 / pcm_rate, pcm_rate
    if audio_format == "wav":
        with wave.open(io.BytesIO(data)) as reader:
            frames = len(reader.readframes(reader.getnframes())) // 2
            return frames / reader.getframerate(), reader.getframerate()
    samples, rate = 0, 0
    with av.open(io.BytesIO(data), format=DEMUXERS[audio_format]) as container:
        for frame in container.decode(audio=0):
            samples += frame.samples
            rate = frame.sample_rate
    return samples / rate, rate


@pytest.fixture(scope="module")
def openai_client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.http_url + "/v1", api_key="unused", max_retries=0, timeout=GUARD_S)


@pytest.fixture(scope="module")
def reference_s(server) -> float:
    """TEXT's duration at 24 kHz (durations are deterministic for a text and voice)."""
    response = _post(server, {"text": TEXT, "format": "pcm"})
    assert response.status_code == 200
    return len(response.content) / 48000


@pytest.mark.parametrize("response_format", [None, *FORMATS])
def test_openai_client_gets_every_response_format(server, openai_client, reference_s, response_format):
    """OpenAI's formats, mp3 by default as OpenAI's own API."""
    options = {} if response_format is None else {"response_format": response_format}
    reply = openai_client.audio.speech.create(model="tts-1", voice="af_heart", input=TEXT, **options)
    audio_format = response_format or "mp3"
    assert reply.response.headers["content-type"] == MIME_TYPES[audio_format]
    seconds, rate = decoded(reply.content, audio_format)
    assert rate == (48000 if audio_format == "opus" else 24000)
    assert reference_s - 0.001 <= seconds <= reference_s + 0.25  # mp3/aac streams carry their codec padding


def test_sample_rate_is_honoured_not_ignored(server, reference_s):
    """Asked for 16 kHz, the sample's client labelled 24 kHz audio 16 kHz and played it 1.5× slow."""
    for rate in (8000, 16000, 44100):  # every rate and format is decoded in tests/engine/test_audio_formats.py
        body = {"text": TEXT, "format": "wav", "sample_rate": rate, "request_timestamp": time.time()}
        response = _post(server, body)
        assert response.status_code == 200
        assert response.headers["x-sample-rate"] == str(rate)
        wav = response.content
        assert int.from_bytes(wav[24:28], "little") == rate  # where the sample's client reads the rate
        seconds, decoded_rate = decoded(wav, "wav")
        assert decoded_rate == rate
        assert seconds == pytest.approx(reference_s, abs=0.002)
    pcm = _post(server, {"text": TEXT, "format": "pcm", "sample_rate": 16000}).content
    assert len(pcm) / 32000 == pytest.approx(reference_s, abs=0.002)


def test_compressed_formats_at_other_rates_on_both_routes(server, openai_client, reference_s):
    mp3 = _post(server, {"text": TEXT, "format": "mp3", "sample_rate": 16000})
    assert mp3.status_code == 200 and mp3.headers["content-type"] == "audio/mpeg"
    seconds, rate = decoded(mp3.content, "mp3")
    assert rate == 16000 and reference_s <= seconds <= reference_s + 0.25
    flac = openai_client.audio.speech.create(
        model="tts-1", voice="af_heart", input=TEXT, response_format="flac", extra_body={"sample_rate": 8000}
    )
    seconds, rate = decoded(flac.content, "flac")
    assert rate == 8000 and seconds == pytest.approx(reference_s, abs=0.002)


@pytest.mark.parametrize(
    ("fields", "hint"),
    [
        ({"sample_rate": 11025}, "8000, 16000, 22050, 24000, 44100, 48000"),
        ({"format": "opus", "sample_rate": 22050}, "with opus; use one of: 8000, 16000, 24000, 48000"),
        ({"sample_rate": "16000"}, "whole number of Hz"),
        ({"sample_rate": True}, "whole number of Hz"),
        ({"stream": "no"}, "true or false"),
        ({"request_timestamp": "yesterday"}, "epoch seconds"),
        ({"request_timestamp": time.time() * 1000}, "looks like milliseconds"),
    ],
)
def test_options_we_decline_get_a_clear_refusal(server, fields, hint):
    response = _post(server, {"text": "Hi.", **fields})
    assert response.status_code == 400
    answer = response.json()
    assert answer["code"] == ErrorCode.BAD_MESSAGE == answer["error"]
    assert hint in answer["message"]


def test_wav_header_goes_out_with_the_first_audio(server):
    """A client timing its first non-empty read timed a lone header (54–83 ms) instead of the first audio."""
    with httpx.stream("POST", server.http_url + "/invocations", json={"text": TEXT}, timeout=GUARD_S) as response:
        assert response.status_code == 200
        pieces = response.iter_raw()
        first = next(chunk for chunk in pieces if chunk)
        rest = b"".join(pieces)
    assert first.startswith(b"RIFF") and len(first) > 44 + 1000
    with wave.open(io.BytesIO(first + rest)) as reader:
        assert reader.getframerate() == 24000


@pytest.mark.parametrize(("audio_format", "rate"), [("wav", 22050), ("mp3", 24000), ("flac", 16000)])
def test_stream_false_is_one_whole_file_with_real_sizes(server, reference_s, audio_format, rate):
    """``stream: false`` was ignored: InvokeEndpoint got a streaming header (wave read 2,147,483,629 frames)."""
    body = {"text": TEXT, "format": audio_format, "sample_rate": rate, "stream": False}
    response = _post(server, body)
    assert response.status_code == 200
    data = response.content
    assert int(response.headers["content-length"]) == len(data)
    assert "chunked" not in response.headers.get("transfer-encoding", "")
    assert float(response.headers["x-audio-duration"]) == pytest.approx(reference_s, abs=0.001)
    assert float(response.headers["x-rtf"]) > 0 and int(response.headers["x-inference-time-ms"]) >= 0
    assert response.headers["x-characters-processed"] == str(len(TEXT))
    seconds, decoded_rate = decoded(data, audio_format)
    assert decoded_rate == rate
    assert seconds == pytest.approx(reference_s, abs=0.002)  # whole mp3 files say their encoder delay
    if audio_format == "wav":
        with wave.open(io.BytesIO(data)) as reader:
            assert reader.getnframes() == (len(data) - 44) // 2
        assert int.from_bytes(data[4:8], "little") == len(data) - 8


def test_sse_carries_the_asked_format_and_rate(server, reference_s):
    body = {"text": TEXT, "transport": "sse", "format": "mp3", "sample_rate": 16000, "request_id": "s1"}
    with httpx.stream("POST", server.http_url + "/invocations", json=body, timeout=GUARD_S) as response:
        assert response.status_code == 200
        events = _sse_events(list(response.iter_lines()))
    start, end = events[0][1], events[-1][1]
    assert (start["format"], start["sample_rate"], start["encoding"]) == ("mp3", 16000, "mp3")
    assert start["voice"] == "af_heart"
    chunks = [base64.b64decode(data["audio"]) for name, data in events if name == "audio_chunk"]
    assert end["total_chunks"] == len(chunks)
    assert end["duration_s"] == pytest.approx(reference_s, abs=1e-3)
    seconds, rate = decoded(b"".join(chunks), "mp3")
    assert rate == 16000 and reference_s <= seconds <= reference_s + 0.25


def test_stale_request_is_refused_with_408_request_stale(server):
    """A request_timestamp 120 s old used to be synthesized anyway."""
    response = _post(server, {"text": TEXT, "request_timestamp": time.time() - 120, "request_id": "old"})
    assert response.status_code == 408
    answer = response.json()
    assert answer["error"] == answer["code"] == ErrorCode.REQUEST_STALE
    assert answer["request_id"] == "old"
    assert "s ago" in answer["message"] and "56 s" in answer["message"]
    fresh = _post(server, {"text": "Hi.", "format": "pcm", "request_timestamp": time.time() - 5})
    assert fresh.status_code == 200


def test_saturated_model_is_answered_503_queue_saturated(make_server):
    running = make_server(max_queue_depth=0, shutdown_grace_s=1.0)
    client = openai.OpenAI(base_url=running.http_url + "/v1", api_key="unused", max_retries=0, timeout=GUARD_S)
    with busy_model(running):
        response = _post(running, {"text": TEXT, "format": "pcm"})
        assert response.status_code == 503
        answer = response.json()
        assert int(response.headers["retry-after"]) == answer["retry_after_s"] >= 1
        assert answer["error"] == answer["code"] == ErrorCode.QUEUE_SATURATED
        assert answer["queue_depth"] >= 1 and answer["max_queue_depth"] == 0
        with pytest.raises(openai.InternalServerError) as refused:
            client.audio.speech.create(model="tts-1", voice="af_heart", input=TEXT)
        assert refused.value.status_code == 503 and "queue_saturated" in refused.value.message
    assert _post(running, {"text": "Hi.", "format": "pcm"}).status_code == 200  # load gone, served again
