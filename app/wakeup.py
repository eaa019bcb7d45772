"""A wake-up call for long-lived loops on a plain future, not ``asyncio.Event``: Qt can run a queued callback while
qasync's loop is not marked running, where those fail; ``loop_running`` lets a loop put work off until it is."""

from __future__ import annotations

import asyncio

RETRY_S = 0.05


def loop_running() -> bool:
    return asyncio._get_running_loop() is not None


class Wakeup:
    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._loop = loop or asyncio.get_event_loop()
        self._waiter: asyncio.Future[None] | None = None
        self._flag = False

    def set(self) -> None:
        self._flag = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def set_later(self, delay_s: float = RETRY_S) -> None:
        self._loop.call_later(delay_s, self.set)

    async def wait(self, timeout_s: float | None = None) -> bool:
        """Returns True when woken, False when ``timeout_s`` passed first."""
        if self._flag:
            self._flag = False
            return True
        waiter = self._waiter = self._loop.create_future()
        timer = None
        if timeout_s is not None:
            timer = self._loop.call_later(timeout_s, lambda: waiter.done() or waiter.set_result(None))
        try:
            await waiter
        finally:
            if timer is not None:
                timer.cancel()
            self._waiter = None
        woken, self._flag = self._flag, False
        return woken
