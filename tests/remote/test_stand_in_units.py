"""The stand-in's pure parts: event-stream framing, SigV4 checking, and the error wording for SDK failures."""

from __future__ import annotations

import datetime
import random

import pytest
from awscrt.exceptions import AwsCrtError
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from smithy_aws_event_stream.events import EventMessage

from endpoint.sagemaker_local.auth import BAD_SIGNATURE, EXPIRED_TOKEN, MISSING_TOKEN, UNKNOWN_KEY, CredentialCheck
from endpoint.sagemaker_local.bridge import ContainerTarget
from endpoint.sagemaker_local.stream_bridge import split_payload
from endpoint.sagemaker_local.wire import (
    EndOfInput,
    FrameSplitter,
    RequestPart,
    WireError,
    encode_payload_part,
    encode_request_part,
    open_envelope,
)
from engine.clients.errors import EndpointContext, from_sagemaker_sdk, from_transport
from engine.errors import ErrorCode


def envelope(inner: bytes) -> bytes:
    """A request event as the SDK sends it: the inner message inside a signed envelope."""
    headers = {":date": datetime.datetime.now(datetime.UTC), ":chunk-signature": b"\x00" * 32}
    return EventMessage(headers=headers, payload=inner).encode()


def test_frames_come_out_whole_however_the_bytes_are_cut() -> None:
    parts = [
        (b'{"type":"text","text":"Hello."}', "UTF8"),
        (b"\x00\x01" * 3000, "BINARY"),
        (b'{"type":"close"}', "UTF8"),
    ]
    stream = b"".join(envelope(encode_request_part(p, t)) for p, t in parts) + envelope(b"")
    rng = random.Random(7)
    for _ in range(50):
        splitter, cuts = FrameSplitter(), sorted(rng.sample(range(1, len(stream)), 12))
        pieces = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
        decoded = [open_envelope(m) for piece in pieces for m in splitter.feed(piece)]
        assert decoded == [RequestPart(p, t) for p, t in parts] + [EndOfInput()]
        assert splitter.pending_bytes == 0


def test_unsigned_parts_and_other_events() -> None:
    [message] = FrameSplitter().feed(encode_request_part(b"raw", None))
    assert open_envelope(message) == RequestPart(b"raw", None)
    other = EventMessage(headers={":message-type": "event", ":event-type": "initial-request"}).encode()
    assert open_envelope(FrameSplitter().feed(other)[0]) is None


def test_garbage_is_refused_not_guessed() -> None:
    with pytest.raises(WireError):
        FrameSplitter().feed(b"\x00\x00\x00\x05garbage-garbage")
    frame = bytearray(encode_request_part(b"x", "UTF8"))
    frame[-1] ^= 0xFF  # break the message CRC
    with pytest.raises(WireError):
        FrameSplitter().feed(bytes(frame))


def test_response_parts_split_into_partial_pieces() -> None:
    assert split_payload(b"abc", None) == [(b"abc", None)]
    assert split_payload(b"abcdefg", 3) == [(b"abc", "PARTIAL"), (b"def", "PARTIAL"), (b"g", "COMPLETE")]
    [message] = FrameSplitter().feed(encode_payload_part(b"pcm", "BINARY", "PARTIAL"))
    assert message.headers["CompletionState"] == "PARTIAL" and message.payload == b"pcm"


def test_container_target_urls() -> None:
    target = ContainerTarget("http://127.0.0.1:8080")
    assert target.websocket_url() == "ws://127.0.0.1:8080/invocations-bidirectional-stream"
    assert target.websocket_url("custom/path", "a=1") == "ws://127.0.0.1:8080/custom/path?a=1"
    assert target.invocations_url == "http://127.0.0.1:8080/invocations"
    with pytest.raises(ValueError, match="must look like"):
        ContainerTarget("127.0.0.1:8080")


def signed_headers(key_id: str, secret: str, body: bytes, stream: bool = False) -> dict[str, str]:
    headers = {"content-type": "application/json"}
    if stream:
        headers["x-amz-content-sha256"] = "STREAMING-AWS4-HMAC-SHA256-EVENTS"
    request = AWSRequest("POST", "https://127.0.0.1:8443/endpoints/ep/invocations", data=body, headers=headers)
    SigV4Auth(Credentials(key_id, secret), "sagemaker", "us-east-1").add_auth(request)
    return {k.lower(): v for k, v in request.headers.items()} | {"host": "127.0.0.1:8443"}


@pytest.mark.parametrize("stream", [False, True])
def test_sigv4_check(stream: bool) -> None:
    check = CredentialCheck({"AKIDGOOD": "secret", "AKIDOLD": "old"}, expired=["AKIDOLD"])
    path, body = "/endpoints/ep/invocations", b'{"text":"hi"}'
    assert check.check("POST", path, "", signed_headers("AKIDGOOD", "secret", body, stream), body) is None
    assert check.check("POST", path, "", signed_headers("AKIDGOOD", "wrong", body, stream), body) == BAD_SIGNATURE
    assert check.check("POST", path, "", signed_headers("AKIDNOPE", "secret", body, stream), body) == UNKNOWN_KEY
    assert check.check("POST", path, "", signed_headers("AKIDOLD", "old", body, stream), body) == EXPIRED_TOKEN
    assert check.check("POST", path, "", {"host": "x"}, body) == MISSING_TOKEN
    if not stream:  # the body is covered by the signature only when its hash is
        assert check.check("POST", path, "", signed_headers("AKIDGOOD", "secret", body), b"tampered") == BAD_SIGNATURE


def test_crt_tls_failure_is_worded_for_people() -> None:
    """When awscrt itself reports the bad certificate (after s2n's delay), the message is the same."""
    ctx = EndpointContext("ep", "us-east-1", "https://runtime.sagemaker.us-east-1.amazonaws.com:8443")
    crt = AwsCrtError(1029, "AWS_IO_TLS_ERROR_NEGOTIATION_FAILURE", "TLS (SSL) negotiation failed")
    wrapped = RuntimeError("transport failed")
    wrapped.__cause__ = crt
    error = from_sagemaker_sdk(wrapped, ctx)
    assert error.code == ErrorCode.CONNECTION and "does not trust" in error.message and "AWS_CA_BUNDLE" in error.message
    refused = from_transport(AwsCrtError(1047, "AWS_IO_SOCKET_CONNECTION_REFUSED", "refused"), ctx)
    assert "Cannot reach" in refused.message
