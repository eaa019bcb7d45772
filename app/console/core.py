"""The console's core: what is said next, what cuts what, and how each announcement ended (pure: time passed in).

Every input offers a ``Request``: the person at the window (typed text, phrases, replays, questions, previews), the
house (MQTT, HTTP) and the voice input. House announcements follow the house rules (TTL, merging, quiet hours);
the person's own never expire, merge or wait for quiet hours to end. ``ConsoleRunner`` (``app.console.runner``)
asks ``next`` what to say and tells the core how it ended; every announcement ends with exactly one ``Report``.

Stops, in one place: an urgent announcement cuts a less urgent one, which resumes from its next sentence (from its
start when none of it was heard: never reported interrupted unheard); the house's stop ends what plays and the queue
carries on; the person's Stop also holds the queue until they resume or ask for something new; *Speak now* and the
person's own interruptions cut without resuming.

Voice input (issue 29) enters through three calls: ``listen`` (push-to-talk, or the person started speaking:
barge-in cuts what plays, never resumed, and nothing starts while listening), ``heard`` (their spoken turn arrived:
it is answered first) and ``not_heard`` (listening ended with nothing said).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from datetime import time as dtime
from enum import StrEnum

from voicedesk.app.console.announcement import Item, Outcome, Priority, Report, Request

NEVER = float("inf")


class Cut(StrEnum):
    """Why what plays is being cut (the outcome's reason when it is not resumed)."""

    URGENT = "cut by an urgent announcement"
    STOP = "stopped"
    PERSON = "the person chose another announcement"
    VOICE = "the person spoke"


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
    """After an announcement was said, an identical one within this long is merged into it."""
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
    """Cut what plays now (the runner stops it; ``cut`` tells the core how it ended)."""
    report: Report | None = None


def merge_key(text: str, voice: str) -> tuple[str, str]:
    return " ".join(text.split()).casefold(), voice


class ConsoleCore:
    def __init__(self, policy: Policy | None = None, local_time: Callable[[float], dtime] = local_time_of) -> None:
        self.policy = policy or Policy()
        self.local_time = local_time
        self.waiting: list[Item] = []
        self.current: Item | None = None
        self.paused = False
        """The person's Stop holds what waits until they resume or ask for something new."""
        self.listening = False
        self.cutting: Cut | None = None
        """Why the current announcement is being cut (None: it is not)."""
        self._said: dict[tuple[str, str], tuple[Item, float]] = {}
        """Merge key → the house announcement that said it, and when it ended."""
        self._ids = itertools.count(1)

    # ---- inputs -----------------------------------------------------------------------------------

    def offer(self, request: Request, now: float, first: bool = False) -> Offered:
        """Queues ``request`` by priority (``first``: first in line, cutting what plays: the person's choice), or
        merges it into an identical house announcement; raises ``QueueFull``."""
        item_id = request.id or f"a{next(self._ids)}"
        same = self._identical(request, now)
        if same is not None:
            same.merged.append(item_id)
            if request.priority > same.priority and same is not self.current:
                same.priority = request.priority
                self.waiting.remove(same)
                self._insert(same)
            report = Report(item_id, Outcome.MERGED, request.source, request.text, request.priority, now, into=same.id)
            return Offered(None, report=report)
        if len(self.waiting) >= self.policy.limit:
            raise QueueFull(f"the queue holds {self.policy.limit} announcements; wait for some to be said")
        ttl = request.ttl_s if request.ttl_s is not None else self.policy.ttl_s[request.priority]
        item = Item(item_id, request, now, now + ttl if request.source.house or request.ttl_s else NEVER,
                    request.text, request.priority)  # fmt: skip
        self.paused = False  # asking for something new carries on
        if first:
            self.waiting.insert(0, item)
            return Offered(item, self._cut(Cut.PERSON))
        self._insert(item)
        current = self.current
        urgent = current is not None and item.priority is Priority.URGENT and current.priority < Priority.URGENT
        return Offered(item, urgent and self._cut(Cut.URGENT))

    def stop(self, hold: bool = False) -> bool:
        """Stops what plays (it ends interrupted); ``hold``: the person's Stop, which also holds what waits.
        True: something is to be cut."""
        if hold and self.waiting:
            self.paused = True
        return self._cut(Cut.STOP, replace=True)

    def speak_now(self, item_id: str) -> bool:
        """The person's *Speak now*: that one next, cutting what plays without resuming it."""
        item = self.find(item_id)
        if item is None:
            return False
        self.waiting.remove(item)
        self.waiting.insert(0, item)
        item.chosen = True
        self.paused = False
        self._cut(Cut.PERSON, replace=True)
        return True

    def remove(self, item_id: str, now: float) -> Report | None:
        item = self.find(item_id)
        if item is None:
            return None
        self.waiting.remove(item)
        return self._report(item, Outcome.INTERRUPTED, now, "removed from the queue")

    def clear(self, now: float) -> list[Report]:
        cleared, self.waiting, self.paused = self.waiting, [], False
        return [self._report(item, Outcome.INTERRUPTED, now, "removed from the queue") for item in cleared]

    def resume(self) -> None:
        self.paused = False

    # ---- the voice input --------------------------------------------------------------------------

    def listen(self) -> bool:
        """The person is (about to be) speaking: cut what plays (not resumed), start nothing until they are done.
        True: something is to be cut."""
        self.listening = True
        return self._cut(Cut.VOICE, replace=True)

    def heard(self, request: Request, now: float) -> Offered:
        """Their spoken turn (a ``Source.VOICE`` question) is answered first."""
        self.listening = False
        return self.offer(request, now, first=True)

    def not_heard(self) -> None:
        self.listening = False

    # ---- choosing ---------------------------------------------------------------------------------

    def quiet(self, now: float) -> bool:
        hours = self.policy.quiet_hours
        return hours is not None and hours.contains(self.local_time(now))

    def volume(self, priority: Priority, now: float) -> float:
        hours = self.policy.quiet_hours
        level = self.policy.volume[priority]
        return level * hours.volume if hours is not None and self.quiet(now) else level

    def held(self, item: Item, now: float) -> bool:
        """Held back by quiet hours (the house's, below urgent, unless the person chose it)."""
        return item.source.house and item.priority < Priority.URGENT and not item.chosen and self.quiet(now)

    def expire(self, now: float) -> list[Report]:
        """Drops what waited past its TTL."""
        expired = [item for item in self.waiting if item.expires <= now]
        for item in expired:
            self.waiting.remove(item)
        return [self._report(item, Outcome.EXPIRED, now, "its TTL passed before it could be said") for item in expired]

    def next(self, now: float) -> tuple[Item | None, list[Report]]:
        """The announcement to say now (it becomes ``current``), and the reports of what expired meanwhile."""
        reports = self.expire(now)
        self._forget_said(now)
        if self.current is not None or self.paused or self.listening:
            return None, reports
        item = self.peek(now)
        if item is not None:
            self.waiting.remove(item)
            self.current, self.cutting = item, None
        return item, reports

    def peek(self, now: float) -> Item | None:
        """What ``next`` would choose (nothing changes): the one worth synthesizing ahead."""
        return next((i for i in self.waiting if i.expires > now and not self.held(i, now)), None)

    def next_deadline(self, now: float) -> float | None:
        """When ``next`` may have something new without anything arriving: the earliest expiry (quiet hours are
        rechecked at least once a minute)."""
        times = [item.expires for item in self.waiting if item.expires < NEVER]
        if self.waiting and self.policy.quiet_hours is not None:
            times.append(now + 60.0)
        return min(times) if times else None

    # ---- ending -----------------------------------------------------------------------------------

    def spoken(self, item: Item, now: float, note: str = "") -> Report:
        """``note``: what the house should know although it was said (another voice, the local engine finished)."""
        self._done(item, now)
        return self._report(item, Outcome.SPOKEN, now, note)

    def failed(self, item: Item, reason: str, now: float) -> Report:
        self._done(item, now)
        return self._report(item, Outcome.FAILED, now, reason)

    def cut(self, item: Item, remaining: str, now: float) -> Report | None:
        """``item`` was cut with ``remaining`` left after its cut sentence (all of it when none was heard). Cut for
        an urgent one with words left, it goes back first among its priority (None: no outcome yet)."""
        why, self.cutting = self.cutting or Cut.STOP, None
        self._done(item, now)
        if why is Cut.URGENT and item.request.resumable:
            if remaining.strip():
                item.text, item.resumed = remaining.strip(), True
                self._insert(item, first_of_priority=True)
                return None
            return self._report(item, Outcome.INTERRUPTED, now, "cut in its last sentence")
        return self._report(item, Outcome.INTERRUPTED, now, why.value)

    # ---- inside -----------------------------------------------------------------------------------

    def find(self, item_id: str) -> Item | None:
        return next((item for item in self.waiting if item.id == item_id), None)

    def _cut(self, why: Cut, replace: bool = False) -> bool:
        if self.current is None:
            return False
        if self.cutting is None or replace:
            self.cutting = why
        return True

    def _insert(self, item: Item, first_of_priority: bool = False) -> None:
        """Behind those of its priority and above (``first_of_priority``: before those of its own)."""
        at = next(
            (n for n, other in enumerate(self.waiting)
             if other.priority < item.priority or (first_of_priority and other.priority == item.priority)),
            len(self.waiting),
        )  # fmt: skip
        self.waiting.insert(at, item)

    def _identical(self, request: Request, now: float) -> Item | None:
        """A house announcement with the same words and voice: waiting, playing, or said within the merge window."""
        if not request.source.house:
            return None
        key = merge_key(request.text, request.voice)
        for item in [*self.waiting, *([self.current] if self.current is not None else [])]:
            if item.source.house and merge_key(item.request.text, item.request.voice) == key:
                return item
        said = self._said.get(key)
        return said[0] if said is not None and now - said[1] <= self.policy.merge_window_s else None

    def _done(self, item: Item, now: float) -> None:
        if self.current is item:
            self.current = None
        if item.source.house:
            self._said[merge_key(item.request.text, item.request.voice)] = (item, now)

    def _forget_said(self, now: float) -> None:
        """Keeps memory flat over weeks: what was said before the merge window is forgotten."""
        window = self.policy.merge_window_s
        self._said = {key: said for key, said in self._said.items() if now - said[1] <= window}

    def _report(self, item: Item, outcome: Outcome, now: float, reason: str = "") -> Report:
        return Report(item.id, outcome, item.source, item.request.text, item.priority, now, reason=reason)

    def __len__(self) -> int:
        return len(self.waiting)
