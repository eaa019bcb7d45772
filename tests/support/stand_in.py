"""Fixtures (imported by tests/conftest.py) with real parts on loopback for the remote engines: the endpoint
container (uvicorn + the random-weight Kokoro), the SageMaker stand-in (hypercorn, HTTP/2 + TLS) in its own thread,
and an AWS environment that never reaches the developer's real credentials or config."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.endpoint import server_settings
from voicedesk.app.lab.sagemaker_local.auth import CredentialCheck
from voicedesk.app.lab.sagemaker_local.config import ContainerTarget, StandInConfig
from voicedesk.app.lab.sagemaker_local.server import StandInServer
from voicedesk.endpoint.runner import ServerThread
from voicedesk.endpoint.server import create_app
from voicedesk.engine.events import Audio, Closed, Event, Flushed

GUARD_S = 60.0
"""Upper bound on any wait, so a broken peer fails a test instead of hanging it (not a timing check)."""

TEST_KEY_ID = "AKIAVOICEDESKTEST001"
TEST_SECRET = "voicedesk-test-secret-key"
ENDPOINT = "voicedesk-test"
REGION = "us-east-1"


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Known test credentials; no ~/.aws files, no endpoint overrides from the developer's shell."""
    for name in (
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2",
        "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME",
        "AWS_ENDPOINT_URL_SAGEMAKER",
        "AWS_CA_BUNDLE",
        "SSL_CERT_FILE",
        "VOICEDESK_TOKEN",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", TEST_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", TEST_SECRET)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture(scope="session")
def container(server: ServerThread) -> ServerThread:
    """The real endpoint container on 127.0.0.1 behind the stand-in: the suite's one shared server."""
    return server


@pytest.fixture
def make_container(synthesizer) -> Iterator[Callable[..., ServerThread]]:
    """A container of its own for a test that breaks it (crash, token)."""
    started: list[ServerThread] = []

    def make(**settings: object) -> ServerThread:
        running = ServerThread(create_app(synthesizer, server_settings(**settings)))  # type: ignore[arg-type]
        started.append(running)
        return running.start()

    yield make
    for running in started:
        running.stop()


def abort_connections(server: ServerThread) -> int:
    """Drops every TCP connection of the container at once, as if its process had died (no close frames)."""

    async def abort() -> int:
        connections = list(server.server.server_state.connections)
        for connection in connections:
            connection.transport.abort()
        return len(connections)

    return server.call(abort)


class FreezableProxy:
    """A TCP relay in front of the container that can freeze: connections stay open but nothing passes.

    That is what a hung server or a dead network path looks like to a client (no FIN, no RST, no pongs).
    """

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.frozen = asyncio.Event()
        self._server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> FreezableProxy:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            while data := await source.read(65536):
                if self.frozen.is_set():
                    await asyncio.Event().wait()  # hold the connection open, forward nothing
                sink.write(data)
                await sink.drain()
            sink.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer), return_exceptions=True)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()


class StandInThread:
    """``voicedesk sagemaker-local``'s server on its own thread and event loop, like a separate process."""

    def __init__(self, config: StandInConfig, state_dir: Path) -> None:
        self.config = config
        self.server = StandInServer(config, state_dir=state_dir)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._stopped: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="sagemaker-local", daemon=True)
        self._error: BaseException | None = None

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stopped = asyncio.Event()
            try:
                await self.server.start()
            except BaseException as exc:
                self._error = exc
                self._ready.set()
                raise
            self._ready.set()
            await self._stopped.wait()
            await self.server.stop()

        asyncio.run(main())

    def start(self) -> StandInThread:
        self._thread.start()
        self._ready.wait(GUARD_S)
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        if self._thread.is_alive() and self._stopped is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(self._stopped.set)
            self._thread.join(GUARD_S)

    def drop_connections(self) -> int:
        """Drops every client connection of the stand-in at once (a network failure); returns how many."""
        assert self._loop is not None

        async def drop() -> int:
            return self.server.abort_connections()

        return asyncio.run_coroutine_threadsafe(drop(), self._loop).result(GUARD_S)

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def ca_file(self) -> Path:
        return self.server.ca_file


@pytest.fixture(scope="session")
def stand_in_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sagemaker-local")


@pytest.fixture(scope="session")
def stand_in(container: ServerThread, stand_in_state: Path) -> Iterator[StandInThread]:
    """The stand-in in front of the shared container; answers to ENDPOINT and checks SigV4 against the test key."""
    config = StandInConfig(
        ContainerTarget(container.http_url),
        endpoint_names=frozenset({ENDPOINT}),
        credentials=CredentialCheck({TEST_KEY_ID: TEST_SECRET}),
        max_part_bytes=8192,  # large audio frames arrive as PARTIAL parts, as the client must handle
    )
    running = StandInThread(config, stand_in_state).start()
    yield running
    running.stop()


@pytest.fixture
def make_stand_in(stand_in_state: Path) -> Iterator[Callable[..., StandInThread]]:
    started: list[StandInThread] = []

    def make(container_url: str, **options: object) -> StandInThread:
        options.setdefault("endpoint_names", frozenset({ENDPOINT}))
        running = StandInThread(StandInConfig(ContainerTarget(container_url), **options), stand_in_state)  # type: ignore[arg-type]
        started.append(running.start())
        return running

    yield make
    for running in started:
        running.stop()


@dataclass
class Collected:
    events: list[Event] = field(default_factory=list)

    def of(self, kind: type) -> list:
        return [e for e in self.events if isinstance(e, kind)]

    def audio_bytes(self, seq: int | None = None) -> int:
        return sum(len(e.pcm) for e in self.of(Audio) if seq is None or e.seq == seq)


async def collect_until(events: AsyncIterator[Event], stop: Callable[[Event], bool]) -> Collected:
    """Reads events until ``stop(event)`` holds for one (included) or the stream ends."""
    collected = Collected()
    async with asyncio.timeout(GUARD_S):
        async for event in events:
            collected.events.append(event)
            if stop(event):
                break
    return collected


def is_flushed(request_id: str | None = None) -> Callable[[Event], bool]:
    return lambda e: isinstance(e, Flushed) and (request_id is None or e.request_id == request_id)


def is_closed(event: Event) -> bool:
    return isinstance(event, Closed)
