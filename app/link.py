"""One engine session as a turn sees it: its event pump, what was sent (the ledger, and the turn's ``Leg``, which
mirrors a remote chunker to time each sentence's release), and the filter that keeps a cancelled utterance silent."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from voicedesk.app.failover import ReplyLedger
from voicedesk.engine.api import Engine, Session
from voicedesk.engine.events import Audio, Cancelled, Event, SentenceFinished, SentenceStarted
from voicedesk.engine.measure.recorder import Leg

log = logging.getLogger(__name__)


@dataclass
class SessionLink:
    engine: Engine
    label: str  # "Local", "WebSocket"
    session: Session | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)  # open, resumed text sent: fragments may go
    dead: bool = False
    closing: bool = False
    discarding: bool = False  # between our cancel() and the engine's Cancelled: all audio is stale
    drop_through: int = -1  # audio of sequence numbers up to this belongs to a cancelled utterance
    stale_dropped: int = 0
    ledger: ReplyLedger = field(default_factory=ReplyLedger)
    leg: Leg = field(default_factory=Leg)
    flush_sent: bool = False
    pump: asyncio.Task[None] | None = None

    @property
    def usable(self) -> bool:
        return self.session is not None and not self.dead

    def new_turn(self) -> None:
        self.ledger = ReplyLedger()
        self.leg = Leg(self.label)
        self.flush_sent = False

    def record_fragment(self, fragment: str, now: float) -> int:
        """Notes a fragment about to be sent; returns how many sentences it releases."""
        self.ledger.add(fragment, now)
        return self.leg.fragment(fragment, now)

    def record_flush(self, now: float) -> int:
        return self.leg.flush(now)

    def record_sent(self, released: int, now: float) -> None:
        self.leg.sent(released, now)

    def is_stale(self, event: Event) -> bool:
        """From a cancelled utterance (its cancel may still be on the way), not to be taken for the next turn's."""
        if isinstance(event, Audio | SentenceStarted | SentenceFinished) and (
            self.discarding or event.seq <= self.drop_through
        ):
            self.stale_dropped += 1
            return True
        return False

    def on_cancelled(self, event: Cancelled) -> None:
        self.discarding = False
        self.drop_through = max(self.drop_through, event.last_seq)

    def start_pump(
        self,
        handle: Callable[[SessionLink, Event | BaseException], None],
        room: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """``room`` is awaited after each audio event: a listener behind stops the engine synthesizing ahead."""

        async def pump() -> None:
            assert self.session is not None
            try:
                async for event in self.session.events():
                    handle(self, event)
                    if room is not None and isinstance(event, Audio):
                        await room()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a transport bug must still reach failover, not vanish in a task
                log.debug("events of %s failed", self.label, exc_info=True)
                handle(self, exc)

        self.pump = asyncio.ensure_future(pump())

    async def shut(self) -> None:
        self.closing = True
        self.dead = True
        if self.session is not None:
            with contextlib.suppress(Exception):
                await self.session.aclose()
        if self.pump is not None:
            self.pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.pump
