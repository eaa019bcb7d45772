"""One bidirectional stream bridged to its own container WebSocket, as SageMaker's router and sidecar do it.

UTF8 parts become text frames, others binary (PARTIAL passed through); the empty signed envelope closes the WebSocket;
down, ``max_part_bytes`` may split parts. The response ends at once when the container closes: 1000/1005 plainly,
another code or a drop with ``ModelStreamError``, ``max_stream_duration_s`` with ``ModelInvocationTimeExceeded`` (the
WebSocket closed 1001), bad input with ``InternalStreamFailure``. What the client sends after the end is read and
dropped."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import websockets
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from voicedesk.app.lab.sagemaker_local.asgi import ErrorReply, Receive, Send, drain_request, send_error
from voicedesk.app.lab.sagemaker_local.wire import (
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
    from voicedesk.app.lab.sagemaker_local.config import StandInConfig

log = logging.getLogger(__name__)

CLEAN_CLOSE_CODES = frozenset({1000, 1005})
CONTAINER_ERROR_CODE = "ModelStreamError"
TIME_LIMIT_ERROR_CODE = "ModelInvocationTimeExceeded"
CONNECT_TIMEOUT_S = 5.0
WS_GOING_AWAY = 1001


def response_headers(config: StandInConfig, content_type: str, request_id: str) -> list[tuple[bytes, bytes]]:
    return [
        (b"content-type", content_type.encode()),
        (b"x-amzn-invoked-production-variant", config.variant.encode()),
        (b"x-amzn-requestid", request_id.encode()),
    ]


def split_payload(payload: bytes, max_part_bytes: int | None) -> list[tuple[bytes, str | None]]:
    """One response part per frame, or PARTIAL pieces ending in a COMPLETE one."""
    if max_part_bytes is None or len(payload) <= max_part_bytes:
        return [(payload, None)]
    pieces = [payload[i : i + max_part_bytes] for i in range(0, len(payload), max_part_bytes)]
    return [(piece, "PARTIAL") for piece in pieces[:-1]] + [(pieces[-1], "COMPLETE")]


async def bridge_bidirectional_stream(
    scope: dict[str, Any], receive: Receive, send: Send, config: StandInConfig, headers: Mapping[str, str]
) -> None:
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
    start = {
        "type": "http.response.start",
        "status": 200,
        "headers": response_headers(config, EVENTSTREAM_CONTENT_TYPE, str(uuid.uuid4())),
    }
    await send(start)
    await StreamBridge(receive, send, container, config).run()


class StreamBridge:
    def __init__(
        self, receive: Receive, send: Send, container: websockets.ClientConnection, config: StandInConfig
    ) -> None:
        self._receive = receive
        self._send = send
        self._container = container
        self._config = config
        self._final_event: bytes | None = None
        """The exception event that ends the stream; the first cause to set it wins."""

    async def run(self) -> None:
        upstream = asyncio.create_task(self._pump_up())
        try:
            async with asyncio.timeout(self._config.max_stream_duration_s):
                await self._pump_down()
        except TimeoutError:
            self._config.expired_streams += 1
            limit = self._config.max_stream_duration_s
            log.info("a bidirectional stream reached its maximum duration of %g s", limit)
            self._end_with(
                encode_exception(
                    "ModelStreamError",
                    f"The stream reached the maximum duration of {limit:g} s and was closed (SageMaker ends "
                    "bidirectional streams after 30 minutes); open a new stream to go on.",
                    TIME_LIMIT_ERROR_CODE,
                )
            )
            await self._container.close(WS_GOING_AWAY, "maximum stream duration")
        finally:
            await self._container.close()
            with contextlib.suppress(Exception):  # the client may be gone already
                if self._final_event is not None:
                    await self._send({"type": "http.response.body", "body": self._final_event, "more_body": True})
                await self._send({"type": "http.response.body", "body": b"", "more_body": False})
            with contextlib.suppress(Exception):
                await upstream

    def _end_with(self, event: bytes) -> None:
        if self._final_event is None:
            self._final_event = event

    async def _pump_up(self) -> None:
        splitter = FrameSplitter(self._config.max_request_message_bytes)
        input_open = True
        try:
            while True:
                message = await self._receive()
                if message["type"] == "http.disconnect":
                    return
                data = message.get("body", b"")
                if data and input_open:
                    try:
                        parts = [open_envelope(m) for m in splitter.feed(data)]
                    except WireError as exc:
                        log.warning("bad event stream from the client: %s", exc)
                        input_open = False
                        self._end_with(
                            encode_exception("InternalStreamFailure", f"The request stream was refused: {exc}")
                        )
                        await self._container.close()
                        parts = []
                    for part in parts:
                        if isinstance(part, EndOfInput):
                            input_open = False
                            await self._container.close()
                            break
                        if isinstance(part, RequestPart):
                            await self._send_up(part)
                if not message.get("more_body", False):
                    return
        except ConnectionClosed:
            # The container went away (the response is ending); read the rest of the request and drop it.
            await drain_request(self._receive)
        finally:
            with contextlib.suppress(Exception):
                await self._container.close()

    async def _send_up(self, part: RequestPart) -> None:
        if part.data_type == "UTF8":
            try:
                await self._container.send(part.payload.decode("utf-8"))
                return
            except UnicodeDecodeError:
                pass  # not text after all: deliver the bytes rather than drop them
        await self._container.send(part.payload)

    async def _pump_down(self) -> None:
        container = self._container
        try:
            async for frame in container:
                if isinstance(frame, str):
                    payload, data_type = frame.encode("utf-8"), "UTF8"
                else:
                    payload, data_type = bytes(frame), "BINARY"
                for piece, state in split_payload(payload, self._config.max_part_bytes):
                    body = encode_payload_part(piece, data_type, state)
                    await self._send({"type": "http.response.body", "body": body, "more_body": True})
        except ConnectionClosed:
            pass
        code = container.close_code
        if code is not None and code not in CLEAN_CLOSE_CODES:
            reason = container.close_reason or "no reason given"
            log.info("container closed the stream with code %s (%s)", code, reason)
            self._end_with(
                encode_exception(
                    "ModelStreamError",
                    f"The model container closed the stream with code {code}: {reason}",
                    CONTAINER_ERROR_CODE,
                )
            )
