"""The sagemaker engine: the container behind a SageMaker endpoint, over InvokeEndpointWithBidirectionalStream.

The input stream stays open until the session says ``closed`` (closing it early tears the stream down); sessions are
``ResumingSession``s, since a stream lasts 30 minutes. One SDK client per event loop: awscrt's pool is not
thread-safe."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voicedesk.engine.api import EngineInfo
from voicedesk.engine.clients.errors import EndpointContext, from_credentials, from_sagemaker_sdk
from voicedesk.engine.clients.outbox import Outbox
from voicedesk.engine.clients.remote import RemoteSession
from voicedesk.engine.clients.resuming import RECONNECT_DELAYS_S, ResumingSession, StreamInterrupted, StreamPolicy
from voicedesk.engine.engine_spec import EngineSpec
from voicedesk.engine.errors import ConnectionFailed, UsageError, VoicedeskError
from voicedesk.engine.events import SessionConfig
from voicedesk.engine.protocol import Frame

log = logging.getLogger(__name__)

ENDPOINT_URL_ENV = "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2"
CA_BUNDLE_ENV = "AWS_CA_BUNDLE"
RENEW_AFTER_S = 25 * 60.0
"""Renew a stream this old between utterances: SageMaker ends every stream after 30 minutes."""
RESUMABLE_STREAM_ERRORS = frozenset({"ModelInvocationTimeExceeded", "StreamBroken"})
"""``ModelStreamError`` codes a new stream can fix: the time limit, and a connection to the model that broke."""
FINAL_ERRORS = frozenset({"ModelStreamError", "ModelError", "InputValidationError", "ValidationError"})


@dataclass(frozen=True, slots=True)
class SageMakerSettings:
    endpoint_name: str
    region: str
    profile: str | None = None
    variant: str | None = None
    endpoint_url: str | None = None
    """None: the region's ``https://runtime.sagemaker.{region}.amazonaws.com:8443``."""
    ca_file: Path | None = None
    """Trust this CA instead of the system store (``voicedesk sagemaker-local``, a TLS-inspecting proxy)."""
    connect_timeout_s: float = 5.0
    open_timeout_s: float = 30.0
    """How long opening a stream may take, TLS and SageMaker's routing included."""
    renew_after_s: float | None = RENEW_AFTER_S
    """Open a fresh stream between utterances once the current one is this old (None: never)."""
    reconnect: bool = True
    """Replace a stream that ends early and re-send what was not spoken (False: the session ends with it)."""

    @property
    def policy(self) -> StreamPolicy:
        return StreamPolicy(self.renew_after_s, RECONNECT_DELAYS_S if self.reconnect else ())

    @property
    def url(self) -> str:
        from voicedesk.engine.clients.http2 import default_endpoint_url

        return self.endpoint_url or default_endpoint_url(self.region)

    @property
    def context(self) -> EndpointContext:
        return EndpointContext(self.endpoint_name, self.region, self.url, self.profile)

    @classmethod
    def from_spec(cls, spec: EngineSpec, environ: dict[str, str] | None = None) -> SageMakerSettings:
        env = os.environ if environ is None else environ
        if not spec.target:
            raise UsageError("The sagemaker engine needs an endpoint name.")
        region = spec.region or _profile_region(spec.profile) or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
        if not region:
            raise UsageError(
                "No AWS region for the sagemaker engine: pass --region, set AWS_REGION, or set one in the profile.",
            )
        options = spec.options
        # The SDK's own precedence: the service-specific variable, then the global one.
        endpoint_url = options.get("endpoint_url") or env.get(ENDPOINT_URL_ENV) or env.get("AWS_ENDPOINT_URL")
        ca_file = options.get("ca_file") or env.get(CA_BUNDLE_ENV)
        return cls(
            endpoint_name=spec.target,
            region=region,
            profile=spec.profile,
            variant=spec.variant,
            endpoint_url=str(endpoint_url) if endpoint_url else None,
            ca_file=Path(str(ca_file)) if ca_file else None,
            connect_timeout_s=float(options.get("connect_timeout_s", 5.0)),  # type: ignore[arg-type]
            open_timeout_s=float(options.get("open_timeout_s", 30.0)),  # type: ignore[arg-type]
            renew_after_s=_optional_seconds(options.get("renew_after_s", RENEW_AFTER_S)),
            reconnect=_flag(options.get("reconnect", True)),
        )


def _optional_seconds(value: object) -> float | None:
    return None if value is None or value == "" else float(value)  # type: ignore[arg-type]


def _flag(value: object) -> bool:
    return value.strip().lower() not in ("0", "false", "no", "off") if isinstance(value, str) else bool(value)


def _profile_region(profile: str | None) -> str | None:
    import boto3
    from botocore.exceptions import BotoCoreError

    try:
        return boto3.Session(profile_name=profile).region_name
    except BotoCoreError as exc:
        raise from_credentials(exc, profile) from exc


class SageMakerChannel:
    """A ``FrameChannel`` on one bidirectional stream of the HTTP/2 SDK."""

    def __init__(self, stream: Any, output: Any, settings: SageMakerSettings) -> None:
        self._stream = stream
        self._output = output
        self._settings = settings
        self._partial = bytearray()
        self.description = f"SageMaker {settings.context.where}"
        self.outbox = Outbox(self._send_now)
        """Fragments queued while a send is in flight go out as one payload part."""

    @classmethod
    async def open(cls, client: Any, settings: SageMakerSettings, first_frame: str) -> SageMakerChannel:
        from aws_sdk_sagemaker_runtime_http2.models import InvokeEndpointWithBidirectionalStreamInput

        request = InvokeEndpointWithBidirectionalStreamInput(
            endpoint_name=settings.endpoint_name, target_variant=settings.variant
        )
        stream = None
        try:
            async with asyncio.timeout(settings.open_timeout_s):
                stream = await client.invoke_endpoint_with_bidirectional_stream(request)
                # Send first: the router may hold the response headers until the stream carries data.
                await stream.input_stream.send(_part(first_frame))
                _, output = await stream.await_output()
        except TimeoutError as exc:
            await _quietly_close(stream)
            raise ConnectionFailed(
                f"Opening a stream to {settings.context.where} took longer than {settings.open_timeout_s:g} s "
                f"({settings.url}). Check the network (port 8443 must be open) and the endpoint's status "
                "(`voicedesk deploy status`).",
            ) from exc
        except Exception as exc:
            await _quietly_close(stream)
            raise from_sagemaker_sdk(exc, settings.context) from exc
        return cls(stream, output, settings)

    async def send(self, frame: str) -> None:
        await self.outbox.send(frame)

    async def _send_now(self, frame: str) -> None:
        try:
            await self._stream.input_stream.send(_part(frame))
        except Exception as exc:
            raise self._failure(exc) from exc

    def _failure(self, exc: BaseException) -> VoicedeskError:
        """The mapped error; a ``StreamInterrupted`` when a new stream can go on where this one stopped."""
        error = from_sagemaker_sdk(exc, self._settings.context)
        name = type(exc).__name__
        if name == "ModelStreamError" and getattr(exc, "error_code", None) in RESUMABLE_STREAM_ERRORS:
            return StreamInterrupted.of(error)
        return error if name in FINAL_ERRORS else StreamInterrupted.of(error)

    async def receive(self) -> Frame | None:
        from aws_sdk_sagemaker_runtime_http2.models import ResponseStreamEventPayloadPart

        while True:
            try:
                event = await self._output.receive()
            except Exception as exc:
                raise self._failure(exc) from exc
            if event is None:
                return None
            if not isinstance(event, ResponseStreamEventPayloadPart):
                # ModelStreamError and InternalStreamFailure are raised by receive(); anything else is new.
                log.warning("ignoring an unknown event from %s: %r", self.description, event)
                continue
            part = event.value
            data = part.bytes_ or b""
            if part.completion_state == "PARTIAL":
                self._partial += data
                continue
            if self._partial:
                data = bytes(self._partial) + data
                self._partial.clear()
            if part.data_type == "UTF8":
                return data.decode("utf-8", errors="replace")
            return data

    async def close(self) -> None:
        """After ``closed``: the signed end frame + END_STREAM, then read the response to its end."""
        try:
            await self._stream.input_stream.close()
            while await self._output.receive() is not None:
                pass
        except Exception as exc:
            raise from_sagemaker_sdk(exc, self._settings.context) from exc
        finally:
            await self.abort()

    async def abort(self) -> None:
        self.outbox.abort()
        await _quietly_close(self._stream)


def _part(frame: str) -> Any:
    from aws_sdk_sagemaker_runtime_http2.models import RequestPayloadPart, RequestStreamEventPayloadPart

    return RequestStreamEventPayloadPart(value=RequestPayloadPart(bytes_=frame.encode("utf-8"), data_type="UTF8"))


async def _quietly_close(stream: Any) -> None:
    if stream is None:
        return
    with contextlib.suppress(Exception):
        await stream.input_stream.close()
    if stream.output_stream is not None:
        with contextlib.suppress(Exception):
            await stream.output_stream.close()


class SageMakerEngine:
    """Sessions on a SageMaker real-time endpoint that runs the voicedesk container."""

    name = "sagemaker"

    def __init__(self, settings: SageMakerSettings) -> None:
        self.settings = settings
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()
        self._checked_tls = False

    @classmethod
    def from_spec(cls, spec: EngineSpec) -> SageMakerEngine:
        return cls(SageMakerSettings.from_spec(spec))

    async def _client(self) -> Any:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is not None:
            return client
        from aws_sdk_sagemaker_runtime_http2.client import AsyncSageMakerRuntimeHTTP2Client
        from aws_sdk_sagemaker_runtime_http2.config import AsyncSageMakerRuntimeHTTP2Config

        from voicedesk.engine.clients.http2 import BotoCredentialsResolver, CRTClient, check_tls, is_aws_url

        settings = self.settings
        if not self._checked_tls and not is_aws_url(settings.url):
            await check_tls(settings.url, settings.ca_file, settings.connect_timeout_s)
            self._checked_tls = True
        session = await asyncio.to_thread(_boto_session, settings.profile, settings.region)
        config = await AsyncSageMakerRuntimeHTTP2Config.resolve(
            region=settings.region,
            endpoint_uri=settings.url,
            transport=CRTClient(settings.ca_file, settings.connect_timeout_s),
            aws_credentials_identity_resolver=BotoCredentialsResolver(session),
            sdk_ua_app_id="voicedesk",
        )
        client = AsyncSageMakerRuntimeHTTP2Client(config=config)
        self._clients[loop] = client
        return client

    async def _open_channel(self, first_frame: str) -> SageMakerChannel:
        return await SageMakerChannel.open(await self._client(), self.settings, first_frame)

    @property
    def info(self) -> EngineInfo:
        return EngineInfo("sagemaker", f"SageMaker {self.settings.context.where}")

    async def voices(self) -> None:
        """SageMaker has no call that lists what a container offers: None (use names the endpoint's image has)."""
        return None

    async def open_session(self, config: SessionConfig | None = None) -> RemoteSession:
        policy = self.settings.policy
        if policy.renew_after_s is None and not policy.reconnect_delays_s:
            return await RemoteSession.open(self._open_channel, config)
        return await ResumingSession.open(self._open_channel, config, policy)

    async def aclose(self) -> None:
        """Closes this event loop's client; clients of other loops are closed with their loop."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()


def _boto_session(profile: str | None, region: str) -> Any:
    import boto3
    from botocore.exceptions import BotoCoreError

    try:
        return boto3.Session(profile_name=profile, region_name=region)
    except BotoCoreError as exc:
        raise from_credentials(exc, profile) from exc
