"""Admission by expected wait behind a session's **own** backlog (pure): a flood of requests is the flooder's wait, not
other people's.

Other sessions cannot starve a request (the scheduler runs first sentences first, splits and pre-empts long calls), so a
client holding no backlog is never refused. ``judge`` refuses a request whose session's queued, in-flight and held text,
at the model's measured speed, would keep it waiting longer than the first-audio target beyond the audio its listener
still has, and says when to retry."""

from __future__ import annotations

import math
from dataclasses import dataclass

FALLBACK_RETRY_AFTER_S = 5
"""The retry hint when the wait cannot be estimated (the count backstop refused before any call was measured):
the AWS sample's ``Retry-After``."""


@dataclass(frozen=True, slots=True)
class QueueLoad:
    """What a new request of one session would wait behind."""

    s_per_phoneme: float | None
    """The model's measured forward cost (None: no call has finished yet)."""
    own_phonemes: int = 0
    """The session's own work ahead of the request: queued, in flight and held (0: none, or a new session)."""
    in_hand_s: float = 0.0
    """Audio its listener has and has not heard yet: the wait it covers."""
    queue_depth: int = 0
    """Every sentence waiting, of every session (the count backstop's measure)."""

    def expected_wait_s(self) -> float | None:
        """Seconds until the model could start the request's first sentence (None: something is ahead but no
        speed was measured yet; 0: nothing of its own is ahead)."""
        if self.own_phonemes <= 0:
            return 0.0
        return None if self.s_per_phoneme is None else self.own_phonemes * self.s_per_phoneme


@dataclass(frozen=True, slots=True)
class Saturated:
    """A refusal: why, and when to try again."""

    reason: str
    """'expected_wait' (the session's own backlog is over the target) or 'queue_depth' (the count backstop)."""
    retry_after_s: int
    """Whole seconds (HTTP's ``Retry-After`` takes an integer), at least 1."""
    expected_wait_s: float | None
    target_s: float | None
    queue_depth: int
    max_queue_depth: int | None


def judge(load: QueueLoad, target_s: float | None, max_queue_depth: int | None = None) -> Saturated | None:
    """None to admit a request; otherwise the refusal. ``target_s`` None turns the wait check off;
    ``max_queue_depth`` (None: off) refuses by count whatever the speed, as a backstop."""
    wait_s = load.expected_wait_s()
    if target_s is not None and wait_s is not None and wait_s > target_s + load.in_hand_s:
        retry = retry_hint_s(wait_s, target_s + load.in_hand_s)
        return Saturated("expected_wait", retry, wait_s, target_s, load.queue_depth, max_queue_depth)
    if max_queue_depth is not None and load.queue_depth > max_queue_depth:
        retry = FALLBACK_RETRY_AFTER_S if not wait_s else retry_hint_s(wait_s, 0.0)
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
            f"this session's own requests ahead of this one would keep it waiting about "
            f"{saturated.expected_wait_s:.1f} s for the model, over this server's target of {saturated.target_s:g} s"
        )
    else:
        why = f"{saturated.queue_depth} sentences are waiting for the model (limit {saturated.max_queue_depth})"
    return f"queue_saturated: {why}; retry in {saturated.retry_after_s} s, or send this to another instance."
