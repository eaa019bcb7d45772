"""The heap is trimmed once after synthesis, while the model is idle, and not again until more work ran."""

from __future__ import annotations

import asyncio
import threading

from voicedesk.endpoint.server import _libc_trim, trim_when_idle
from voicedesk.engine.scheduler import SynthesisScheduler


def test_this_platform_has_a_trim():
    trim = _libc_trim()
    assert trim is not None
    trim()


class Ticks:
    """The trimmer's intervals, one at a time: ``step`` lets one pass and returns once the trimmer has acted on it."""

    def __init__(self) -> None:
        self._go: asyncio.Queue[None] = asyncio.Queue()
        self._waiting = asyncio.Event()

    async def __call__(self) -> None:
        self._waiting.set()
        await self._go.get()

    async def step(self) -> None:
        await self._waiting.wait()
        self._waiting.clear()
        self._go.put_nowait(None)
        await self._waiting.wait()


async def test_trims_once_after_jobs_and_never_while_the_model_works():
    scheduler = SynthesisScheduler(name="trim-test")
    trims: list[int] = []
    release = threading.Event()
    ticks = Ticks()
    trimmer = asyncio.create_task(trim_when_idle(scheduler, trim=lambda: trims.append(scheduler.jobs_run), tick=ticks))
    try:
        await ticks.step()
        assert trims == []  # nothing ran yet
        job = scheduler.submit("s", lambda: release.wait(30), urgent=True, deadline=0.0)
        await ticks.step()
        assert trims == []  # the model is busy
        release.set()
        await job
        assert await scheduler.wait_idle(30)
        await ticks.step()
        assert trims == [1]
        await ticks.step()
        await ticks.step()
        assert trims == [1]  # once, not once per interval
    finally:
        trimmer.cancel()
        await scheduler.aclose()
