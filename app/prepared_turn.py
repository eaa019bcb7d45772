"""A turn synthesized ahead: the next queued announcement's text goes to its own engine session while the current
one still plays, and its events wait here until the controller starts it (``SpeechController.speak(prepared=...)``).

Then what is heard between two queued announcements is the pause the first one's punctuation asks for, not the
model's time for the second one's first sentence. A prepared turn that is not wanted any more (an urgent one came
first, it expired, the engine changed) is discarded: its session is closed and nothing of it is played.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from voicedesk.app.link import SessionLink
from voicedesk.engine.events import Audio, Event, SessionConfig

MAX_AHEAD_BYTES = 24_000 * 2 * 60
"""At most a minute of audio held before the turn starts; past it the session is not read (backpressure)."""

Handler = Callable[[SessionLink, Event | BaseException], None]


@dataclass
class PreparedTurn:
    key: object
    """What it says, as its maker knows it (e.g. an announcement's id and text): used to recognise it."""
    text: str
    voice: SessionConfig
    engine: object
    """The engine it was synthesized on: a prepared turn is only used on the same engine."""
    link: SessionLink
    turn_id: int
    events: list[Event | BaseException] = field(default_factory=list)
    held_bytes: int = 0
    target: Handler | None = None
    _room: Callable[[], Awaitable[None]] | None = None
    _attached: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def flush_id(self) -> str:
        return f"turn-{self.turn_id}"

    @property
    def usable(self) -> bool:
        return self.link.usable and self.target is None

    def deliver(self, link: SessionLink, event: Event | BaseException) -> None:
        """The link's pump hands every event here: held until attached, then passed straight on."""
        if self.target is not None:
            self.target(link, event)
            return
        self.events.append(event)
        if isinstance(event, Audio):
            self.held_bytes += len(event.pcm)

    async def room(self) -> None:
        if self.target is None and self.held_bytes >= MAX_AHEAD_BYTES:
            await self._attached.wait()
        if self._room is not None:
            await self._room()

    def attach(self, target: Handler, room: Callable[[], Awaitable[None]]) -> None:
        """From now on events go to ``target``; what was held is handed over first, in order."""
        self.target = target
        self._room = room
        held, self.events = self.events, []
        for event in held:
            target(self.link, event)
        self._attached.set()

    async def discard(self) -> None:
        if self.target is None:
            self.target = lambda _link, _event: None
            self._attached.set()
        with contextlib.suppress(Exception):
            await self.link.shut()
