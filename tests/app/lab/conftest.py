"""The lab's real parts on loopback: the random-weight Kokoro (the suite's shared synthesizer) as a local engine,
and the endpoint container around the same model on 127.0.0.1 for the websocket engine and the transport scenario."""

from __future__ import annotations

import pytest

from voicedesk.endpoint.runner import ServerThread
from voicedesk.engine.local import LocalEngine

TEXT = "Good morning to you. Lights off now."
"""Two chunks: the early first fragment ends at the first period; the second waits for the flush."""
SEED = ("Good morning to you.", "Lights off now.", "See you soon.")


@pytest.fixture(scope="session")
def bench_container(server: ServerThread) -> ServerThread:
    """The suite's shared endpoint, for the websocket engine and the transport scenario."""
    return server


def local_engine_factory(synthesizer):  # type: ignore[no-untyped-def]
    """Opens a local engine around the already-loaded model (the suite loads it once)."""

    async def open_local() -> LocalEngine:
        return LocalEngine(synthesizer)

    return open_local
