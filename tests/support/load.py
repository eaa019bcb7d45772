"""Keeping a running endpoint's model busy, for tests of its answers under load (``queue_saturated``).

The load is real: sessions opened on the server's own runtime (its loop, scheduler and model) with several
sentences each. A session queues one sentence at a time, so two of them keep one sentence waiting while the
other's is synthesized.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from voicedesk.endpoint.runner import ServerThread
from voicedesk.endpoint.runtime import Lease
from voicedesk.engine.local import LocalSession

LOAD_TEXT = "We go now. The cat sat on a mat. The dog ran off fast. The bird flew up high. The end is near us."
GUARD_S = 120.0


def wait_until(condition, what: str, timeout_s: float = GUARD_S) -> None:  # type: ignore[no-untyped-def]
    """Polls a condition on the server's state (it lives in another thread) until it holds."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.02)


@contextlib.contextmanager
def busy_model(server: ServerThread, sessions: int = 2) -> Iterator[None]:
    """Sentences wait for the model (``runtime.queue_depth`` ≥ 1) inside the block; dropped at its end."""
    runtime = server.runtime
    opened: list[tuple[Lease, LocalSession]] = []

    async def start() -> None:
        for _ in range(sessions):
            lease = runtime.admit("test-load")
            session = runtime.open_session(lease)
            opened.append((lease, session))
            await session.send_text(LOAD_TEXT)
            await session.flush()

    async def stop() -> None:
        for lease, session in opened:
            await session.aclose()
            runtime.release(lease)

    server.call(start)
    try:
        wait_until(lambda: runtime.queue_depth >= 1, "a sentence waits for the model")
        yield
    finally:
        server.call(stop)
        wait_until(lambda: runtime.queue_depth == 0, "the load's sentences are dropped")
