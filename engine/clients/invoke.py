"""The whole-request path through boto3's ``sagemaker-runtime`` (``InvokeEndpoint``: the WAV; ``...WithResponseStream``:
the SSE events, split on blank lines since they do not line up with PayloadParts), for callers that want no session."""

from __future__ import annotations

import base64
import io
import json
import re
import wave
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from voicedesk.engine.clients.errors import EndpointContext, from_boto_client_error, from_credentials
from voicedesk.engine.engine_spec import EngineSpec
from voicedesk.engine.errors import ConnectionFailed, ErrorCode, RemoteProtocolError, UsageError, VoicedeskError
from voicedesk.engine.events import BYTES_PER_SAMPLE, SAMPLE_RATE

_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


@dataclass(frozen=True, slots=True)
class SseEvent:
    event: str | None
    data: dict[str, Any]


class SseSplitter:
    """Bytes in (split anywhere), complete SSE events out."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> list[SseEvent]:
        # Search the whole buffer: a CRLF pair may arrive split across two parts.
        self._buffer += data
        events: list[SseEvent] = []
        while match := _EVENT_END.search(self._buffer):
            block, self._buffer = self._buffer[: match.start()], self._buffer[match.end() :]
            event = _parse_block(block.decode("utf-8"))
            if event is not None:
                events.append(event)
        return events

    @property
    def pending(self) -> bytes:
        return self._buffer


def _parse_block(block: str) -> SseEvent | None:
    name: str | None = None
    data_lines: list[str] = []
    for line in block.splitlines():
        if not line or line.startswith(":"):
            continue
        key, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if key == "event":
            name = value
        elif key == "data":
            data_lines.append(value)
    if not data_lines:
        return None
    try:
        data = json.loads("\n".join(data_lines))
    except json.JSONDecodeError as exc:
        raise VoicedeskError(ErrorCode.BAD_JSON, f"The endpoint sent an SSE event that is not JSON: {exc}") from exc
    return SseEvent(name or (data.get("type") if isinstance(data, dict) else None), data)


@dataclass(frozen=True, slots=True)
class WholeSpeech:
    pcm: bytes
    """PCM16 little-endian, mono, 24 kHz."""
    invoked_variant: str | None = None
    events: tuple[SseEvent, ...] = field(default=(), repr=False)

    @property
    def duration_s(self) -> float:
        return len(self.pcm) / (BYTES_PER_SAMPLE * SAMPLE_RATE)


def pcm_from_wav(body: bytes) -> bytes:
    """The samples of the container's streaming WAV (its header's sizes are open-ended)."""
    try:
        with wave.open(io.BytesIO(body)) as reader:
            if (reader.getframerate(), reader.getnchannels(), reader.getsampwidth()) != (SAMPLE_RATE, 1, 2):
                raise RemoteProtocolError(
                    f"The endpoint sent {reader.getframerate()} Hz, {reader.getnchannels()} channel(s), "
                    f"{8 * reader.getsampwidth()}-bit audio; expected 24 kHz mono PCM16.",
                )
            return reader.readframes(reader.getnframes())
    except (wave.Error, EOFError) as exc:
        raise RemoteProtocolError(f"The endpoint's reply is not a WAV file: {exc}") from exc


class WholeRequestClient:
    """``InvokeEndpoint`` / ``InvokeEndpointWithResponseStream`` for one text at a time (blocking, like boto3)."""

    def __init__(
        self,
        endpoint_name: str,
        region: str | None = None,
        profile: str | None = None,
        variant: str | None = None,
        endpoint_url: str | None = None,
        ca_bundle: str | None = None,
    ) -> None:
        import boto3
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError

        self.endpoint_name = endpoint_name
        self.variant = variant
        try:
            session = boto3.Session(profile_name=profile, region_name=region)
        except BotoCoreError as exc:
            raise from_credentials(exc, profile) from exc
        if session.region_name is None:
            raise UsageError("No AWS region: pass --region or set AWS_REGION.")
        self._client = session.client(
            "sagemaker-runtime",
            endpoint_url=endpoint_url,
            verify=ca_bundle,
            # One attempt: a retried synthesis is a latency surprise; the caller decides.
            config=Config(retries={"max_attempts": 1, "mode": "standard"}, read_timeout=65, connect_timeout=5),
        )
        self.context = EndpointContext(endpoint_name, session.region_name, self._client.meta.endpoint_url, profile)

    def close(self) -> None:
        """Closes pooled connections (also done when the client is garbage-collected)."""
        self._client.close()

    def __enter__(self) -> WholeRequestClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @classmethod
    def from_spec(cls, spec: EngineSpec) -> WholeRequestClient:
        if not spec.target:
            raise UsageError("The whole-request path needs an endpoint name.")
        options = spec.options
        return cls(
            spec.target,
            spec.region,
            spec.profile,
            spec.variant,
            endpoint_url=str(options["endpoint_url"]) if options.get("endpoint_url") else None,
            ca_bundle=str(options["ca_file"]) if options.get("ca_file") else None,
        )

    def _request(self, text: str, voice: str | None, speed: float | None, transport: str, request_id: str | None):
        body: dict[str, object] = {"text": text, "format": "wav", "transport": transport}
        if voice is not None:
            body["voice"] = voice
        if speed is not None:
            body["speed"] = speed
        if request_id is not None:
            body["request_id"] = request_id
        kwargs: dict[str, Any] = {
            "EndpointName": self.endpoint_name,
            "ContentType": "application/json",
            "Body": json.dumps(body).encode(),
        }
        if self.variant:
            kwargs["TargetVariant"] = self.variant
        return kwargs

    def synthesize(
        self, text: str, voice: str | None = None, speed: float | None = None, request_id: str | None = None
    ) -> WholeSpeech:
        """``InvokeEndpoint``: the whole WAV in one reply."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            reply = self._client.invoke_endpoint(
                Accept="audio/wav", **self._request(text, voice, speed, "binary", request_id)
            )
            body = reply["Body"].read()
        except (ClientError, BotoCoreError) as exc:
            raise from_boto_client_error(exc, self.context) from exc
        return WholeSpeech(pcm_from_wav(body), reply.get("InvokedProductionVariant"))

    def stream(
        self, text: str, voice: str | None = None, speed: float | None = None, request_id: str | None = None
    ) -> Iterator[SseEvent]:
        """``InvokeEndpointWithResponseStream``: the container's SSE events as they arrive."""
        from botocore.exceptions import BotoCoreError, ClientError

        splitter = SseSplitter()
        body = None
        try:
            reply = self._client.invoke_endpoint_with_response_stream(
                Accept="text/event-stream", **self._request(text, voice, speed, "sse", request_id)
            )
            body = reply["Body"]
            for event in body:  # botocore raises EventStreamError for ModelStreamError / InternalStreamFailure
                if "PayloadPart" in event:
                    yield from splitter.feed(event["PayloadPart"].get("Bytes", b""))
        except (ClientError, BotoCoreError) as exc:
            raise from_boto_client_error(exc, self.context) from exc
        finally:
            if body is not None:
                body.close()  # returns (or drops) the connection even when the caller stops early
        if splitter.pending.strip():
            raise ConnectionFailed(f"The stream from {self.context.where} ended mid-event.")

    def synthesize_streamed(
        self, text: str, voice: str | None = None, speed: float | None = None, request_id: str | None = None
    ) -> WholeSpeech:
        """The response-stream path gathered: audio chunks decoded and joined, errors raised."""
        pcm: list[bytes] = []
        events: list[SseEvent] = []
        for event in self.stream(text, voice, speed, request_id):
            events.append(event)
            if event.event == "audio_chunk":
                pcm.append(base64.b64decode(event.data["audio"]))
            elif event.event == "error":
                raise VoicedeskError(
                    str(event.data.get("code", ErrorCode.INTERNAL)), str(event.data.get("message", "error"))
                )
        return WholeSpeech(b"".join(pcm), None, tuple(events))
