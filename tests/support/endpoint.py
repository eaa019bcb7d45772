"""A real uvicorn server on 127.0.0.1 (a free port, a background thread) around the real random-weight
Kokoro synthesizer, and small helpers for talking to it with real clients (websockets, httpx, openai)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

import pytest
from websockets.asyncio.client import ClientConnection, connect

from voicedesk.endpoint.runner import ServerThread
from voicedesk.endpoint.server import create_app
from voicedesk.endpoint.settings import ServerSettings
from voicedesk.engine.events import BYTES_PER_SAMPLE, SAMPLE_RATE
from voicedesk.engine.limits import ConnectionLimits
from voicedesk.engine.protocol import BIDI_PATH

# Texts the chunker cuts into exactly these sentences (the first needs 3 words, later ones 20 characters).
THREE_SENTENCES = ("Good morning to you.", "The sun is up today.", "We can go outside now.")
FIVE_SENTENCES = "We go now. The cat sat on a mat. The dog ran off fast. The bird flew up high. The end is near us."
TWO_SENTENCES = "It is a nice day. See you all soon."

GUARD_S = 180.0
"""Upper bound on any single wait, so a broken server fails a test instead of hanging it (not a timing check)."""


def server_settings(**settings: object) -> ServerSettings:
    """``ServerSettings`` from flat keywords; those of ``ConnectionLimits`` go into its ``connection``."""
    names = {f.name for f in dataclasses.fields(ConnectionLimits)}
    connection = ConnectionLimits(**{k: settings.pop(k) for k in list(settings) if k in names})  # type: ignore[arg-type]
    return ServerSettings(connection=connection, **settings)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def server(synthesizer) -> Iterator[ServerThread]:
    """The shared server with default settings (one per test run)."""
    with ServerThread(create_app(synthesizer, server_settings(idle_timeout_s=120))) as running:
        yield running


@pytest.fixture
def make_server(synthesizer) -> Iterator[Callable[..., ServerThread]]:
    """Starts servers with special settings (limits, token, a loader) for one test; stops them after it."""
    started: list[ServerThread] = []

    def make(source: object = None, wait_ready: bool = True, **settings: object) -> ServerThread:
        running = ServerThread(create_app(source or synthesizer, server_settings(**settings)))  # type: ignore[arg-type]
        started.append(running)
        if wait_ready:
            return running.start()
        running._thread.start()
        return running

    yield make
    for running in started:
        running.stop()


def bidi(server: ServerThread, **kwargs: object) -> AbstractAsyncContextManager[ClientConnection]:
    return connect(server.ws_url + BIDI_PATH, **kwargs)  # type: ignore[arg-type]


def pcm_seconds(size: int) -> float:
    return size / (BYTES_PER_SAMPLE * SAMPLE_RATE)


@dataclass
class Frames:
    """What a client received: JSON control messages decoded, audio kept as bytes, in arrival order."""

    items: list[dict | bytes]

    @property
    def messages(self) -> list[dict]:
        return [f for f in self.items if isinstance(f, dict)]

    @property
    def kinds(self) -> list[str]:
        return [f["type"] if isinstance(f, dict) else "audio" for f in self.items]

    def of_type(self, kind: str) -> list[dict]:
        return [m for m in self.messages if m.get("type") == kind]

    @property
    def audio(self) -> bytes:
        return b"".join(f for f in self.items if isinstance(f, bytes))

    def audio_by_sentence(self) -> dict[int, int]:
        """Audio bytes received between each ``sentence_start`` and its ``sentence_end``."""
        sizes: dict[int, int] = {}
        current: int | None = None
        for frame in self.items:
            if isinstance(frame, bytes):
                assert current is not None, "audio outside a sentence"
                sizes[current] += len(frame)
            elif frame["type"] == "sentence_start":
                current = frame["seq"]
                sizes[current] = 0
            elif frame["type"] == "sentence_end":
                assert frame["seq"] == current
                current = None
        return sizes


def decode(frame: str | bytes) -> dict | bytes:
    return json.loads(frame) if isinstance(frame, str) else frame


async def receive_until(ws: ClientConnection, kind: str, count: int = 1) -> Frames:
    """Reads frames until ``count`` control messages of type ``kind`` arrived."""
    items: list[dict | bytes] = []
    seen = 0
    async with asyncio.timeout(GUARD_S):
        while seen < count:
            frame = decode(await ws.recv())
            items.append(frame)
            if isinstance(frame, dict) and frame.get("type") == kind:
                seen += 1
    return Frames(items)


async def receive_until_audio(ws: ClientConnection) -> Frames:
    items: list[dict | bytes] = []
    async with asyncio.timeout(GUARD_S):
        while not items or not isinstance(items[-1], bytes):
            items.append(decode(await ws.recv()))
    return Frames(items)


async def receive_all(ws: ClientConnection) -> Frames:
    """Reads until the server closes the connection."""
    from websockets.exceptions import ConnectionClosed

    items: list[dict | bytes] = []
    async with asyncio.timeout(GUARD_S):
        try:
            while True:
                items.append(decode(await ws.recv()))
        except ConnectionClosed:
            pass
    return Frames(items)


async def wait_for(condition: Callable[[], bool], what: str) -> None:
    """Polls a condition on the server's state (it lives in another thread) until it holds."""
    async with asyncio.timeout(GUARD_S):
        while True:
            if condition():
                return
            await asyncio.sleep(0.02)
    raise AssertionError(what)
