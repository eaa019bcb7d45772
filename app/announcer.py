"""Runs the announcement queue against the speech controller, one announcement at a time (asyncio, no Qt).

``submit`` queues; if nothing is being said, the announcement starts at once. ``submit(..., interrupt=True)``
puts it first and stops what is being said (the explicit choice); ``at`` puts it at a given place instead (an
urgent house announcement goes behind the urgent ones already waiting; a cut one resumes behind the one that cut
it). ``stop`` stops what is being said and pauses the queue, so nothing else starts behind the person's back;
``resume`` (or a new submission) carries on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from voicedesk.app.announcements import Announcement, AnnouncementQueue
from voicedesk.app.conversation import Turn
from voicedesk.app.wakeup import Wakeup, loop_running

log = logging.getLogger(__name__)

Starter = Callable[[Announcement], Awaitable[Turn | None]]
"""Starts one announcement on the controller; returns its turn (None: it could not start, already said why)."""


class Announcer:
    def __init__(
        self,
        start: Starter,
        wait_turn: Callable[[Turn], Awaitable[None]],
        stop_speech: Callable[[], Awaitable[object]],
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        self.queue = AnnouncementQueue()
        self._start = start
        self._wait_turn = wait_turn
        self._stop_speech = stop_speech
        self._on_change = on_change
        self.current: Announcement | None = None
        self.current_turn: Turn | None = None
        self._wake = Wakeup()
        self._runner: asyncio.Task[None] | None = None
        self._stopping: set[asyncio.Future[object]] = set()
        self._cut_when_started = False
        """An interruption came while the current announcement was starting (before its turn existed)."""

    def start(self) -> None:
        if self._runner is None:
            self._runner = asyncio.ensure_future(self._run())

    async def aclose(self) -> None:
        if self._runner is not None:
            self._runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._runner
            self._runner = None

    @property
    def busy(self) -> bool:
        return self.current is not None

    def submit(self, item: Announcement, interrupt: bool = False, at: int | None = None) -> None:
        """Queues ``item`` (raises ``QueueFull``); ``interrupt``: stop what is being said and say it next (first
        in line, or at place ``at``); ``at`` alone: its place in line (0 is first), else last."""
        self.queue.add(item, first=interrupt, at=at)
        self.queue.paused = False  # asking for something new carries on
        self._wake.set()
        self._on_change()
        if interrupt and self.current is not None:
            if self.current_turn is None:
                self._cut_when_started = True  # still starting: nothing to stop yet, so stop it once it starts
            stopping = asyncio.ensure_future(self._stop_speech())
            self._stopping.add(stopping)
            stopping.add_done_callback(self._stopping.discard)

    async def stop(self) -> None:
        """Stops what is being said; whatever waits stays queued, paused."""
        if self.queue.items:
            self.queue.paused = True
        await self._stop_speech()
        self._on_change()

    def resume(self) -> None:
        self.queue.paused = False
        self._wake.set()
        self._on_change()

    def remove(self, item_id: int) -> None:
        self.queue.remove(item_id)
        self._on_change()

    def clear(self) -> None:
        self.queue.clear()
        self._on_change()

    async def _run(self) -> None:
        while True:
            if not loop_running():  # woken by Qt outside the loop's run: start nothing until it runs
                self._wake.set_later()
                await self._wake.wait()
                continue
            item = self.queue.take()
            if item is None:
                await self._wake.wait()
                continue
            self.current = item
            self._cut_when_started = False
            self._on_change()
            try:
                turn = await self._start(item)
                self.current_turn = turn
                self._on_change()
                if turn is not None:
                    if self._cut_when_started:
                        await self._stop_speech()
                    await self._wait_turn(turn)
            except asyncio.CancelledError:
                raise
            except Exception:  # one announcement failing must not stop the queue
                log.exception("announcement %d failed", item.id)
            finally:
                self.current = None
                self.current_turn = None
                self._on_change()
