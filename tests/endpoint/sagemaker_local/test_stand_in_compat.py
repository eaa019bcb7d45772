"""The stand-in behaves like SageMaker where a client can tell, each checked with the real client library (the
HTTP/2 SDK over awscrt, boto3) against the real container (`voicedesk serve`'s app) behind the stand-in."""

from __future__ import annotations

import asyncio
import json
import shlex
import ssl
import struct
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from io import BytesIO
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from aws_sdk_sagemaker_runtime_http2.client import AsyncSageMakerRuntimeHTTP2Client
from aws_sdk_sagemaker_runtime_http2.config import AsyncSageMakerRuntimeHTTP2Config
from aws_sdk_sagemaker_runtime_http2.models import (
    InvokeEndpointWithBidirectionalStreamInput,
    ModelStreamError,
    RequestPayloadPart,
    RequestStreamEventPayloadPart,
    ResponseStreamEventPayloadPart,
)
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from smithy_aws_event_stream.events import Event

from tests.support.stand_in import ENDPOINT, GUARD_S, REGION, TEST_KEY_ID, TEST_SECRET, StandInThread
from voicedesk.app.lab.sagemaker_local.auth import CredentialCheck
from voicedesk.app.lab.sagemaker_local.wire import MAX_MESSAGE_BYTES
from voicedesk.endpoint.runner import ServerThread
from voicedesk.engine.clients.http2 import CRTClient
from voicedesk.engine.clients.invoke import WholeRequestClient
from voicedesk.engine.clients.sagemaker import SageMakerEngine
from voicedesk.engine.commands import main
from voicedesk.engine.engine_spec import EngineSpec
from voicedesk.engine.errors import ErrorCode, VoicedeskError


@asynccontextmanager
async def sdk_client(stand_in: StandInThread) -> AsyncIterator[AsyncSageMakerRuntimeHTTP2Client]:
    """The SDK as its documentation sets it up; CRTClient only adds trust in the stand-in's CA."""
    config = await AsyncSageMakerRuntimeHTTP2Config.resolve(
        region=REGION, endpoint_uri=stand_in.url, transport=CRTClient(stand_in.ca_file)
    )
    client = AsyncSageMakerRuntimeHTTP2Client(config=config)
    try:
        yield client
    finally:
        await client.close()


def utf8(message: dict[str, Any]) -> RequestStreamEventPayloadPart:
    return RequestStreamEventPayloadPart(
        value=RequestPayloadPart(bytes_=json.dumps(message).encode(), data_type="UTF8")
    )


async def read_to_the_end(output: Any) -> list[Any]:
    events = []
    async with asyncio.timeout(GUARD_S):
        async for event in output:
            events.append(event)
    return events


async def test_output_ends_when_the_container_closes_while_the_input_is_still_open(stand_in: StandInThread) -> None:
    """SageMaker keeps a stream "until either the client closes it or the model indicates completion": a client
    that reads the output to its end before closing its input must see that end."""
    async with sdk_client(stand_in) as client:
        for _ in range(2):  # the second stream proves the HTTP/2 connection survived the early end
            stream = await client.invoke_endpoint_with_bidirectional_stream(
                InvokeEndpointWithBidirectionalStreamInput(endpoint_name=ENDPOINT)
            )
            await stream.input_stream.send(utf8({"type": "config", "voice": "af_heart"}))
            await stream.input_stream.send(utf8({"type": "close"}))
            _, output = await stream.await_output()
            events = await read_to_the_end(output)  # input still open here
            assert all(isinstance(e, ResponseStreamEventPayloadPart) for e in events)
            last = json.loads(events[-1].value.bytes_)
            assert last == {"type": "closed", "reason": "closed"} and events[-1].value.data_type == "UTF8"
            # What the client still sends after the end is dropped, and closing the input is still fine.
            await stream.input_stream.send(utf8({"type": "text", "text": "too late"}))
            await stream.input_stream.close()


async def test_a_stream_past_its_maximum_duration_ends_like_sagemaker(container: ServerThread, make_stand_in) -> None:
    stand_in = make_stand_in(container.http_url, max_stream_duration_s=1.0)
    async with sdk_client(stand_in) as client:
        stream = await client.invoke_endpoint_with_bidirectional_stream(
            InvokeEndpointWithBidirectionalStreamInput(endpoint_name=ENDPOINT)
        )
        await stream.input_stream.send(utf8({"type": "config", "voice": "af_heart"}))
        _, output = await stream.await_output()
        with pytest.raises(ModelStreamError) as caught:
            await read_to_the_end(output)  # the session is idle: only the time limit ends it
        assert caught.value.error_code == "ModelInvocationTimeExceeded"
        assert "maximum duration of 1 s" in caught.value.message
        await stream.input_stream.close()
    assert stand_in.config.expired_streams == 1


def test_response_stream_reply_names_the_content_type(stand_in: StandInThread) -> None:
    client = boto3.client(
        "sagemaker-runtime", region_name=REGION, endpoint_url=stand_in.url, verify=str(stand_in.ca_file)
    )
    try:
        reply = client.invoke_endpoint_with_response_stream(
            EndpointName=ENDPOINT,
            ContentType="application/json",
            Accept="text/event-stream",
            Body=json.dumps({"text": "Hi.", "transport": "sse"}),
        )
        body = b"".join(event["PayloadPart"]["Bytes"] for event in reply["Body"] if "PayloadPart" in event)
    finally:
        client.close()
    assert reply["ContentType"].startswith("text/event-stream")  # the container's, as SageMaker passes it on
    assert reply["InvokedProductionVariant"] == "AllTraffic"
    assert b"audio_stream_end" in body


def test_printed_environment_is_enough_for_a_plain_boto3_client(
    stand_in: StandInThread,
    stand_in_state: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    port = str(stand_in.server.port)
    assert main(["sagemaker-local", "--print-env", "--port", port, "--state-dir", str(stand_in_state)]) == 0
    exports = [shlex.split(line)[1] for line in capsys.readouterr().out.splitlines() if line.startswith("export ")]
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    for name, _, value in (export.partition("=") for export in exports):
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)

    client = boto3.client("sagemaker-runtime")  # no region, URL or CA given: all from the printed environment
    try:
        reply = client.invoke_endpoint(
            EndpointName=ENDPOINT, ContentType="application/json", Accept="audio/wav", Body=b'{"text": "Hi."}'
        )
        wav = reply["Body"].read()
    finally:
        client.close()
    assert client.meta.region_name == REGION
    assert reply["ContentType"] == "audio/wav" and wav[:4] == b"RIFF"


async def test_a_message_over_the_size_limit_ends_the_stream_unread(stand_in: StandInThread) -> None:
    """A prelude claiming 1 GiB is refused on its 12 bytes (a real HTTP/2 client, signed like the SDK signs)."""
    prelude = struct.pack("!II", 1 << 30, 0)
    body = prelude + struct.pack("!I", zlib.crc32(prelude))
    url = f"{stand_in.url}/endpoints/{ENDPOINT}/invocations-bidirectional-stream"
    request = AWSRequest(
        "POST",
        url,
        data=body,
        headers={
            "content-type": "application/vnd.amazon.eventstream",
            "x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-EVENTS",
        },
    )
    SigV4Auth(Credentials(TEST_KEY_ID, TEST_SECRET), "sagemaker", REGION).add_auth(request)
    context = ssl.create_default_context(cafile=str(stand_in.ca_file))
    async with httpx.AsyncClient(http2=True, verify=context, timeout=GUARD_S) as client:
        reply = await client.post(url, content=body, headers=dict(request.headers))
    assert (reply.status_code, reply.http_version) == (200, "HTTP/2")
    event = Event.decode(BytesIO(reply.content))
    assert event is not None and event.message.headers[":exception-type"] == "InternalStreamFailure"
    message = json.loads(event.message.payload)["Message"]
    assert f"claims 1,073,741,824 bytes, over the limit of {MAX_MESSAGE_BYTES:,}" in message


def test_max_stream_duration_must_be_positive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["sagemaker-local", "--print-env", "--state-dir", str(tmp_path), "--max-stream-duration", "0"]
    assert main(args) == 2
    assert "--max-stream-duration must be a positive number of seconds; got 0." in capsys.readouterr().err


def skewed(minutes: float) -> CredentialCheck:
    """The test key, checked by a service whose clock is ``minutes`` ahead of this machine's."""
    return CredentialCheck({TEST_KEY_ID: TEST_SECRET}, clock=lambda: datetime.now(UTC) + timedelta(minutes=minutes))


@pytest.mark.parametrize("minutes", [20, -20], ids=["client clock behind", "client clock ahead"])
async def test_a_clock_more_than_15_minutes_off_is_named(container: ServerThread, make_stand_in, minutes) -> None:
    stand_in = make_stand_in(container.http_url, credentials=skewed(minutes))
    spec = EngineSpec(
        kind="sagemaker",
        target=ENDPOINT,
        region=REGION,
        options={"endpoint_url": stand_in.url, "ca_file": str(stand_in.ca_file)},
    )
    # The HTTP/2 SDK passes on only the error's type, so the message names the clock as a possible cause.
    engine = SageMakerEngine.from_spec(spec)
    with pytest.raises(VoicedeskError, match=r"InvalidSignatureException.*check this computer's clock") as caught:
        await engine.open_session()
    assert caught.value.code == ErrorCode.UNAUTHORIZED
    await engine.aclose()
    # boto3 passes on AWS's message too, so the whole-request path says exactly what is wrong.
    whole = WholeRequestClient(ENDPOINT, REGION, endpoint_url=stand_in.url, ca_bundle=str(stand_in.ca_file))
    with whole, pytest.raises(VoicedeskError, match=r"clock is more than 15 minutes off: set it right") as caught:
        await asyncio.to_thread(whole.synthesize, "Hi.")
    assert caught.value.code == ErrorCode.UNAUTHORIZED
    assert ("Signature expired" if minutes > 0 else "Signature not yet current") in caught.value.message


def test_a_request_signed_for_another_region_is_refused(stand_in: StandInThread) -> None:
    whole = WholeRequestClient(ENDPOINT, "eu-west-1", endpoint_url=stand_in.url, ca_bundle=str(stand_in.ca_file))
    with whole, pytest.raises(VoicedeskError, match=r"signed for another region than the endpoint's") as caught:
        whole.synthesize("Hi.")
    assert "Credential should be scoped to a valid region" in caught.value.message
