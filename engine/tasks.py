"""Stopping a task: cancel it and wait for its end, without swallowing a cancellation of the one waiting."""

from __future__ import annotations

import asyncio


async def cancel_and_wait(task: asyncio.Future[object] | None) -> None:
    """Cancels ``task`` and returns once it has ended (its other errors propagate).

    ``suppress(CancelledError)`` around the wait also swallowed the caller's own cancellation when it came meanwhile:
    a health check cancelled while it dropped a connection carried on checking, and the window never closed.
    """
    if task is None:
        return
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise
