"""The next queued announcement synthesized while the current one plays, so the gap between them is the pause the
punctuation asks for, not the model's time to first audio; one no longer wanted is discarded unheard."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from voicedesk.app.link import SessionLink
from voicedesk.engine.events import Audio, Event, SessionConfig

if TYPE_CHECKING:
    from voicedesk.app.conversation import Turn

MAX_AHEAD_BYTES = 24_000 * 2 * 60  # a minute of audio held at most; then the session is not read (backpressure)

Handler = Callable[[SessionLink, Event | BaseException], None]


@dataclass
class PreparedTurn:
    key: object  # what it says, as its maker knows it (an announcement's id and text)
    text: str
    voice: SessionConfig
    engine: object  # used only on the same engine
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


Upcoming = Callable[[], tuple[object, str, SessionConfig | None] | None]  # what is due next: (key, text, voice)


class TurnAhead:
    """The one turn the console (``app.console.runner``) has synthesized ahead."""

    def __init__(self, controller: Any) -> None:  # the SpeechController (it imports this module)
        self.controller = controller
        self._prepared: PreparedTurn | None = None
        self._preparing: asyncio.Task[None] | None = None

    @property
    def key(self) -> object | None:
        return None if self._prepared is None else self._prepared.key

    def after(self, turn: Turn, upcoming: Upcoming) -> None:
        self._preparing = asyncio.ensure_future(self._prepare(turn, upcoming))

    async def _prepare(self, turn: Turn, upcoming: Upcoming) -> None:
        await self.controller.wait_synthesized(turn)
        if not turn.active:  # stopped or cut: the queue may be about to change
            return
        due = upcoming()
        if due is None:
            return
        key, text, voice = due
        if self._prepared is not None and self._prepared.key == key:
            return
        await self.drop(keep_task=True)
        self._prepared = await self.controller.prepare(key, text, voice)

    async def take(self, key: object) -> PreparedTurn | None:
        """The prepared turn if it is ``key``'s; any other is discarded unheard."""
        if self._preparing is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._preparing)  # the last turn ended: at most a session still opening
            self._preparing = None
        prepared, self._prepared = self._prepared, None
        if prepared is not None and prepared.key != key:
            await prepared.discard()
            return None
        return prepared

    async def drop(self, keep_task: bool = False) -> None:
        if not keep_task and self._preparing is not None:
            self._preparing.cancel()
            self._preparing = None
        prepared, self._prepared = self._prepared, None
        if prepared is not None:
            await prepared.discard()
