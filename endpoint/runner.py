"""Running the app under uvicorn, in the foreground (``voicedesk serve``) or on a thread (tests, benchmarks).

uvicorn alone answers SIGTERM by closing every WebSocket with 1012; ``GracefulServer`` lets each session finish its
sentence and close 1001, then aborts what is left, within SageMaker's 30 s."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading

import uvicorn
from starlette.applications import Starlette

from voicedesk.endpoint.log_safety import guard_server_logs
from voicedesk.endpoint.runtime import EndpointRuntime
from voicedesk.endpoint.settings import ServerSettings
from voicedesk.endpoint.transport_guards import guarded_protocols

UVICORN_GRACE_S = 4


class GracefulServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, runtime: EndpointRuntime) -> None:
        super().__init__(config)
        self.runtime = runtime

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        await self.runtime.drain()
        await super().shutdown(sockets)
        for connection in list(self.server_state.connections):
            transport = getattr(connection, "transport", None)
            if transport is not None and not transport.is_closing():
                transport.abort()


def uvicorn_config(
    app: Starlette, settings: ServerSettings, log_config: object = uvicorn.config.LOGGING_CONFIG
) -> uvicorn.Config:
    runtime = getattr(app.state, "runtime", None)
    http, ws = guarded_protocols(settings, runtime.junk_by_address if runtime is not None else None)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        lifespan="on",
        http=http,
        ws=ws,
        ws_max_size=settings.ws_max_size,
        ws_ping_interval=settings.ws_ping_interval_s,
        ws_ping_timeout=settings.ws_ping_interval_s,
        # PCM barely compresses, and deflate would add latency to every audio frame.
        ws_per_message_deflate=False,
        h11_max_incomplete_event_size=settings.max_header_bytes,
        timeout_keep_alive=int(settings.keepalive_timeout_s),
        timeout_graceful_shutdown=UVICORN_GRACE_S,
        ssl_certfile=settings.tls_cert,
        ssl_keyfile=settings.tls_key,
        log_config=log_config,  # type: ignore[arg-type]
        access_log=False,
        server_header=False,
    )
    guard_server_logs()  # after Config: it applies uvicorn's logging config
    return config


def serve_forever(app: Starlette, settings: ServerSettings) -> None:
    """Runs in the foreground until SIGINT/SIGTERM (uvicorn installs the handlers on the main thread)."""
    server = GracefulServer(uvicorn_config(app, settings), app.state.runtime)
    server.run()


class ServerThread:
    """A real uvicorn server on 127.0.0.1 and a free port, in a background thread with its own event loop."""

    def __init__(self, app: Starlette, settings: ServerSettings | None = None) -> None:
        self.app = app
        self.runtime: EndpointRuntime = app.state.runtime
        settings = settings or self.runtime.settings
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._socket.getsockname()[1]
        config = uvicorn_config(app, settings, log_config=None)
        self.server = GracefulServer(config, self.runtime)
        self._thread = threading.Thread(target=self._run, name=f"uvicorn-{self.port}", daemon=True)
        self.loop: asyncio.AbstractEventLoop | None = None

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def _run(self) -> None:
        async def main() -> None:
            self.loop = asyncio.get_running_loop()
            await self.server.serve(sockets=[self._socket])

        asyncio.run(main())

    def start(self, ready_timeout_s: float = 120.0) -> ServerThread:
        self._thread.start()
        if not self.runtime.wait_ready(ready_timeout_s):
            self.stop()
            error = self.runtime.load_error
            raise RuntimeError(f"the endpoint did not become ready: {error.message if error else 'timed out'}")
        return self

    def stop(self, timeout_s: float = 60.0) -> None:
        self.server.should_exit = True
        self._thread.join(timeout_s)
        with contextlib.suppress(OSError):
            self._socket.close()

    def call(self, coro_factory, timeout_s: float = 30.0):  # type: ignore[no-untyped-def]
        """Runs a coroutine on the server's loop (to look at its state from another thread)."""
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(coro_factory(), self.loop).result(timeout_s)

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
