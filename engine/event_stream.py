"""The ordered events of one session: put in by its adapter, read by one consumer, ending after ``Closed``.

Shared by the in-process session (``engine.local``) and the remote one (``engine.clients.remote``), so both
honour the same rule: nothing is delivered after ``Closed``. The stream also tells its producer when the consumer
has taken an event (``on_taken``): that is how a session knows how much audio its listener has really taken,
and so how far ahead it may synthesize (backpressure, ``engine.session``).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable

from voicedesk.engine.events import Audio, Closed, Event, drop_cancelled_audio


class EventStream:
    def __init__(self, on_taken: Callable[[Event], None] | None = None) -> None:
        self._queue: deque[Event] = deque()
        self._ready = asyncio.Event()
        self._on_taken = on_taken
        self.finished = False
        """True once ``Closed`` was put in; later events are dropped."""

    def emit(self, events: Iterable[Event]) -> None:
        for event in events:
            if self.finished:
                return
            self._queue.append(event)
            self._ready.set()
            if isinstance(event, Closed):
                self.finished = True

    def drop_cancelled_audio(self, events: Iterable[Event]) -> float:
        """Drops queued audio of a cancelled utterance (``events.drop_cancelled_audio``); returns its seconds."""
        self._queue, dropped_s = drop_cancelled_audio(self._queue, events, _audio_of)
        return dropped_s

    async def __aiter__(self) -> AsyncIterator[Event]:
        while True:
            while not self._queue:
                self._ready.clear()
                await self._ready.wait()
            event = self._queue.popleft()
            if self._on_taken is not None:
                self._on_taken(event)
            yield event
            if isinstance(event, Closed):
                return


def _audio_of(event: Event) -> tuple[int, float] | None:
    return (event.seq, event.duration_s) if isinstance(event, Audio) else None
