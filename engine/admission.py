"""Admission by expected wait: whether the model can start a new request's first sentence soon enough.

A fixed count of waiting sentences means very different waits on different machines (eight sentences are about a
quarter of a second on a GPU and many seconds on a CPU), so the server refuses by time instead: the wait a new
first sentence would have before the model starts it, from the forward cost the scheduler has measured (seconds
per phoneme, learned from the calls it ran) and the work ahead of it. The scheduler runs first sentences before any
other, in release order, so what is ahead of a new one is the rest of the call on the model and the first sentences
already queued; the requesting session's own work is left out (its next sentence waits behind its own earlier ones
by design; that is not load).

Pure: the caller passes the load (``QueueLoad``, a snapshot of the scheduler taken with the time passed in) and the
target; ``judge`` says whether to refuse and what to tell the client (``retry_after_s``: when the backlog ahead,
drained at one second per second, would be back under the target).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

FALLBACK_RETRY_AFTER_S = 5
"""The retry hint when the wait cannot be estimated (the count backstop refused before any call was measured):
the AWS sample's ``Retry-After``."""


@dataclass(frozen=True, slots=True)
class QueueLoad:
    """What is ahead of a new first sentence on one model, at one moment."""

    s_per_phoneme: float | None
    """The model's measured forward cost (None: no call has finished yet)."""
    running_phonemes: int = 0
    """The size of the call on the model (0: idle, or the requesting session's own call)."""
    running_elapsed_s: float = 0.0
    queued_first_phonemes: int = 0
    """First sentences already waiting (they run before a new one)."""
    queue_depth: int = 0
    """Every sentence waiting, of every session (the count the old limit used; kept for the backstop and /ping)."""

    def expected_wait_s(self) -> float | None:
        """Seconds until the model could start a new first sentence; None when nothing has been measured yet and
        something is ahead (no basis for a guess), 0 when nothing is ahead."""
        if self.running_phonemes <= 0 and self.queued_first_phonemes <= 0:
            return 0.0
        if self.s_per_phoneme is None:
            return None
        running_left_s = max(0.0, self.running_phonemes * self.s_per_phoneme - self.running_elapsed_s)
        return running_left_s + self.queued_first_phonemes * self.s_per_phoneme


@dataclass(frozen=True, slots=True)
class Saturated:
    """A refusal: why, and when to try again."""

    reason: str
    """'expected_wait' (the wait is over the target) or 'queue_depth' (the count backstop)."""
    retry_after_s: int
    """Whole seconds (HTTP's ``Retry-After`` takes an integer), at least 1."""
    expected_wait_s: float | None
    target_s: float | None
    queue_depth: int
    max_queue_depth: int | None


def judge(load: QueueLoad, target_s: float | None, max_queue_depth: int | None = None) -> Saturated | None:
    """None to admit a new request; otherwise the refusal. ``target_s`` None turns the wait check off;
    ``max_queue_depth`` (None: off) refuses by count whatever the speed, as a backstop."""
    wait_s = load.expected_wait_s()
    if target_s is not None and wait_s is not None and wait_s > target_s:
        retry = retry_hint_s(wait_s, target_s)
        return Saturated("expected_wait", retry, wait_s, target_s, load.queue_depth, max_queue_depth)
    if max_queue_depth is not None and load.queue_depth > max_queue_depth:
        retry = FALLBACK_RETRY_AFTER_S if wait_s is None else retry_hint_s(wait_s, 0.0)
        return Saturated("queue_depth", retry, wait_s, target_s, load.queue_depth, max_queue_depth)
    return None


def retry_hint_s(wait_s: float, target_s: float) -> int:
    """When the work ahead now (if nothing new came) would be back under the target: whole seconds, at least 1."""
    return max(1, math.ceil(wait_s - target_s))


def refusal_message(saturated: Saturated) -> str:
    """Starts with the code: the AWS sample's client classifies WebSocket error frames by that token."""
    if saturated.reason == "expected_wait":
        assert saturated.expected_wait_s is not None and saturated.target_s is not None
        why = (
            f"a new sentence would wait about {saturated.expected_wait_s:.1f} s for the model here, over this "
            f"server's target of {saturated.target_s:g} s"
        )
    else:
        why = f"{saturated.queue_depth} sentences are waiting for the model (limit {saturated.max_queue_depth})"
    return f"queue_saturated: {why}; retry in {saturated.retry_after_s} s, or send this to another instance."
