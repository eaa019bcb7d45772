"""The stand-in's ASGI app: the runtime's three invoke operations (and ``/ping``) in front of one container, laid out as
the real API is. Every request's SigV4 signature is checked first; errors use the service's shapes, so the SDKs raise
what they would against AWS."""

from __future__ import annotations

import logging
import re
from urllib.parse import unquote

from voicedesk.app.lab.sagemaker_local.asgi import (
    ErrorReply,
    Receive,
    Scope,
    Send,
    drain_request,
    read_body,
    send_error,
)
from voicedesk.app.lab.sagemaker_local.auth import CredentialCheck
from voicedesk.app.lab.sagemaker_local.bridge import bridge_bidirectional_stream, forward_invocation
from voicedesk.app.lab.sagemaker_local.config import StandInConfig
from voicedesk.engine.protocol import BIDI_PATH

log = logging.getLogger(__name__)

ACCOUNT_ID = "123456789012"
_ROUTE = re.compile(r"^/endpoints/(?P<name>[^/]+)/(?P<operation>[a-z-]+)$")
_OPERATIONS = {
    BIDI_PATH.lstrip("/"): "bidi",
    "invocations": "invoke",
    "invocations-response-stream": "response-stream",
}
_ACTIONS = {
    "bidi": "sagemaker:InvokeEndpointWithBidirectionalStream",
    "invoke": "sagemaker:InvokeEndpoint",
    "response-stream": "sagemaker:InvokeEndpointWithResponseStream",
}


class StandInApp:
    def __init__(self, config: StandInConfig) -> None:
        self.config = config

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        method: str = scope["method"]
        if path == "/ping" and method == "GET":
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        route = _ROUTE.match(path)
        operation = _OPERATIONS.get(route["operation"]) if route else None
        if route is None or operation is None or method != "POST":
            await drain_request(receive)
            await send_error(send, ErrorReply(404, "UnknownOperationException", f"No runtime operation at {path}."))
            return
        name = unquote(route["name"])
        self.config.calls.append(operation)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        raw_path = scope.get("raw_path", path.encode()).decode("latin-1")
        query = scope.get("query_string", b"").decode("latin-1")

        arn = f"arn:aws:sagemaker:{self.config.region}:{ACCOUNT_ID}:endpoint/{name.lower()}"
        if operation == "bidi":
            failure = self._check_auth(method, raw_path, query, headers, None, _ACTIONS[operation], arn)
            if failure is None and not self._knows(name):
                failure = _unknown_endpoint(name)
            if failure is not None:
                # The SDK raises only once the error response has ended, so it ends now, while the client may
                # still be sending (h2_compat keeps hypercorn from dropping the connection over that).
                await send_error(send, failure)
                return
            await bridge_bidirectional_stream(scope, receive, send, self.config, headers)
            return

        body = await read_body(receive)
        if body is None:
            return
        failure = self._check_auth(method, raw_path, query, headers, body, _ACTIONS[operation], arn)
        if failure is None and not self._knows(name):
            failure = _unknown_endpoint(name)
        if failure is not None:
            await send_error(send, failure)
            return
        await forward_invocation(send, self.config, headers, body, streaming=operation == "response-stream")

    def _knows(self, name: str) -> bool:
        return not self.config.endpoint_names or name in self.config.endpoint_names

    def _check_auth(
        self,
        method: str,
        raw_path: str,
        query: str,
        headers: dict[str, str],
        body: bytes | None,
        action: str,
        arn: str,
    ) -> ErrorReply | None:
        check = self.config.credentials or _ANY_KEY
        return check.check(method, raw_path, query, headers, body, action, arn, region=self.config.region)


_ANY_KEY = CredentialCheck(None)


def _unknown_endpoint(name: str) -> ErrorReply:
    # The runtime API's wording for a name it does not know (same status and error type as InvokeEndpoint).
    return ErrorReply(400, "ValidationError", f"Endpoint {name} of account {ACCOUNT_ID} not found.")


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
