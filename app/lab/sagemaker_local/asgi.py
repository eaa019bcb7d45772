"""Small raw-ASGI helpers the stand-in shares: error replies in the service's shape, body reading, draining."""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class ErrorReply:
    """An error as the runtime API sends it: status, ``x-amzn-errortype`` and a JSON body."""

    status: int
    error_type: str
    message: str
    extra: Mapping[str, object] = field(default_factory=dict)

    def body(self) -> bytes:
        return json.dumps({"message": self.message, "Message": self.message, **self.extra}).encode()

    def start(self, request_id: str | None = None) -> dict[str, Any]:
        return {
            "type": "http.response.start",
            "status": self.status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"x-amzn-errortype", self.error_type.encode()),
                (b"x-amzn-requestid", (request_id or str(uuid.uuid4())).encode()),
            ],
        }


async def send_error(send: Send, error: ErrorReply, request_id: str | None = None) -> None:
    await send(error.start(request_id))
    await send({"type": "http.response.body", "body": error.body(), "more_body": False})


async def read_body(receive: Receive) -> bytes | None:
    """The whole request body, or None if the client went away first."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


async def drain_request(receive: Receive) -> None:
    """Reads (and drops) the rest of the request up to its end."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect" or not message.get("more_body", False):
            return
