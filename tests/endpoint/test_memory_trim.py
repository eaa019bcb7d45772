"""The heap is trimmed once after synthesis, while the model is idle, and not again until more work ran."""

from __future__ import annotations

import asyncio
import threading

from voicedesk.endpoint.memory_trim import _libc_trim, trim_when_idle
from voicedesk.engine.scheduler import SynthesisScheduler


def test_this_platform_has_a_trim():
    trim = _libc_trim()
    assert trim is not None
    trim()


async def test_trims_once_after_jobs_and_never_while_the_model_works():
    scheduler = SynthesisScheduler(name="trim-test")
    trims: list[int] = []
    release, trimmed = threading.Event(), threading.Event()

    def trim() -> None:
        trims.append(scheduler.jobs_run)
        trimmed.set()

    trimmer = asyncio.create_task(trim_when_idle(scheduler, 0.02, trim))
    try:
        await asyncio.sleep(0.1)
        assert trims == []  # nothing ran yet
        job = scheduler.submit("s", lambda: release.wait(30), urgent=True, deadline=0.0)
        await asyncio.sleep(0.1)
        assert trims == []  # the model is busy
        release.set()
        await job
        assert await asyncio.to_thread(trimmed.wait, 30)
        await asyncio.sleep(0.1)
        assert trims == [1]  # once, not once per interval
    finally:
        trimmer.cancel()
        await scheduler.aclose()
