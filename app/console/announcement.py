"""What an announcement is, from asking to its end: the request an input makes, the queued item, its priority and
source, and the one report of how it ended (plain data, no behaviour beyond naming)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum

from voicedesk.app.conversation import TurnKind


class Priority(IntEnum):
    LOW = 0
    NORMAL = 1
    URGENT = 2

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, value: str) -> Priority:
        try:
            return cls[value.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown priority {value!r}: use urgent, normal or low") from None


class Outcome(StrEnum):
    SPOKEN = "spoken"
    INTERRUPTED = "interrupted"
    """Stopped, removed, or cut in its last sentence; not resumed."""
    EXPIRED = "expired"
    MERGED = "merged"
    """An identical one was waiting, playing or just said: it accounts for this one."""
    FAILED = "failed"


class Source(StrEnum):
    WINDOW = "window"
    MQTT = "mqtt"
    HTTP = "http"
    VOICE = "voice"

    @property
    def house(self) -> bool:
        """The house's rules apply (TTL, merging, quiet hours, chime, loudness, volume, outcomes on MQTT)."""
        return self in (Source.MQTT, Source.HTTP)


Fragments = Callable[[], AsyncIterator[str] | Awaitable[AsyncIterator[str]]]
"""Makes the text stream when the announcement starts (an agent's reply is asked for then, not before)."""


@dataclass(frozen=True, slots=True)
class Request:
    """What an input asks for (house payloads are validated by ``app.house.payload``)."""

    text: str
    priority: Priority = Priority.NORMAL
    voice: str = ""
    chime: str | None = None
    """A chime name, "none", or None: the priority's default chime (house announcements only)."""
    ttl_s: float | None = None
    """None: the priority's default for the house, never for the person's own."""
    id: str = ""
    """The sender's id (echoed in the outcome); empty: one is made up."""
    source: Source = Source.MQTT
    kind: TurnKind = TurnKind.SPEAK
    output: str = ""
    """An output device for this one only (a saved phrase's); empty: the current output."""
    origin: str = ""
    """What the queue's list shows ("Typed", "Phrase · Dinner"); empty: the source and priority."""
    fragments: Fragments | None = None
    """None: the text, whole."""

    @property
    def resumable(self) -> bool:
        """Plain text can go on from its next sentence; an agent's reply (its stream was cut) cannot."""
        return self.kind is TurnKind.SPEAK and self.fragments is None


@dataclass(eq=False)
class Item:
    id: str
    request: Request
    received: float
    expires: float
    text: str
    """What is still to be said: the request's text, or after an urgent cut what follows the cut sentence."""
    priority: Priority
    resumed: bool = False
    chosen: bool = False
    """The person asked for it now (*Speak now*): quiet hours do not hold it."""
    merged: list[str] = field(default_factory=list)

    @property
    def source(self) -> Source:
        return self.request.source

    @property
    def label(self) -> str:
        first = " ".join(self.text.split())
        return first if len(first) <= 80 else first[:79] + "…"

    @property
    def origin(self) -> str:
        origin = self.request.origin or f"{self.source.value.upper()} · {self.priority.label}"
        return f"{origin} · resumed" if self.resumed else origin

    def describe(self) -> dict[str, object]:
        return {"id": self.id, "text": self.text, "source": self.source.value, "priority": self.priority.label}


@dataclass(frozen=True, slots=True)
class Report:
    id: str
    outcome: Outcome
    source: Source
    text: str
    priority: Priority
    at: float
    reason: str = ""
    into: str = ""
    """For MERGED: the id of the announcement that stands for this one."""

    def as_dict(self) -> dict[str, object]:
        out = {"id": self.id, "outcome": self.outcome.value, "source": self.source.value}
        out |= {"priority": self.priority.label, "text": self.text, "at": round(self.at, 3)}
        return out | {key: value for key, value in (("reason", self.reason), ("into", self.into)) if value}
