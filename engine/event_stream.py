"""The ordered events of one session: put in by its adapter, read by one consumer, ending after ``Closed``.

Shared by the in-process session (``engine.local``) and the remote one (``engine.clients.remote``), so both
honour the same rule: nothing is delivered after ``Closed``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable

from engine.events import Closed, Event


class EventStream:
    def __init__(self) -> None:
        self._queue: asyncio.Queue[Event] = asyncio.Queue()
        self.finished = False
        """True once ``Closed`` was put in; later events are dropped."""

    def emit(self, events: Iterable[Event]) -> None:
        for event in events:
            if self.finished:
                return
            self._queue.put_nowait(event)
            if isinstance(event, Closed):
                self.finished = True

    async def __aiter__(self) -> AsyncIterator[Event]:
        while True:
            event = await self._queue.get()
            yield event
            if isinstance(event, Closed):
                return
