"""What SageMaker's sidecar and router do between a caller and the container, on loopback.

Bidirectional stream: one container WebSocket per HTTP/2 stream. Up: a ``DataType=UTF8`` part becomes a text
frame, anything else a binary frame (PARTIAL parts pass through unassembled, as the service does); the signed
empty envelope closes the WebSocket. Down: a text frame becomes a ``DataType=UTF8`` part, a binary frame a
``DataType=BINARY`` part; a container close with a code other than 1000/1005 becomes ``ModelStreamError``.
The response finishes only after the client's END_STREAM (hypercorn #329 drops the connection otherwise).

Whole requests: the body goes to the container's ``POST /invocations``; a container error status becomes the
runtime API's 424 ``ModelError``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import websockets
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from endpoint.sagemaker_local.asgi import ErrorReply, Receive, Send, drain_request, send_error
from endpoint.sagemaker_local.wire import (
    EVENTSTREAM_CONTENT_TYPE,
    EndOfInput,
    FrameSplitter,
    RequestPart,
    WireError,
    encode_exception,
    encode_payload_part,
    open_envelope,
)

if TYPE_CHECKING:
    from endpoint.sagemaker_local.app import StandInConfig

log = logging.getLogger(__name__)

BIDI_PATH = "/invocations-bidirectional-stream"
CLEAN_CLOSE_CODES = frozenset({1000, 1005})
CONTAINER_ERROR_CODE = "ModelStreamError"
CONNECT_TIMEOUT_S = 5.0
INVOKE_TIMEOUT_S = 60.0
"""SageMaker's ceiling for one /invocations call."""


@dataclass(frozen=True, slots=True)
class ContainerTarget:
    """Where the container listens, e.g. ``http://127.0.0.1:8080``."""

    base_url: str

    def __post_init__(self) -> None:
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"The container URL must look like http://127.0.0.1:8080; got {self.base_url!r}.")

    def websocket_url(self, invocation_path: str | None = None, query: str | None = None) -> str:
        parts = urlsplit(self.base_url)
        scheme = "wss" if parts.scheme == "https" else "ws"
        path = "/" + invocation_path.lstrip("/") if invocation_path else BIDI_PATH
        return urlunsplit((scheme, parts.netloc, path, query or "", ""))

    @property
    def invocations_url(self) -> str:
        return self.base_url.rstrip("/") + "/invocations"


def _response_headers(config: StandInConfig, content_type: str, request_id: str) -> list[tuple[bytes, bytes]]:
    return [
        (b"content-type", content_type.encode()),
        (b"x-amzn-invoked-production-variant", config.variant.encode()),
        (b"x-amzn-requestid", request_id.encode()),
    ]


def _split(payload: bytes, max_part_bytes: int | None) -> list[tuple[bytes, str | None]]:
    """One response part per frame, or PARTIAL pieces ending in a COMPLETE one."""
    if max_part_bytes is None or len(payload) <= max_part_bytes:
        return [(payload, None)]
    pieces = [payload[i : i + max_part_bytes] for i in range(0, len(payload), max_part_bytes)]
    return [(piece, "PARTIAL") for piece in pieces[:-1]] + [(pieces[-1], "COMPLETE")]


async def bridge_bidirectional_stream(
    scope: dict[str, Any], receive: Receive, send: Send, config: StandInConfig, headers: Mapping[str, str]
) -> None:
    request_id = str(uuid.uuid4())
    url = config.container.websocket_url(
        headers.get("x-amzn-sagemaker-model-invocation-path"), headers.get("x-amzn-sagemaker-model-query-string")
    )
    try:
        container = await websockets.connect(url, open_timeout=CONNECT_TIMEOUT_S, max_size=None, compression=None)
    except (OSError, TimeoutError, InvalidHandshake, InvalidURI) as exc:
        log.warning("container WebSocket %s refused the stream: %s", url, exc)
        failure = ErrorReply(
            424, "ModelError", f"Received server error from primary: the container did not accept {url} ({exc})."
        )
        await send_error(send, failure)
        return

    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": _response_headers(config, EVENTSTREAM_CONTENT_TYPE, request_id),
        }
    )
    upstream = asyncio.create_task(_pump_up(receive, container))
    try:
        await _pump_down(send, container, config.max_part_bytes)
    finally:
        await container.close()
        # Never end the response before the client's END_STREAM (hypercorn #329).
        with contextlib.suppress(Exception):
            await upstream
        with contextlib.suppress(Exception):  # the client may be gone already
            await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _pump_up(receive: Receive, container: websockets.ClientConnection) -> None:
    splitter = FrameSplitter()
    input_open = True
    try:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            data = message.get("body", b"")
            if data and input_open:
                try:
                    parts = [open_envelope(m) for m in splitter.feed(data)]
                except WireError as exc:
                    log.warning("bad event stream from the client: %s", exc)
                    input_open = False
                    await container.close(code=1002, reason="bad event stream")
                    parts = []
                for part in parts:
                    if isinstance(part, EndOfInput):
                        input_open = False
                        await container.close()
                        break
                    if isinstance(part, RequestPart):
                        await _send_up(container, part)
            if not message.get("more_body", False):
                return
    except ConnectionClosed:
        # The container went away; keep reading so the response can end after END_STREAM.
        await drain_request(receive)
    finally:
        with contextlib.suppress(Exception):
            await container.close()


async def _send_up(container: websockets.ClientConnection, part: RequestPart) -> None:
    if part.data_type == "UTF8":
        try:
            await container.send(part.payload.decode("utf-8"))
            return
        except UnicodeDecodeError:
            pass  # not text after all: deliver the bytes rather than drop them
    await container.send(part.payload)


async def _pump_down(send: Send, container: websockets.ClientConnection, max_part_bytes: int | None) -> None:
    try:
        async for frame in container:
            if isinstance(frame, str):
                payload, data_type = frame.encode("utf-8"), "UTF8"
            else:
                payload, data_type = bytes(frame), "BINARY"
            for piece, state in _split(payload, max_part_bytes):
                await send(
                    {
                        "type": "http.response.body",
                        "body": encode_payload_part(piece, data_type, state),
                        "more_body": True,
                    }
                )
    except ConnectionClosed:
        pass
    code = container.close_code
    if code is not None and code not in CLEAN_CLOSE_CODES:
        reason = container.close_reason or "no reason given"
        log.info("container closed the stream with code %s (%s)", code, reason)
        await send(
            {
                "type": "http.response.body",
                "body": encode_exception(
                    "ModelStreamError",
                    f"The model container closed the stream with code {code}: {reason}",
                    CONTAINER_ERROR_CODE,
                ),
                "more_body": True,
            }
        )


async def forward_invocation(
    send: Send, config: StandInConfig, headers: Mapping[str, str], body: bytes, *, streaming: bool
) -> None:
    request_id = str(uuid.uuid4())
    forward = {"content-type": headers.get("content-type", "application/json")}
    if "accept" in headers:
        forward["accept"] = headers["accept"]
    if "x-amzn-sagemaker-custom-attributes" in headers:
        forward["x-amzn-sagemaker-custom-attributes"] = headers["x-amzn-sagemaker-custom-attributes"]
    timeout = httpx.Timeout(INVOKE_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
    async with httpx.AsyncClient(timeout=timeout) as client:
        try:
            async with client.stream("POST", config.container.invocations_url, content=body, headers=forward) as reply:
                if reply.status_code != 200:
                    text = (await reply.aread()).decode("utf-8", "replace")
                    kind = "client" if reply.status_code < 500 else "server"
                    error = ErrorReply(
                        424,
                        "ModelError",
                        f'Received {kind} error ({reply.status_code}) from primary with message "{text}".',
                        {"OriginalStatusCode": reply.status_code, "OriginalMessage": text},
                    )
                    await send_error(send, error, request_id)
                    return
                content_type = reply.headers.get("content-type", "application/octet-stream")
                if streaming:
                    await _stream_events(send, config, reply, request_id)
                else:
                    data = await reply.aread()
                    await send(
                        {
                            "type": "http.response.start",
                            "status": 200,
                            "headers": [
                                *_response_headers(config, content_type, request_id),
                                (b"content-length", str(len(data)).encode()),
                            ],
                        }
                    )
                    await send({"type": "http.response.body", "body": data, "more_body": False})
        except httpx.TransportError as exc:
            error = ErrorReply(
                424,
                "ModelError",
                f"Received server error from primary: the container at {config.container.base_url} "
                f"did not answer ({type(exc).__name__}: {exc}).",
                {"OriginalStatusCode": 502, "OriginalMessage": str(exc)},
            )
            await send_error(send, error, request_id)


async def _stream_events(send: Send, config: StandInConfig, reply: httpx.Response, request_id: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": _response_headers(config, EVENTSTREAM_CONTENT_TYPE, request_id),
        }
    )
    try:
        async for chunk in reply.aiter_raw():
            if chunk:
                await send({"type": "http.response.body", "body": encode_payload_part(chunk), "more_body": True})
    except httpx.TransportError as exc:
        await send(
            {
                "type": "http.response.body",
                "body": encode_exception(
                    "ModelStreamError", f"The model container stopped mid-response: {exc}", CONTAINER_ERROR_CODE
                ),
                "more_body": True,
            }
        )
    await send({"type": "http.response.body", "body": b"", "more_body": False})
