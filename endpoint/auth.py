"""Bearer-token guard for lab boxes on a LAN (SageMaker relies on IAM), as ASGI middleware so it covers HTTP and
WebSocket alike; a refused upgrade gets a real 401 where the server supports it, else close 1008."""

from __future__ import annotations

import hmac
import logging

from starlette.types import ASGIApp, Receive, Scope, Send

from voicedesk.endpoint.http_errors import error_response
from voicedesk.endpoint.log_safety import escape
from voicedesk.endpoint.settings import OPEN_PATHS
from voicedesk.engine.errors import CloseCode, ErrorCode, VoicedeskError

log = logging.getLogger(__name__)


def bearer_token(headers: list[tuple[bytes, bytes]]) -> bytes | None:
    """The token as sent, raw bytes, compared with the server's as UTF-8 (a latin-1 decode could never match
    non-ASCII)."""
    for name, value in headers:
        if name.lower() == b"authorization":
            scheme, _, token = value.partition(b" ")
            if scheme.lower() == b"bearer" and token.strip():
                return token.strip()
    return None


def presents_token(headers: list[tuple[bytes, bytes]], token: bytes) -> bool:
    """Whether the request carries this server's token (``token``: the server's, UTF-8), in constant time."""
    presented = bearer_token(headers)
    return presented is not None and hmac.compare_digest(presented, token)


class BearerTokenMiddleware:
    def __init__(self, app: ASGIApp, token: str, open_paths: frozenset[str] = OPEN_PATHS) -> None:
        self.app = app
        self._token = token.encode("utf-8")
        self._open_paths = open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in self._open_paths:
            await self.app(scope, receive, send)
            return
        presented = bearer_token(scope.get("headers", []))
        if presented is not None and hmac.compare_digest(presented, self._token):
            await self.app(scope, receive, send)
            return
        message = (
            "This server requires a token: send the header 'Authorization: Bearer <token>' "
            "(the token given to voicedesk serve --token or VOICEDESK_TOKEN)."
            if presented is None
            else "The bearer token is not the one this server was started with."
        )
        log.info(
            "refused %s %s: %s", scope["type"], escape(scope["path"]), "no token" if presented is None else "bad token"
        )
        error = VoicedeskError(ErrorCode.UNAUTHORIZED, message)
        if scope["type"] == "websocket" and "websocket.http.response" not in scope.get("extensions", {}):
            await send({"type": "websocket.close", "code": CloseCode.POLICY_VIOLATION, "reason": message[:120]})
            return
        # For a WebSocket, Starlette's Response sends this as the upgrade's HTTP denial response.
        response = error_response(error)
        response.headers["WWW-Authenticate"] = 'Bearer realm="voicedesk"'
        await response(scope, receive, send)
