"""Giving memory back after synthesis: glibc keeps freed heap pages, so a server looks like it leaks (``bench abuse``:
1.95 → 2.77 GiB, back to 1.76 after ``malloc_trim(0)``). ``trim_when_idle`` trims while the model is idle, once per
interval after new jobs; elsewhere than glibc it does nothing."""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
from collections.abc import Awaitable, Callable

from voicedesk.engine.scheduler import SynthesisScheduler

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
