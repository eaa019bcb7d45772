"""One open engine session as a turn sees it: the session, its event pump, and what was sent through it.

A link belongs to one engine session. During a turn it keeps the ``ReplyLedger`` (text sent, sentences
claimed and delivered), a mirror of the session's chunker (to time when each sentence was released, since a
remote chunker runs out of sight), the engine's sequence numbers mapped to the turn's sentence indices, and
the stale-audio filter that keeps a cancelled utterance silent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from app.failover import ReplyLedger
from engine.api import Engine, Session
from engine.chunker import IncrementalSentenceChunker
from engine.events import Audio, Cancelled, Event

log = logging.getLogger(__name__)


@dataclass
class SessionLink:
    engine: Engine
    label: str
    """The engine as the person knows it ("Local", "WebSocket")."""
    session: Session | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the session is open and any resumed text was sent (fragments wait for it)."""
    dead: bool = False
    closing: bool = False
    discarding: bool = False
    """Between our cancel() and the engine's Cancelled: every audio event is stale."""
    drop_through: int = -1
    """Audio of sequence numbers up to this belongs to a cancelled utterance."""
    stale_dropped: int = 0
    ledger: ReplyLedger = field(default_factory=ReplyLedger)
    mirror: IncrementalSentenceChunker = field(default_factory=IncrementalSentenceChunker)
    released_at: list[float] = field(default_factory=list)
    """When the mirror chunker released each sentence of the current turn, in order."""
    sent_at: list[float] = field(default_factory=list)
    """When the text completing each released sentence had been handed to the session."""
    started: int = 0
    """Sentences of the current turn the engine has started on this link."""
    seq_to_index: dict[int, int] = field(default_factory=dict)
    flush_sent: bool = False
    pump: asyncio.Task[None] | None = None

    @property
    def usable(self) -> bool:
        return self.session is not None and not self.dead

    def new_turn(self) -> None:
        self.ledger = ReplyLedger()
        self.mirror.reset()
        self.released_at.clear()
        self.sent_at.clear()
        self.started = 0
        self.seq_to_index.clear()
        self.flush_sent = False

    def record_fragment(self, fragment: str, now: float) -> int:
        """Notes a fragment about to be sent; returns how many sentences it releases."""
        self.ledger.add(fragment, now)
        released = len(self.mirror.feed(fragment))
        self.released_at.extend([now] * released)
        return released

    def record_flush(self, now: float) -> int:
        released = 1 if self.mirror.flush() else 0
        self.released_at.extend([now] * released)
        return released

    def record_sent(self, released: int, now: float) -> None:
        self.sent_at.extend([now] * released)

    def is_stale(self, event: Event) -> bool:
        """Audio of a cancelled utterance (the cancel may still be on its way to a remote engine)."""
        if isinstance(event, Audio) and (self.discarding or event.seq <= self.drop_through):
            self.stale_dropped += 1
            return True
        return False

    def on_cancelled(self, event: Cancelled) -> None:
        self.discarding = False
        self.drop_through = max(self.drop_through, event.last_seq)

    def start_pump(self, handle: Callable[[SessionLink, Event | BaseException], None]) -> None:
        """Reads the session's events for as long as it lives, handing each (or the failure) to ``handle``."""

        async def pump() -> None:
            assert self.session is not None
            try:
                async for event in self.session.events():
                    handle(self, event)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a transport bug must still reach failover, not vanish in a task
                log.debug("events of %s failed", self.label, exc_info=True)
                handle(self, exc)

        self.pump = asyncio.ensure_future(pump())

    async def shut(self) -> None:
        """Ends the session at once (switching engines, quitting)."""
        self.closing = True
        self.dead = True
        if self.session is not None:
            with contextlib.suppress(Exception):
                await self.session.aclose()
        if self.pump is not None:
            self.pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.pump
