"""Where the container is, and what SageMaker's router does with whole requests on loopback: the body to ``POST
/invocations``, a container error as 424 ``ModelError``, content types and custom attributes passed as the runtime
passes them. (The bidirectional stream is ``stream_bridge.py``.)"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING

import httpx

from voicedesk.app.lab.sagemaker_local.asgi import ErrorReply, Send, send_error
from voicedesk.app.lab.sagemaker_local.stream_bridge import (
    CONNECT_TIMEOUT_S,
    CONTAINER_ERROR_CODE,
    bridge_bidirectional_stream,
    response_headers,
)
from voicedesk.app.lab.sagemaker_local.wire import EVENTSTREAM_CONTENT_TYPE, encode_exception, encode_payload_part

if TYPE_CHECKING:
    from voicedesk.app.lab.sagemaker_local.config import StandInConfig

__all__ = ["bridge_bidirectional_stream", "forward_invocation"]

log = logging.getLogger(__name__)

INVOKE_TIMEOUT_S = 60.0
"""SageMaker's ceiling for one /invocations call."""
CUSTOM_ATTRIBUTES = "x-amzn-sagemaker-custom-attributes"


async def forward_invocation(
    send: Send, config: StandInConfig, headers: Mapping[str, str], body: bytes, *, streaming: bool
) -> None:
    request_id = str(uuid.uuid4())
    forward = {"content-type": headers.get("content-type", "application/json")}
    # boto3 sends InvokeEndpointWithResponseStream's Accept as X-Amzn-SageMaker-Accept; the container sees Accept.
    accept = headers.get("x-amzn-sagemaker-accept" if streaming else "accept")
    if accept:
        forward["accept"] = accept
    if CUSTOM_ATTRIBUTES in headers:
        forward[CUSTOM_ATTRIBUTES] = headers[CUSTOM_ATTRIBUTES]
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
                extra: list[tuple[bytes, bytes]] = []
                if (attributes := reply.headers.get(CUSTOM_ATTRIBUTES)) is not None:
                    extra.append((CUSTOM_ATTRIBUTES.encode(), attributes.encode("latin-1")))
                if streaming:
                    extra.append((b"x-amzn-sagemaker-content-type", content_type.encode("latin-1")))
                    await _stream_events(send, config, reply, request_id, extra)
                else:
                    data = await reply.aread()
                    await send(
                        {
                            "type": "http.response.start",
                            "status": 200,
                            "headers": [
                                *response_headers(config, content_type, request_id),
                                *extra,
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


async def _stream_events(
    send: Send, config: StandInConfig, reply: httpx.Response, request_id: str, extra: list[tuple[bytes, bytes]]
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [*response_headers(config, EVENTSTREAM_CONTENT_TYPE, request_id), *extra],
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
