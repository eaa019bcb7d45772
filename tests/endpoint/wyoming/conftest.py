"""Wyoming servers on 127.0.0.1 around real engines, and the ``wyoming`` library's own client to talk to them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager

import pytest
from wyoming.client import AsyncTcpClient
from wyoming.error import Error as WyomingError
from wyoming.event import Event as WyomingEvent

from tests.support.fake_hf_cache import FAKE_VOICES
from tests.support.net import free_port
from voicedesk.endpoint.wyoming.catalog import VoiceCatalog, probe_voices
from voicedesk.endpoint.wyoming.conversation import build_info
from voicedesk.endpoint.wyoming.server import WyomingSettings, WyomingTtsServer
from voicedesk.engine.api import Engine
from voicedesk.engine.local import LocalEngine

GUARD_S = 180.0
"""Upper bound on any single wait, so a broken server fails a test instead of hanging it (not a timing check)."""


@pytest.fixture
async def local_engine(synthesizer) -> AsyncIterator[LocalEngine]:
    """The real random-weight Kokoro behind a fresh scheduler (so its job counts belong to one test)."""
    engine = LocalEngine(synthesizer)
    yield engine
    await engine.aclose()


@asynccontextmanager
async def running_wyoming(
    engine: Engine, default: str = "af_heart", candidates: Sequence[str] = FAKE_VOICES, **settings: object
) -> AsyncIterator[WyomingTtsServer]:
    """A Wyoming server as ``voicedesk wyoming`` builds it: voices probed through the engine, then listening."""
    usable = await probe_voices(engine, default, candidates)
    catalog = VoiceCatalog.build(usable, default)
    server = WyomingTtsServer(
        engine,
        catalog,
        build_info(catalog, engine.name),
        WyomingSettings(host="127.0.0.1", port=free_port(), **settings),  # type: ignore[arg-type]
    )
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def client_of(server: WyomingTtsServer) -> AsyncTcpClient:
    return AsyncTcpClient(server.settings.host, server.settings.port)


async def read_until(client: AsyncTcpClient, *types: str) -> list[WyomingEvent]:
    """Events up to and including the first of one of ``types``; fails on an error event or a closed connection."""
    events: list[WyomingEvent] = []
    async with asyncio.timeout(GUARD_S):
        while True:
            event = await client.read_event()
            assert event is not None, f"the server closed the connection before {types}; got {kinds(events)}"
            if WyomingError.is_type(event.type):
                raise AssertionError(f"server error: {WyomingError.from_event(event)}")
            events.append(event)
            if event.type in types:
                return events


async def read_to_close(client: AsyncTcpClient) -> list[WyomingEvent]:
    """Every event until the server closes the connection."""
    events: list[WyomingEvent] = []
    async with asyncio.timeout(GUARD_S):
        while (event := await client.read_event()) is not None:
            events.append(event)
    return events


def kinds(events: Sequence[WyomingEvent]) -> list[str]:
    return [e.type for e in events]


async def wait_for(condition: Callable[[], bool], what: str) -> None:
    """Polls state that changes behind the client's back (a server's connections, another thread's runtime)."""
    try:
        async with asyncio.timeout(GUARD_S):
            while True:
                if condition():
                    return
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(what) from None
