"""A local HTTP announce endpoint for scripts and Home Assistant's ``rest_command`` (Starlette, served by uvicorn).

``POST /announce``: a JSON announcement (``app.house.payload``) or plain text → 202 with the id (or the id it was
merged into); 400 with the reason for a bad payload, 503 when the queue is full. ``POST /stop`` stops what is
being said. ``GET /state``: the console's state as JSON. ``POST /listen`` (body ``start``, the default, or ``stop``):
push-to-talk when the console listens (409 when it does not, 503 while its microphone is not open).

Bound to 127.0.0.1 by default. A token (``Authorization: Bearer …``) is then optional; it is required for every
request from another address, and the server refuses to listen beyond loopback without one.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable

from starlette.applications import Starlette
from starlette.requests import Request as HttpRequest
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from voicedesk.app.console.announcement import Source
from voicedesk.app.console.core import QueueFull
from voicedesk.app.console.runner import ConsoleRunner
from voicedesk.app.house.payload import PayloadError, parse_listen, parse_payload
from voicedesk.endpoint.hosting import is_loopback
from voicedesk.engine.errors import UsageError

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 16_384


def check_bind(host: str, token: str | None) -> None:
    if not is_loopback(host) and not token:
        raise UsageError(
            f"The announce endpoint would listen on {host} without a token, so anyone on the network could make "
            "the console speak.",
            "Set a token (--http-token-env NAME, with the token in that environment variable), or listen on 127.0.0.1.",
        )


async def read_body(request: HttpRequest) -> bytes | None:
    """The body, or None past ``MAX_BODY_BYTES``: refused on its Content-Length, else (chunked) when the limit is
    reached, never read whole."""
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > MAX_BODY_BYTES:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            return None
    return bytes(body)


def create_announce_app(
    runner: ConsoleRunner, token: str | None = None, listen: Callable[[bool], str] | None = None
) -> Starlette:
    def authorized(request: HttpRequest) -> JSONResponse | None:
        client = request.client.host if request.client is not None else None
        given = request.headers.get("authorization", "")
        if token:
            expected = f"Bearer {token}"
            if hmac.compare_digest(given.encode(), expected.encode()):
                return None
            return JSONResponse(
                {"error": "a valid token is required: send the header 'Authorization: Bearer <token>'"},
                401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        if is_loopback(client):
            return None
        return JSONResponse({"error": "requests from other machines need a token; none is set"}, 403)

    async def announce(request: HttpRequest) -> Response:
        refused = authorized(request)
        if refused is not None:
            return refused
        body = await read_body(request)
        if body is None:
            return JSONResponse({"error": f"the body is over the limit: send at most {MAX_BODY_BYTES} bytes"}, 413)
        try:
            offered = runner.submit(parse_payload(body, Source.HTTP, runner.chimes.names))
        except PayloadError as exc:
            return JSONResponse({"error": str(exc)}, 400)
        except QueueFull as exc:
            return JSONResponse({"error": str(exc)}, 503, headers={"Retry-After": "10"})
        if offered.report is not None:
            return JSONResponse({"id": offered.report.id, "merged_into": offered.report.into}, 202)
        assert offered.item is not None
        return JSONResponse(
            {"id": offered.item.id, "priority": offered.item.priority.label, "queued": len(runner.core)}, 202
        )

    async def stop(request: HttpRequest) -> Response:
        refused = authorized(request)
        if refused is not None:
            return refused
        await runner.stop()
        return JSONResponse({"stopped": True})

    async def listen_now(request: HttpRequest) -> Response:
        refused = authorized(request)
        if refused is not None:
            return refused
        if listen is None:
            return JSONResponse({"error": "this console does not listen: start the announcer with --listen"}, 409)
        body = await read_body(request)
        try:
            start = parse_listen(body if body is not None else b"(too long)")
        except PayloadError as exc:
            return JSONResponse({"error": str(exc)}, 400)
        if refused := listen(start):
            return JSONResponse({"error": refused}, 503, headers={"Retry-After": "10"})
        return JSONResponse({"listening": start}, 202)

    async def state(request: HttpRequest) -> Response:
        refused = authorized(request)
        if refused is not None:
            return refused
        return JSONResponse(runner.state().as_dict())

    return Starlette(
        routes=[
            Route("/announce", announce, methods=["POST"]),
            Route("/stop", stop, methods=["POST"]),
            Route("/listen", listen_now, methods=["POST"]),
            Route("/state", state, methods=["GET"]),
        ]
    )


KEEP_ALIVE_S = 75
"""How long an idle connection stays open: longer than clients keep one to reuse (httpx 5 s, aiohttp 15 s), so a
script's next announcement never goes out on a connection the server is closing at that moment (uvicorn's 5 s, the
same as httpx's, lost one in CI with a ReadError)."""


async def serve_announce(
    runner: ConsoleRunner, host: str, port: int, token: str | None, listen: Callable[[bool], str] | None = None
):
    """Starts uvicorn on the running loop; returns the server (``.port``: where it listens; ``should_exit = True``
    then await ``.task`` to stop it)."""
    import asyncio
    import socket

    import uvicorn

    check_bind(host, token)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UsageError(
            f"The announce endpoint cannot listen on {host}:{port}: {exc.strerror}.", "Pick another --http-port."
        ) from None
    config = uvicorn.Config(
        create_announce_app(runner, token, listen),
        log_level="warning",
        lifespan="off",
        access_log=False,
        timeout_keep_alive=KEEP_ALIVE_S,
    )
    server = uvicorn.Server(config)
    server.port = sock.getsockname()[1]  # type: ignore[attr-defined]
    server.task = asyncio.ensure_future(server.serve(sockets=[sock]))  # type: ignore[attr-defined]
    # uvicorn offers a flag, not an event, for "listening".
    while not server.started and not server.task.done():  # type: ignore[attr-defined]  # noqa: ASYNC110
        await asyncio.sleep(0.02)
    return server
