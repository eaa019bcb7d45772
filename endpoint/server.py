"""The endpoint's Starlette app: SageMaker's contract (``/ping``, ``/invocations``, the bidirectional
WebSocket) plus an OpenAI-compatible speech route, all over one model shared through the scheduler.

``create_app(source, settings)`` takes either a loaded synthesizer (tests, benchmarks) or a loader; the
lifespan starts loading in the background, so the server listens at once and ``/ping`` answers 503 until the
model is loaded and warmed. ``/ping`` only reads a flag: it never waits for the model thread.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route, WebSocketRoute

from endpoint.auth import BearerTokenMiddleware
from endpoint.bidi import bidi_endpoint
from endpoint.runtime import EndpointRuntime, RuntimeState, SynthesizerSource
from endpoint.settings import ServerSettings
from endpoint.speech_http import invocations, openai_speech, openai_voices
from engine.errors import ErrorCode
from engine.protocol import BIDI_PATH


async def ping(request: Request) -> JSONResponse:
    runtime: EndpointRuntime = request.app.state.runtime
    body: dict[str, object] = {"status": str(runtime.state), "sessions": runtime.active_sessions}
    if runtime.state is RuntimeState.READY:
        return JSONResponse(body)
    if runtime.state is RuntimeState.FAILED and runtime.load_error is not None:
        body.update(code=str(runtime.load_error.code), message=runtime.load_error.message)
    elif runtime.state is RuntimeState.LOADING:
        body.update(code=str(ErrorCode.NOT_READY), message="The model is loading and warming up.")
    else:
        body.update(code=str(ErrorCode.SESSION_CLOSING), message="The server is shutting down.")
    return JSONResponse(body, status_code=503)


def create_app(source: SynthesizerSource, settings: ServerSettings | None = None) -> Starlette:
    settings = settings or ServerSettings()
    runtime = EndpointRuntime(source, settings)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        runtime.start()
        try:
            yield
        finally:
            await runtime.aclose()

    routes = [
        Route("/ping", ping, methods=["GET"]),
        Route("/invocations", invocations, methods=["POST"]),
        WebSocketRoute(BIDI_PATH, bidi_endpoint),
        Route("/v1/audio/speech", openai_speech, methods=["POST"]),
        Route("/v1/audio/voices", openai_voices, methods=["GET"]),
    ]
    middleware = [Middleware(BearerTokenMiddleware, token=settings.token)] if settings.token else []
    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
    app.state.runtime = runtime
    return app
