"""Keeping a reply whole when its engine dies: which text was sent, which was spoken, what to resend (pure).

A sentence is delivered once its audio reached the player (one binary frame holds a sentence's audio); all after the
last delivered one is resent. Sentences are matched ignoring whitespace and case; a mismatch keeps the cursor, so
failing over repeats a little and never drops text."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from voicedesk.engine.errors import LocalErrorCode
from voicedesk.engine.events import Closed, Error, Event


@dataclass
class ReplyLedger:
    text: str = ""
    """Everything sent to the session during this turn, in order."""
    _ends: list[int] = field(default_factory=list)
    _times: list[float] = field(default_factory=list)
    _spans: dict[int, tuple[int, int]] = field(default_factory=dict)
    started_cursor: int = 0
    """End of the last sentence the engine started (text before it is claimed by sentences)."""
    delivered_cursor: int = 0
    """End of the last sentence whose audio reached the player."""

    def add(self, fragment: str, t: float) -> tuple[int, int]:
        """Records a fragment sent at time ``t``; returns its character span."""
        start = len(self.text)
        self.text += fragment
        self._ends.append(len(self.text))
        self._times.append(t)
        return start, len(self.text)

    def sentence_started(self, seq: int, sentence: str) -> tuple[int, int] | None:
        """Claims ``sentence`` from the unclaimed text; returns its span, or None if it does not match."""
        span = match_ignoring_space(self.text, self.started_cursor, sentence)
        if span is None:
            return None
        self._spans[seq] = span
        self.started_cursor = span[1]
        return span

    def sentence_delivered(self, seq: int) -> None:
        span = self._spans.get(seq)
        if span is not None:
            self.delivered_cursor = max(self.delivered_cursor, span[1])

    def span_of(self, seq: int) -> tuple[int, int] | None:
        return self._spans.get(seq)

    @property
    def unclaimed(self) -> str:
        """Text sent that no sentence has claimed yet (still in the chunker, or queued)."""
        return self.text[self.started_cursor :]

    @property
    def undelivered(self) -> str:
        """Text not yet confirmed spoken: what a replacement engine must say."""
        return self.text[self.delivered_cursor :]

    def time_of_char(self, offset: int) -> float | None:
        """When the fragment holding character ``offset`` was sent."""
        index = bisect.bisect_right(self._ends, offset)
        return self._times[index] if index < len(self._times) else None


def match_ignoring_space(text: str, start: int, needle: str) -> tuple[int, int] | None:
    """The span of ``text`` from ``start`` that equals ``needle`` up to whitespace and case, or None."""
    i = start
    n = len(text)
    while i < n and text[i].isspace():
        i += 1
    begin = i
    matched_any = False
    for char in needle:
        if char.isspace():
            continue
        while i < n and text[i].isspace():
            i += 1
        if i >= n or text[i].casefold() != char.casefold():
            return None
        i += 1
        matched_any = True
    return (begin, i) if matched_any else None


@dataclass(frozen=True, slots=True)
class FailoverPlan:
    resume_text: str
    """What the replacement engine says first: the undelivered rest of the reply."""
    reason: str


def engine_failure(event: Event, closing: bool) -> str | None:
    """Why this event means the session is gone (a fatal error, or a close nobody asked for), else None.

    The reason is said for a person (``app.messages`` words it): the engine's message, never its raw code."""
    match event:
        case Error(message=message, fatal=True):
            return message
        case Error(code=LocalErrorCode.CONNECTION, message=message):
            return message
        case Closed(reason=reason) if not closing:
            return f"the connection closed: {reason}"
    return None


def plan_failover(ledger: ReplyLedger, reason: str) -> FailoverPlan:
    return FailoverPlan(ledger.undelivered, reason)
