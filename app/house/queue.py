"""The house's announcement queue: priorities, TTL, merging, quiet hours, interruption (pure: no I/O, time passed in).

- ``urgent`` interrupts what is playing; the interrupted announcement resumes from its next sentence afterwards,
  or expires if its TTL passed meanwhile. ``normal`` queues; ``low`` waits behind everything else.
- Every announcement that is not started by ``received + ttl_s`` expires.
- An identical announcement (same text, voice) within ``merge_window_s`` of an earlier one is merged into it
  (the earlier one keeps its place; it is raised to the higher priority of the two).
- Quiet hours hold back everything below ``urgent`` (it waits, and may expire) and lower the volume.
- Every announcement ends with exactly one ``Report``: spoken, interrupted, expired, merged or failed (+ reason).

The runner (``app.house.runner``) asks ``next`` what to say, and tells the queue how each one ended.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from datetime import time as dtime
from enum import IntEnum, StrEnum


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
    """Cut (by a stop, or by an urgent one in its last sentence) and not resumed."""
    EXPIRED = "expired"
    MERGED = "merged"
    """An identical one was already queued, playing or just said: this one is accounted for by it."""
    FAILED = "failed"


class Source(StrEnum):
    WINDOW = "window"
    MQTT = "mqtt"
    HTTP = "http"


@dataclass(frozen=True, slots=True)
class Request:
    """What an input asks for (already validated by ``app.house.payload``)."""

    text: str
    priority: Priority = Priority.NORMAL
    voice: str = ""
    chime: str | None = None
    """A chime name, "none", or None: the priority's default chime."""
    ttl_s: float | None = None
    """None: the priority's default TTL."""
    id: str = ""
    """The sender's id (echoed in the outcome); empty: one is made up."""
    source: Source = Source.MQTT


@dataclass
class Item:
    id: str
    request: Request
    received: float
    expires: float
    text: str
    """What is still to be said: the request's text, or after an interruption what follows the cut sentence."""
    priority: Priority
    resumed: bool = False
    merged: list[str] = field(default_factory=list)
    """Ids of the identical announcements merged into this one."""

    @property
    def source(self) -> Source:
        return self.request.source

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
        out: dict[str, object] = {
            "id": self.id,
            "outcome": self.outcome.value,
            "source": self.source.value,
            "priority": self.priority.label,
            "text": self.text,
            "at": round(self.at, 3),
        }
        if self.reason:
            out["reason"] = self.reason
        if self.into:
            out["into"] = self.into
        return out


@dataclass(frozen=True, slots=True)
class QuietHours:
    """A daily window in local time, e.g. 22:00–07:00 (may span midnight); ``volume``: the gain inside it."""

    start: dtime
    end: dtime
    volume: float = 0.4

    @classmethod
    def parse(cls, spec: str, volume: float = 0.4) -> QuietHours:
        try:
            start, end = (dtime.fromisoformat(part.strip()) for part in spec.split("-"))
        except ValueError:
            raise ValueError(f"quiet hours {spec!r}: write them as HH:MM-HH:MM, e.g. 22:00-07:00") from None
        if start == end:
            raise ValueError(f"quiet hours {spec!r}: the start and the end are the same time")
        return cls(start, end, volume)

    def contains(self, at: dtime) -> bool:
        if self.start < self.end:
            return self.start <= at < self.end
        return at >= self.start or at < self.end


def local_time_of(now: float) -> dtime:
    return datetime.fromtimestamp(now).time()


@dataclass(frozen=True, slots=True)
class Policy:
    ttl_s: dict[Priority, float] = field(
        default_factory=lambda: {Priority.URGENT: 300.0, Priority.NORMAL: 900.0, Priority.LOW: 300.0}
    )
    merge_window_s: float = 30.0
    volume: dict[Priority, float] = field(
        default_factory=lambda: {Priority.URGENT: 1.0, Priority.NORMAL: 0.8, Priority.LOW: 0.6}
    )
    quiet_hours: QuietHours | None = None
    limit: int = 100


class QueueFull(Exception):
    pass


@dataclass(frozen=True, slots=True)
class Offered:
    item: Item | None
    """The queued announcement (None: merged, see ``report``)."""
    interrupt: bool = False
    """Cut what is playing now: this one is urgent and the current one is not."""
    report: Report | None = None


def merge_key(text: str, voice: str) -> tuple[str, str]:
    return " ".join(text.split()).casefold(), voice


class HouseQueue:
    def __init__(self, policy: Policy | None = None, local_time: Callable[[float], dtime] = local_time_of) -> None:
        self.policy = policy or Policy()
        self.local_time = local_time
        self.waiting: list[Item] = []
        self.current: Item | None = None
        self._recent: dict[tuple[str, str], tuple[Item, float]] = {}
        """Merge key → the announcement that said it, and when it started (for merging after it was said)."""
        self._ids = itertools.count(1)

    # ---- arriving ---------------------------------------------------------------------------------

    def offer(self, request: Request, now: float) -> Offered:
        """Queues ``request`` (or merges it into an identical one); raises ``QueueFull``."""
        key = merge_key(request.text, request.voice)
        same = self._identical(key, now)
        item_id = request.id or f"a{next(self._ids)}"
        if same is not None:
            same.merged.append(item_id)
            if request.priority > same.priority and same is not self.current:
                same.priority = request.priority
            report = Report(item_id, Outcome.MERGED, request.source, request.text, request.priority, now, into=same.id)
            return Offered(None, report=report)
        if len(self.waiting) >= self.policy.limit:
            raise QueueFull(f"the queue holds {self.policy.limit} announcements; wait for some to be said")
        ttl = request.ttl_s if request.ttl_s is not None else self.policy.ttl_s[request.priority]
        item = Item(item_id, request, now, now + ttl, request.text, request.priority)
        self.waiting.append(item)
        self._recent[key] = (item, now)
        current = self.current
        interrupt = current is not None and item.priority is Priority.URGENT and current.priority < Priority.URGENT
        return Offered(item, interrupt)

    def _identical(self, key: tuple[str, str], now: float) -> Item | None:
        for item in self.waiting:
            if merge_key(item.request.text, item.request.voice) == key:
                return item
        found = self._recent.get(key)
        if found is not None and now - found[1] <= self.policy.merge_window_s:
            return found[0]
        return None

    # ---- choosing ---------------------------------------------------------------------------------

    def quiet(self, now: float) -> bool:
        hours = self.policy.quiet_hours
        return hours is not None and hours.contains(self.local_time(now))

    def volume(self, priority: Priority, now: float) -> float:
        level = self.policy.volume[priority]
        return level * self.policy.quiet_hours.volume if self.quiet(now) else level  # type: ignore[union-attr]

    def expire(self, now: float) -> list[Report]:
        """Drops what waited past its TTL."""
        expired = [item for item in self.waiting if item.expires <= now]
        for item in expired:
            self.waiting.remove(item)
        why = "its TTL passed before it could be said"
        return [self._report(item, Outcome.EXPIRED, now, reason=why) for item in expired]

    def next(self, now: float) -> tuple[Item | None, list[Report]]:
        """The announcement to say now (it becomes ``current``), and the reports of what expired meanwhile.

        Highest priority first, in arrival order within one (a resumed one was first); in quiet hours only
        urgent ones start."""
        reports = self.expire(now)
        self.forget_old(now)
        if self.current is not None:
            return None, reports
        quiet = self.quiet(now)
        ready = [item for item in self.waiting if not quiet or item.priority is Priority.URGENT]
        if not ready:
            return None, reports
        best = max(ready, key=lambda item: item.priority)  # max keeps the first of equals (so does peek)
        self.waiting.remove(best)
        self.current = best
        return best, reports

    def begin(self, item: Item) -> None:
        """``item`` (waiting) starts now, chosen by someone else's order (the window's queue)."""
        self.waiting.remove(item)
        self.current = item

    def expire_item(self, item: Item, now: float) -> Report:
        """``item`` (waiting) came up after its TTL passed: it is not said."""
        self.waiting.remove(item)
        return self._report(item, Outcome.EXPIRED, now, reason="its TTL passed before it could be said")

    def peek(self, now: float) -> Item | None:
        """What ``next`` would choose after the current one (nothing changes): the one worth preparing ahead."""
        quiet = self.quiet(now)
        ready = [i for i in self.waiting if i.expires > now and (not quiet or i.priority is Priority.URGENT)]
        return max(ready, key=lambda item: item.priority) if ready else None

    def next_deadline(self, now: float) -> float | None:
        """When ``next`` may have something new to say without anything arriving: the earliest expiry (quiet
        hours are rechecked at least once a minute)."""
        times = [item.expires for item in self.waiting]
        if self.waiting and self.policy.quiet_hours is not None:
            times.append(now + 60.0)
        return min(times) if times else None

    # ---- ending -----------------------------------------------------------------------------------

    def spoken(self, item: Item, now: float, note: str = "") -> Report:
        """``note``: what the house should know although it was said (not in the voice it asked for, finished
        on the local engine); the outcome's reason."""
        self._done(item)
        return self._report(item, Outcome.SPOKEN, now, reason=note)

    def failed(self, item: Item, reason: str, now: float) -> Report:
        self._done(item)
        return self._report(item, Outcome.FAILED, now, reason=reason)

    def interrupted(self, item: Item, remaining: str, now: float, resume: bool) -> Report | None:
        """``item`` was cut. ``resume`` (cut by an urgent one) and text left after the cut sentence: it goes
        back first in line for its priority and says ``remaining`` later (None returned: no outcome yet);
        otherwise it ends as interrupted."""
        self._done(item)
        if resume and remaining.strip():
            self.waiting.insert(0, replace(item, text=remaining.strip(), resumed=True))
            return None
        reason = "stopped" if not resume else "cut in its last sentence"
        return self._report(item, Outcome.INTERRUPTED, now, reason=reason)

    def drop_all(self, now: float, reason: str) -> list[Report]:
        dropped, self.waiting = self.waiting, []
        return [self._report(item, Outcome.INTERRUPTED, now, reason=reason) for item in dropped]

    def _done(self, item: Item) -> None:
        if self.current is item:
            self.current = None

    def _report(self, item: Item, outcome: Outcome, now: float, reason: str = "") -> Report:
        return Report(item.id, outcome, item.source, item.request.text, item.priority, now, reason=reason)

    def forget_old(self, now: float) -> None:
        """Forgets said announcements older than the merge window (keeps memory flat over days)."""
        window = self.policy.merge_window_s
        self._recent = {
            key: (item, at)
            for key, (item, at) in self._recent.items()
            if now - at <= window or item in self.waiting or item is self.current
        }

    def __len__(self) -> int:
        return len(self.waiting)
