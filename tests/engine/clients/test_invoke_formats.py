"""Issue 12 through plain boto3, as the AWS Kokoro sample's ``tts_client`` and its eval client call an endpoint
(``invoke_endpoint`` / ``invoke_endpoint_with_response_stream``, the body its ``_build_payload`` sends), against
the container behind the SageMaker stand-in. What the sample's client does with the answer is repeated here
in a line or two (its package is not on PyPI): the rate from WAV byte 24, the duration as (size − 44) / (rate ×
2), the first non-empty PayloadPart as time to first audio, and ``OriginalStatusCode`` 408 / 503 as
``RequestStaleError`` / ``QueueSaturatedError``."""

from __future__ import annotations

import io
import json
import time
import wave

import av
import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from tests.support.load import busy_model
from tests.support.stand_in import ENDPOINT, REGION, StandInThread

TEXT = "Hello there."


def runtime_client(stand_in: StandInThread):
    config = Config(retries={"max_attempts": 1, "mode": "standard"}, read_timeout=65, connect_timeout=5)
    return boto3.client(
        "sagemaker-runtime", region_name=REGION, endpoint_url=stand_in.url, verify=str(stand_in.ca_file), config=config
    )


def payload(**fields: object) -> bytes:
    """The sample client's body: text, voice, speed, format, request_timestamp (send time), sample_rate."""
    body = {"text": TEXT, "voice": "af_heart", "speed": 1.0, "format": "wav", "request_timestamp": time.time()}
    return json.dumps({**body, **fields}).encode()


def sample_wav_duration(data: bytes) -> float:
    rate = int.from_bytes(data[24:28], "little")
    return (len(data) - 44) / (rate * 2)


@pytest.fixture(scope="module")
def reference_s(container) -> float:
    import httpx

    reply = httpx.post(container.http_url + "/invocations", json={"text": TEXT, "format": "pcm"}, timeout=60)
    return len(reply.content) / 48000


def test_response_stream_wav_at_16k_is_labelled_and_timed_right(stand_in, reference_s):
    reply = runtime_client(stand_in).invoke_endpoint_with_response_stream(
        EndpointName=ENDPOINT, ContentType="application/json", Accept="audio/wav", Body=payload(sample_rate=16000)
    )
    parts = [event["PayloadPart"]["Bytes"] for event in reply["Body"] if "PayloadPart" in event]
    first = next(part for part in parts if part)
    audio = b"".join(parts)
    assert audio[:4] == b"RIFF" and int.from_bytes(audio[24:28], "little") == 16000
    assert len(first) > 44  # the first non-empty part already carries audio, not only the header
    assert sample_wav_duration(audio) == pytest.approx(reference_s, abs=0.002)  # not 1.5 × as long


def test_response_stream_mp3(stand_in, reference_s):
    reply = runtime_client(stand_in).invoke_endpoint_with_response_stream(
        EndpointName=ENDPOINT, ContentType="application/json", Accept="audio/mpeg", Body=payload(format="mp3")
    )
    audio = b"".join(event["PayloadPart"]["Bytes"] for event in reply["Body"] if "PayloadPart" in event)
    with av.open(io.BytesIO(audio), format="mp3") as container:
        samples = sum(frame.samples for frame in container.decode(audio=0))
    assert reference_s <= samples / 24000 <= reference_s + 0.25


def test_invoke_endpoint_with_stream_false_gets_a_whole_wav(stand_in, reference_s):
    reply = runtime_client(stand_in).invoke_endpoint(
        EndpointName=ENDPOINT,
        ContentType="application/json",
        Accept="audio/wav",
        Body=payload(stream=False, sample_rate=22050),
    )
    audio = reply["Body"].read()
    assert reply["ContentType"] == "audio/wav"
    with wave.open(io.BytesIO(audio)) as reader:
        assert reader.getframerate() == 22050
        assert reader.getnframes() == (len(audio) - 44) // 2  # real sizes, not 2,147,483,629 frames
    assert sample_wav_duration(audio) == pytest.approx(reference_s, abs=0.002)


def test_stale_request_is_original_status_408(stand_in):
    with pytest.raises(ClientError) as refused:
        runtime_client(stand_in).invoke_endpoint(
            EndpointName=ENDPOINT, ContentType="application/json", Body=payload(request_timestamp=time.time() - 120)
        )
    response = refused.value.response
    assert response["Error"]["Code"] == "ModelError"
    assert response["OriginalStatusCode"] == 408  # the sample's client raises RequestStaleError
    assert json.loads(response["OriginalMessage"])["error"] == "request_stale"


def test_saturated_container_is_original_status_503(make_container, make_stand_in):
    container = make_container(max_queue_depth=0, shutdown_grace_s=1.0, idle_timeout_s=120)
    client = runtime_client(make_stand_in(container.http_url))
    with busy_model(container), pytest.raises(ClientError) as refused:
        client.invoke_endpoint_with_response_stream(
            EndpointName=ENDPOINT, ContentType="application/json", Body=payload()
        )
    response = refused.value.response
    assert response["OriginalStatusCode"] == 503  # the sample's client raises QueueSaturatedError
    body = json.loads(response["OriginalMessage"])
    assert body["error"] == "queue_saturated" and body["max_queue_depth"] == 0
