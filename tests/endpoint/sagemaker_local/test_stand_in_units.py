"""The stand-in's pure parts: event-stream framing, SigV4 checking, and the error wording for SDK failures."""

from __future__ import annotations

import datetime
import os
import random
import stat
import struct
import zlib
from pathlib import Path

import botocore.auth
import pytest
from awscrt.exceptions import AwsCrtError
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from smithy_aws_event_stream.events import EventMessage

from voicedesk.app.lab.sagemaker_local.auth import (
    BAD_SIGNATURE,
    EXPIRED_TOKEN,
    MISSING_TOKEN,
    UNKNOWN_KEY,
    CredentialCheck,
)
from voicedesk.app.lab.sagemaker_local.config import ContainerTarget
from voicedesk.app.lab.sagemaker_local.server import prepare_tls
from voicedesk.app.lab.sagemaker_local.stream_bridge import split_payload
from voicedesk.app.lab.sagemaker_local.wire import (
    MAX_MESSAGE_BYTES,
    EndOfInput,
    FrameSplitter,
    RequestPart,
    WireError,
    encode_payload_part,
    encode_request_part,
    open_envelope,
)
from voicedesk.engine.clients.errors import EndpointContext, from_sagemaker_sdk, from_transport
from voicedesk.engine.errors import LocalErrorCode


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


def signed_headers(
    key_id: str,
    secret: str,
    body: bytes,
    stream: bool = False,
    *,
    at: datetime.datetime | None = None,
    service: str = "sagemaker",
    region: str = "us-east-1",
) -> dict[str, str]:
    """What botocore's own signer sends: signed now, or at ``at`` (the signer's clock set there)."""
    headers = {"content-type": "application/json"}
    if stream:
        headers["x-amz-content-sha256"] = "STREAMING-AWS4-HMAC-SHA256-EVENTS"
    request = AWSRequest("POST", "https://127.0.0.1:8443/endpoints/ep/invocations", data=body, headers=headers)
    signer = SigV4Auth(Credentials(key_id, secret), service, region)
    if at is None:
        signer.add_auth(request)
    else:
        with pytest.MonkeyPatch.context() as clock:
            clock.setattr(botocore.auth, "get_current_datetime", lambda remove_tzinfo=True: at.replace(tzinfo=None))
            signer.add_auth(request)
    return {k.lower(): v for k, v in request.headers.items()} | {"host": "127.0.0.1:8443"}


PATH, BODY = "/endpoints/ep/invocations", b'{"text":"hi"}'


@pytest.mark.parametrize("stream", [False, True])
def test_sigv4_check(stream: bool) -> None:
    check = CredentialCheck({"AKIDGOOD": "secret", "AKIDOLD": "old"}, expired=["AKIDOLD"])
    path, body = PATH, BODY
    assert check.check("POST", path, "", signed_headers("AKIDGOOD", "secret", body, stream), body) is None
    assert check.check("POST", path, "", signed_headers("AKIDGOOD", "wrong", body, stream), body) == BAD_SIGNATURE
    assert check.check("POST", path, "", signed_headers("AKIDNOPE", "secret", body, stream), body) == UNKNOWN_KEY
    assert check.check("POST", path, "", signed_headers("AKIDOLD", "old", body, stream), body) == EXPIRED_TOKEN
    assert check.check("POST", path, "", {"host": "x"}, body) == MISSING_TOKEN
    if not stream:  # the body is covered by the signature only when its hash is
        assert check.check("POST", path, "", signed_headers("AKIDGOOD", "secret", body), b"tampered") == BAD_SIGNATURE


NOW = datetime.datetime(2026, 3, 14, 12, 0, 0, tzinfo=datetime.UTC)


@pytest.mark.parametrize("keys", [{"AKIDGOOD": "secret"}, None], ids=["known keys", "any key"])
@pytest.mark.parametrize(
    ("signed_at", "accepted", "message"),
    [
        (NOW - datetime.timedelta(minutes=14), True, None),
        (NOW + datetime.timedelta(minutes=14), True, None),
        (
            datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC),
            False,
            "Signature expired: 20200101T000000Z is now earlier",
        ),
        (NOW - datetime.timedelta(minutes=16), False, "Signature expired"),
        (NOW + datetime.timedelta(minutes=16), False, "Signature not yet current: 20260314T121600Z is still later"),
    ],
)
def test_signatures_older_or_newer_than_15_minutes_are_refused(
    keys: dict[str, str] | None, signed_at: datetime.datetime, accepted: bool, message: str | None
) -> None:
    """A valid signature made at ``signed_at`` (the signer's clock) checked by a service whose clock says NOW."""
    headers = signed_headers("AKIDGOOD", "secret", BODY, at=signed_at)
    failure = CredentialCheck(keys).check("POST", PATH, "", headers, BODY, region="us-east-1", now=NOW)
    if accepted:
        assert failure is None
    else:
        assert failure is not None and (failure.status, failure.error_type) == (403, "InvalidSignatureException")
        assert message in failure.message


@pytest.mark.parametrize("keys", [{"AKIDGOOD": "secret"}, None], ids=["known keys", "any key"])
@pytest.mark.parametrize(
    ("service", "region", "message"),
    [
        ("s3", "us-east-1", "Credential should be scoped to correct service: 'sagemaker'"),
        ("sagemaker", "eu-west-1", "Credential should be scoped to a valid region"),
    ],
)
def test_signatures_for_another_service_or_region_are_refused(
    keys: dict[str, str] | None, service: str, region: str, message: str
) -> None:
    headers = signed_headers("AKIDGOOD", "secret", BODY, service=service, region=region)
    failure = CredentialCheck(keys).check("POST", PATH, "", headers, BODY, region="us-east-1")
    assert failure is not None and (failure.status, failure.error_type) == (403, "InvalidSignatureException")
    assert message in failure.message
    if service == "sagemaker":  # the same request is fine where it was meant to go: only the region was wrong
        assert CredentialCheck(keys).check("POST", PATH, "", headers, BODY, region=region) is None


def tamper(headers: dict[str, str], **parts: str) -> dict[str, str]:
    """The headers with some ``Authorization`` fields replaced (Credential, SignedHeaders, Signature)."""
    algorithm, _, rest = headers["authorization"].partition(" ")
    fields = dict(item.strip().split("=", 1) for item in rest.split(","))
    fields.update(parts)
    return headers | {"authorization": f"{algorithm} " + ", ".join(f"{k}={v}" for k, v in fields.items())}


@pytest.mark.parametrize("keys", [{"AKIDGOOD": "secret"}, None], ids=["known keys", "any key"])
@pytest.mark.parametrize(
    ("change", "error_type", "message"),
    [
        ({"authorization": "Bearer abc"}, "IncompleteSignatureException", "requires 'Credential' parameter"),
        ({"authorization": "AWS4-HMAC-SHA256 Credential=x"}, "IncompleteSignatureException", "'Signature'"),
        ({"authorization": "AWS4-HMAC-SHA256 ,,,==,"}, "IncompleteSignatureException", "requires"),
        ({"x-amz-date": "yesterday"}, "IncompleteSignatureException", "ISO-8601 'basic format'"),
        ({"x-amz-date": "20261399T990000Z"}, "IncompleteSignatureException", "real date"),
    ],
)
def test_malformed_authorization_is_a_403_not_a_crash(
    keys: dict[str, str] | None, change: dict[str, str], error_type: str, message: str
) -> None:
    headers = signed_headers("AKIDGOOD", "secret", BODY) | change
    failure = CredentialCheck(keys).check("POST", PATH, "", headers, BODY, region="us-east-1")
    assert failure is not None and (failure.status, failure.error_type) == (403, error_type)
    assert message in failure.message


@pytest.mark.parametrize(
    ("fields", "error_type", "message"),
    [
        ({"Signature": "\u00e9" * 64}, "InvalidSignatureException", "does not match"),
        ({"Signature": "ABC"}, "InvalidSignatureException", "does not match"),
        ({"Signature": "\x00" * 64}, "InvalidSignatureException", "does not match"),
        ({"Credential": "AKIDGOOD/20260314/us-east-1/sagemaker"}, "IncompleteSignatureException", "exactly 5"),
        ({"Credential": "AKIDGOOD/x/y/z/aws4_request/extra"}, "IncompleteSignatureException", "exactly 5"),
        ({"Credential": "AKIDGOOD/{today}/us-east-1/sagemaker/aws5"}, "InvalidSignatureException", "terminator"),
        ({"Credential": "AKIDGOOD/20200101/us-east-1/sagemaker/aws4_request"}, "InvalidSignatureException", "scope"),
        ({"SignedHeaders": "content-type;x-amz-date"}, "InvalidSignatureException", "'Host'"),
        ({"SignedHeaders": "host;x-amz-date;\u00fcber"}, "InvalidSignatureException", "does not match"),
    ],
)
def test_hostile_authorization_fields(fields: dict[str, str], error_type: str, message: str) -> None:
    headers = signed_headers("AKIDGOOD", "secret", BODY)
    today = headers["x-amz-date"][:8]
    hostile = tamper(headers, **{k: v.replace("{today}", today) for k, v in fields.items()})
    failure = CredentialCheck({"AKIDGOOD": "secret"}).check("POST", PATH, "", hostile, BODY, region="us-east-1")
    assert failure is not None and (failure.status, failure.error_type) == (403, error_type)
    assert message in failure.message


def test_event_stream_messages_are_bounded_before_they_are_buffered() -> None:
    part = envelope(encode_request_part(b"x" * 100, "UTF8"))
    splitter = FrameSplitter(max_message_bytes=len(part))
    assert len(splitter.feed(part)) == 1  # at the limit: fine
    # A prelude claiming 2 GiB (with a valid checksum) is refused on its 12 bytes alone.
    prelude = struct.pack("!II", 2**31, 0)
    with pytest.raises(WireError, match="over the limit of"):
        FrameSplitter().feed(prelude + struct.pack("!I", zlib.crc32(prelude)))
    prelude = struct.pack("!II", 1 << 20, 1 << 19)  # headers over the format's 128 KiB
    with pytest.raises(WireError, match="headers"):
        FrameSplitter().feed(prelude + struct.pack("!I", zlib.crc32(prelude)))
    with pytest.raises(WireError, match="over the limit of"):
        FrameSplitter(max_message_bytes=len(part) - 1).feed(part[:12])
    # A wrong prelude checksum means it is not an event stream at all: refused before waiting for more.
    with pytest.raises(WireError, match="checksum"):
        FrameSplitter().feed(b"\x00\x10\x00\x00" + b"\x00" * 8)
    assert MAX_MESSAGE_BYTES > 16 * 1024 * 1024  # the SDK's largest legal message still fits


def test_ca_key_is_private_from_its_first_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chmods: list[object] = []
    monkeypatch.setattr(os, "chmod", lambda *args, **kwargs: chmods.append(args))
    old_umask = os.umask(0)  # the most permissive umask: the mode must come from the creation itself
    try:
        tls = prepare_tls(tmp_path / "state")
    finally:
        os.umask(old_umask)
    key_file = tmp_path / "state" / "ca-key.pem"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(tls.key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o700
    assert chmods == []  # never written first and narrowed afterwards
    # The next run reuses the CA (a shell that exported AWS_CA_BUNDLE keeps working).
    again = prepare_tls(tmp_path / "state")
    assert again.ca_file.read_bytes() == tls.ca_file.read_bytes()
    assert again.key_file != tls.key_file


def test_crt_tls_failure_is_worded_for_people() -> None:
    """When awscrt itself reports the bad certificate (after s2n's delay), the message is the same."""
    ctx = EndpointContext("ep", "us-east-1", "https://runtime.sagemaker.us-east-1.amazonaws.com:8443")
    crt = AwsCrtError(1029, "AWS_IO_TLS_ERROR_NEGOTIATION_FAILURE", "TLS (SSL) negotiation failed")
    wrapped = RuntimeError("transport failed")
    wrapped.__cause__ = crt
    error = from_sagemaker_sdk(wrapped, ctx)
    assert (
        error.code == LocalErrorCode.CONNECTION
        and "does not trust" in error.message
        and "AWS_CA_BUNDLE" in error.message
    )
    refused = from_transport(AwsCrtError(1047, "AWS_IO_SOCKET_CONNECTION_REFUSED", "refused"), ctx)
    assert "Cannot reach" in refused.message
