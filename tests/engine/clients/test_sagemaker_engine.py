"""The sagemaker engine with the REAL HTTP/2 SDK (awscrt) through the stand-in to the REAL container.

Path of every byte: RemoteSession → aws_sdk_sagemaker_runtime_http2 (SigV4, event stream, awscrt HTTP/2 + TLS)
→ hypercorn stand-in (signature checked against the test key) → WebSocket → uvicorn container → Kokoro.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.support.net import free_port
from tests.support.stand_in import (
    ENDPOINT,
    REGION,
    TEST_KEY_ID,
    TEST_SECRET,
    StandInThread,
    abort_connections,
    collect_until,
    is_closed,
    is_flushed,
)
from voicedesk.app.lab.sagemaker_local.auth import CredentialCheck
from voicedesk.endpoint.runner import ServerThread
from voicedesk.engine.clients.sagemaker import SageMakerEngine, SageMakerSettings
from voicedesk.engine.engine_spec import EngineSpec, parse_engine_args
from voicedesk.engine.errors import ErrorCode, LocalErrorCode, VoicedeskError
from voicedesk.engine.events import (
    BYTES_PER_SAMPLE,
    SAMPLE_RATE,
    Audio,
    Closed,
    Error,
    SentenceFinished,
    SentenceStarted,
)
from voicedesk.engine.factory import open_engine


def spec_for(stand_in: StandInThread, name: str = ENDPOINT, **fields: object) -> EngineSpec:
    options = {"endpoint_url": stand_in.url, "ca_file": str(stand_in.ca_file)}
    fields.setdefault("region", REGION)
    return EngineSpec(kind="sagemaker", target=name, options=options, **fields)  # type: ignore[arg-type]


@pytest.mark.slow
async def test_three_sentences_on_one_session(stand_in: StandInThread) -> None:
    engine = await open_engine(spec_for(stand_in))
    assert isinstance(engine, SageMakerEngine)
    session = await engine.open_session()
    text = "The sun is up over the hill. Birds are singing now. We walk to the lake."
    await session.send_text(text)
    await session.flush("turn-1")
    got = await collect_until(session.events(), is_flushed("turn-1"))

    started = got.of(SentenceStarted)
    assert [s.text for s in started] == [
        "The sun is up over the hill.",
        "Birds are singing now.",
        "We walk to the lake.",
    ]
    for sentence in got.of(SentenceFinished):
        # Each sentence's audio is larger than one 8 KiB part: it only adds up if PARTIAL parts were joined.
        pcm = got.audio_bytes(sentence.seq)
        assert pcm > 8192
        assert sentence.duration_s == pytest.approx(pcm / (BYTES_PER_SAMPLE * SAMPLE_RATE), abs=1e-3)
    assert not got.of(Error)

    await session.close()
    rest = await collect_until(session.events(), is_closed)
    assert rest.events[-1] == Closed("closed")
    assert "bidi" in stand_in.config.calls
    await engine.aclose()


async def test_container_crash_becomes_a_clear_fatal_error(container, make_container, make_stand_in) -> None:
    crashing = make_container()
    stand_in = make_stand_in(crashing.http_url)
    engine = SageMakerEngine.from_spec(spec_for(stand_in))
    session = await engine.open_session()
    await session.send_text("This is spoken. This is cut off. Never heard.")
    await session.flush()
    await collect_until(session.events(), lambda e: isinstance(e, Audio))
    assert abort_connections(crashing) >= 1  # the container process "dies": no close frame, no closed event
    got = await collect_until(session.events(), is_closed)
    error = got.of(Error)[-1]
    assert error.fatal and error.code == LocalErrorCode.CONNECTION
    assert "ended the stream with an error (ModelStreamError)" in error.message
    assert f"/aws/sagemaker/Endpoints/{ENDPOINT}" in error.message  # where the real logs would be
    assert got.events[-1] == Closed("connection lost")
    await engine.aclose()


async def test_container_down_is_a_model_error(make_stand_in) -> None:
    stand_in = make_stand_in(f"http://127.0.0.1:{free_port()}")
    engine = SageMakerEngine.from_spec(spec_for(stand_in))
    with pytest.raises(VoicedeskError, match=r"The model container behind endpoint .* failed") as caught:
        await engine.open_session()
    assert "CloudWatch" in caught.value.message
    await engine.aclose()


async def test_unknown_endpoint_name(stand_in: StandInThread) -> None:
    engine = SageMakerEngine.from_spec(spec_for(stand_in, name="no-such-endpoint"))
    with pytest.raises(VoicedeskError, match=r"There is no endpoint 'no-such-endpoint' in us-east-1") as caught:
        await engine.open_session()
    assert "voicedesk deploy" in caught.value.message
    # The same engine (and its HTTP/2 connection) still works for a name that exists.
    good = SageMakerEngine.from_spec(spec_for(stand_in))
    session = await good.open_session()
    await session.close()
    assert (await collect_until(session.events(), is_closed)).events[-1] == Closed("closed")
    await engine.aclose()
    await good.aclose()


@pytest.mark.parametrize(
    ("key_id", "secret", "expected"),
    [
        ("AKIAUNKNOWNKEY000000", TEST_SECRET, r"UnrecognizedClientException: the access key is not known"),
        (TEST_KEY_ID, "not-the-secret", r"InvalidSignatureException: the signature does not match"),
    ],
)
async def test_bad_credentials(
    stand_in: StandInThread, monkeypatch: pytest.MonkeyPatch, key_id: str, secret: str, expected: str
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key_id)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    engine = SageMakerEngine.from_spec(spec_for(stand_in))
    with pytest.raises(VoicedeskError, match=expected) as caught:
        await engine.open_session()
    assert caught.value.code == ErrorCode.UNAUTHORIZED
    await engine.aclose()


async def test_expired_credentials_and_missing_permission(container: ServerThread, make_stand_in) -> None:
    expired_key, denied_key = "AKIAEXPIREDKEY000000", "AKIANOBIDIPERMISSION"
    stand_in = make_stand_in(
        container.http_url,
        credentials=CredentialCheck(
            {expired_key: "s1", denied_key: "s2"},
            expired=[expired_key],
            denied={denied_key: ["sagemaker:InvokeEndpointWithBidirectionalStream"]},
        ),
    )
    with pytest.MonkeyPatch.context() as env:
        env.setenv("AWS_ACCESS_KEY_ID", expired_key)
        env.setenv("AWS_SECRET_ACCESS_KEY", "s1")
        with pytest.raises(VoicedeskError, match=r"credentials have expired: refresh them \(for SSO: `aws sso login"):
            await SageMakerEngine.from_spec(spec_for(stand_in)).open_session()
        env.setenv("AWS_ACCESS_KEY_ID", denied_key)
        env.setenv("AWS_SECRET_ACCESS_KEY", "s2")
        with pytest.raises(VoicedeskError, match=r"needs sagemaker:InvokeEndpointWithBidirectionalStream") as caught:
            await SageMakerEngine.from_spec(spec_for(stand_in)).open_session()
    assert "packaging/iam/caller-policy.json" in caught.value.message


async def test_credentials_come_from_a_profile_and_are_resolved_on_every_signing(
    container: ServerThread, make_stand_in, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A credential_process profile whose keys rotate: a second stream on the same engine must use the new key."""
    keys = tmp_path / "current-key.json"
    script = tmp_path / "print_key.py"
    script.write_text(f"import pathlib, sys; sys.stdout.write(pathlib.Path({str(keys)!r}).read_text())\n")
    config = tmp_path / "aws-config"
    config.write_text(f"[profile rotating]\ncredential_process = {sys.executable} {script}\nregion = {REGION}\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name)

    def issue(key_id: str, secret: str) -> None:
        # Expiring inside boto3's mandatory refresh window (10 min), so every signing asks the process again.
        expiration = (datetime.now(UTC) + timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = {"Version": 1, "AccessKeyId": key_id, "SecretAccessKey": secret, "Expiration": expiration}
        keys.write_text(json.dumps(body))

    stand_in = make_stand_in(container.http_url, credentials=CredentialCheck({"AKIAROTATINGKEYFIRST": "first-secret"}))
    engine = SageMakerEngine.from_spec(spec_for(stand_in, profile="rotating", region=None))
    assert engine.settings.region == REGION  # from the profile

    issue("AKIAROTATINGKEYFIRST", "first-secret")
    first = await engine.open_session()
    await first.close()
    assert (await collect_until(first.events(), is_closed)).events[-1] == Closed("closed")

    # Rotate: the stand-in forgets the first key; the next stream must be signed with the second.
    stand_in.config.credentials = CredentialCheck({"AKIAROTATINGKEYSECND": "second-secret"})
    issue("AKIAROTATINGKEYSECND", "second-secret")
    second = await engine.open_session()
    await second.close()
    assert (await collect_until(second.events(), is_closed)).events[-1] == Closed("closed")
    await engine.aclose()


async def test_untrusted_certificate_fails_fast_and_says_which_ca(stand_in: StandInThread) -> None:
    spec = spec_for(stand_in)
    spec.options.pop("ca_file")
    engine = SageMakerEngine.from_spec(spec)
    with pytest.raises(VoicedeskError, match="does not trust") as caught:
        await engine.open_session()
    assert "AWS_CA_BUNDLE" in caught.value.message
    assert caught.value.code == LocalErrorCode.CONNECTION


async def test_stand_in_not_running() -> None:
    spec = EngineSpec(
        kind="sagemaker", target=ENDPOINT, region=REGION, options={"endpoint_url": f"https://127.0.0.1:{free_port()}"}
    )
    with pytest.raises(VoicedeskError, match=r"connection refused.*sagemaker-local"):
        await SageMakerEngine.from_spec(spec).open_session()


async def test_environment_alone_points_the_engine_at_the_stand_in(
    stand_in: StandInThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `voicedesk sagemaker-local` prints is enough: `--engine sagemaker NAME` then needs no options."""
    for name, value in stand_in.server.environment(REGION, with_dummy_credentials=False).items():
        monkeypatch.setenv(name, value)
    engine = await open_engine(parse_engine_args(["sagemaker", ENDPOINT]))
    assert isinstance(engine, SageMakerEngine)
    assert engine.settings.url == stand_in.url and engine.settings.ca_file == stand_in.ca_file
    session = await engine.open_session()
    await session.send_text("Hello there.")
    await session.close()
    got = await collect_until(session.events(), is_closed)
    assert got.audio_bytes() > 0 and got.events[-1] == Closed("closed")
    await engine.aclose()


def test_settings_default_to_the_regional_8443_url(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = SageMakerSettings.from_spec(EngineSpec(kind="sagemaker", target="x", region="eu-west-1"))
    assert settings.url == "https://runtime.sagemaker.eu-west-1.amazonaws.com:8443"
    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2", "https://127.0.0.1:9")
    assert SageMakerSettings.from_spec(EngineSpec(kind="sagemaker", target="x")).url == "https://127.0.0.1:9"
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    with pytest.raises(VoicedeskError, match="No AWS region"):
        SageMakerSettings.from_spec(EngineSpec(kind="sagemaker", target="x"))


def test_which_stream_errors_a_new_stream_can_fix() -> None:
    """The SDK's own exceptions: a time limit, a platform fault or a broken connection is worth a new stream;
    a container's error or a refused request is not (the session ends and the app can fail over)."""
    from aws_sdk_sagemaker_runtime_http2.models import InternalStreamFailure, ModelError, ModelStreamError

    from voicedesk.engine.clients.resuming import StreamInterrupted
    from voicedesk.engine.clients.sagemaker import SageMakerChannel

    channel = SageMakerChannel(None, None, SageMakerSettings(ENDPOINT, REGION))
    resumable = [
        ModelStreamError(message="limit", error_code="ModelInvocationTimeExceeded"),
        ModelStreamError(message="reset", error_code="StreamBroken"),
        InternalStreamFailure(message="oops"),
        ConnectionResetError("gone"),
    ]
    final = [ModelStreamError(message="crashed", error_code="ModelStreamError"), ModelError(message="424")]
    assert all(isinstance(channel._failure(exc), StreamInterrupted) for exc in resumable)
    for exc in final:
        error = channel._failure(exc)
        assert isinstance(error, VoicedeskError) and not isinstance(error, StreamInterrupted)
