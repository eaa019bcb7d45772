"""The announcement queue: new messages wait their turn; interrupting is an explicit choice (pure, no I/O).

Everything the console says goes through here: typed text, agent questions, saved phrases, replays, voice
previews. ``AnnouncementQueue`` only holds the order and the paused flag; ``app.announcer`` runs it against
the speech controller. A stop pauses the queue (what waits is kept, and says so) until the person resumes it
or asks for something new.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from voicedesk.app.conversation import TurnKind

MAX_QUEUED = 100


@dataclass
class Announcement:
    kind: TurnKind
    text: str
    """What is said (SPEAK) or asked (AGENT); shown in the queue."""
    voice: str = ""
    """A voice spec for this announcement only; empty: the voice chosen in the window."""
    output: str = ""
    """An output device for this announcement only; empty: the current output."""
    origin: str = ""
    """Where it came from, for the queue's list: "Phrase · Dinner", "Replay"…"""
    fragments: Callable[[], AsyncIterator[str]] | None = None
    """Makes the text stream when the announcement starts (an agent's reply is asked for then, not before,
    so it sees the conversation as it is at that moment); None: the text, whole."""
    id: int = field(default_factory=itertools.count(1).__next__)

    @property
    def label(self) -> str:
        first = " ".join(self.text.split())
        return first if len(first) <= 80 else first[:79] + "…"


class QueueFull(Exception):
    pass


class AnnouncementQueue:
    def __init__(self, limit: int = MAX_QUEUED) -> None:
        self.items: list[Announcement] = []
        self.paused = False
        self.limit = limit

    def add(self, item: Announcement, first: bool = False, at: int | None = None) -> None:
        """Last in line; ``first``: first; ``at``: at that place (0 is first)."""
        if len(self.items) >= self.limit:
            raise QueueFull(f"The queue holds {self.limit} announcements; wait for some to be said, or clear it.")
        if at is None:
            at = 0 if first else len(self.items)
        self.items.insert(at, item)

    def take(self) -> Announcement | None:
        """The next announcement to say, unless paused or empty."""
        if self.paused or not self.items:
            return None
        return self.items.pop(0)

    def remove(self, item_id: int) -> Announcement | None:
        for number, item in enumerate(self.items):
            if item.id == item_id:
                return self.items.pop(number)
        return None

    def move_to_front(self, item_id: int) -> bool:
        item = self.remove(item_id)
        if item is None:
            return False
        self.items.insert(0, item)
        return True

    def clear(self) -> int:
        count = len(self.items)
        self.items.clear()
        self.paused = False
        return count

    def __len__(self) -> int:
        return len(self.items)
