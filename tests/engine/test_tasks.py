"""Stopping a task never swallows the cancellation of the one who stops it (a window once never closed)."""

from __future__ import annotations

import asyncio

import pytest

from voicedesk.engine.tasks import cancel_and_wait


async def test_a_task_is_cancelled_and_waited_for():
    ended = asyncio.Event()

    async def forever():
        try:
            await asyncio.Event().wait()
        finally:
            ended.set()

    task = asyncio.create_task(forever())
    await asyncio.sleep(0)
    await cancel_and_wait(task)
    assert task.cancelled() and ended.is_set()
    await cancel_and_wait(task)  # again, or on nothing: nothing to do
    await cancel_and_wait(None)


async def test_a_task_that_failed_says_so():
    async def fails():
        raise ValueError("broken")

    task = asyncio.create_task(fails())
    await asyncio.sleep(0)
    with pytest.raises(ValueError, match="broken"):
        await cancel_and_wait(task)


async def test_the_stopper_cancelled_while_it_waits_is_cancelled_too():
    """The task takes a while to stop (its clean-up awaits); its stopper is cancelled meanwhile and must end,
    not carry on as if only the task had been cancelled (``suppress(CancelledError)`` did)."""
    cleaning, release = asyncio.Event(), asyncio.Event()

    async def slow_to_stop():
        try:
            await asyncio.Event().wait()
        finally:
            cleaning.set()
            await release.wait()

    task = asyncio.create_task(slow_to_stop())
    carried_on = False

    async def stopper():
        nonlocal carried_on
        await cancel_and_wait(task)
        carried_on = True

    stopping = asyncio.create_task(stopper())
    await cleaning.wait()
    stopping.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await stopping
    assert not carried_on
    assert task.done()
