"""The endpoint's Starlette app: SageMaker's contract (``/ping``, ``/invocations``, the bidirectional WebSocket) plus
OpenAI's speech route, over one model shared through the scheduler.

``/ping`` is a flag read (503 until the model is warm) and needs no token, so strangers learn only healthy or not.
``trim_when_idle`` hands freed heap back to the system while the model is idle (glibc keeps it, and the server looks
like it leaks)."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route, WebSocketRoute

from voicedesk.endpoint.auth import BearerTokenMiddleware, presents_token
from voicedesk.endpoint.bidi import bidi_endpoint
from voicedesk.endpoint.hosting import is_loopback
from voicedesk.endpoint.http_errors import Refusal, answer
from voicedesk.endpoint.runtime import EndpointRuntime, RuntimeState, SynthesizerSource
from voicedesk.endpoint.settings import ServerSettings
from voicedesk.endpoint.speech.routes import invocations, openai_speech, openai_voices
from voicedesk.engine.errors import ErrorCode
from voicedesk.engine.protocol import BIDI_PATH
from voicedesk.engine.scheduler import SynthesisScheduler

log = logging.getLogger(__name__)


def may_see_details(request: Request, settings: ServerSettings) -> bool:
    if settings.token is not None:
        return presents_token(request.scope.get("headers", []), settings.token.encode("utf-8"))
    return request.client is not None and is_loopback(request.client.host)


async def ping(request: Request) -> JSONResponse:
    runtime: EndpointRuntime = request.app.state.runtime
    healthy = runtime.state is RuntimeState.READY
    body: dict[str, object] = {"status": "healthy" if healthy else "unhealthy"}
    status_code = 200 if healthy else 503
    if not may_see_details(request, runtime.settings):
        return JSONResponse(body, status_code=status_code)
    body.update(state=str(runtime.state), sessions=runtime.active_sessions)
    if runtime.state is RuntimeState.FAILED and runtime.load_error is not None:
        body.update(code=str(runtime.load_error.code), message=runtime.load_error.message)
    elif runtime.state is RuntimeState.LOADING:
        body.update(code=str(ErrorCode.NOT_READY), message="The model is loading and warming up.")
    elif not healthy:
        body.update(code=str(ErrorCode.SESSION_CLOSING), message="The server is shutting down.")
    return JSONResponse(body, status_code=status_code)


def create_app(source: SynthesizerSource, settings: ServerSettings | None = None) -> Starlette:
    settings = settings or ServerSettings()
    runtime = EndpointRuntime(source, settings)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        runtime.start()
        trimmer = asyncio.create_task(trim_when_idle(runtime.scheduler), name="memory-trim")
        try:
            yield
        finally:
            trimmer.cancel()
            await runtime.aclose()

    routes = [
        Route("/ping", ping, methods=["GET"]),
        Route("/invocations", invocations, methods=["POST"]),
        WebSocketRoute(BIDI_PATH, bidi_endpoint),
        Route("/v1/audio/speech", openai_speech, methods=["POST"]),
        Route("/v1/audio/voices", openai_voices, methods=["GET"]),
    ]
    middleware = [Middleware(BearerTokenMiddleware, token=settings.token)] if settings.token else []
    app = Starlette(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={Refusal: answer, HTTPException: answer, Exception: answer},
    )
    app.state.runtime = runtime
    return app


log = logging.getLogger(__name__)

TRIM_INTERVAL_S = 30.0


def _libc_trim() -> Callable[[], object] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    return lambda: trim(0)


async def trim_when_idle(
    scheduler: SynthesisScheduler,
    interval_s: float = TRIM_INTERVAL_S,
    trim: Callable[[], object] | None = None,
    tick: Callable[[], Awaitable[object]] | None = None,
) -> None:
    """Runs until cancelled: after each interval (``tick``) in which jobs ran, trims the heap once the model is idle."""
    trim = trim or _libc_trim()
    if trim is None:
        return
    trimmed_at = scheduler.jobs_run
    while True:
        await (tick() if tick is not None else asyncio.sleep(interval_s))
        if scheduler.jobs_run == trimmed_at or scheduler.busy or scheduler.pending:
            continue
        trimmed_at = scheduler.jobs_run
        await asyncio.to_thread(trim)  # off the loop: on a big heap it takes milliseconds
