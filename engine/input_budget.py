"""What a connection may ask of the server per second, as token buckets (pure: time is passed in).

Two budgets, because they mean different things:

- **Read pacing** (``frames_per_s``, bursts of ``frame_burst``): every frame a client sends is read and processed,
  in order, but no faster than this. A faster sender is not dropped; it is read later. The adapter asks
  ``ReadPacing.delay`` before each read and waits that long: the frames wait in the kernel and TCP pushes back on
  the sender, who simply sends slower.
- **Junk** (``junk_per_s``, bursts of ``junk_burst``): frames that cannot be understood (undecodable, wrong shape,
  too large) are answered one by one until this runs dry; then the connection is closed. It refills at a few a
  second, so a client that keeps the server reading junk is closed however slowly it sends.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class TokenBucket:
    rate_per_s: float
    burst: float
    tokens: float = -1.0
    at: float = 0.0

    def __post_init__(self) -> None:
        if self.tokens < 0:
            self.tokens = float(self.burst)

    def _refill(self, now: float) -> None:
        if now > self.at:
            self.tokens = min(float(self.burst), self.tokens + (now - self.at) * self.rate_per_s)
        self.at = max(self.at, now)

    def take(self, now: float, cost: float = 1.0) -> bool:
        """Takes ``cost`` tokens if there are that many; False (and nothing taken) otherwise."""
        self._refill(now)
        if self.tokens >= cost:
            self.tokens -= cost
            return True
        return False

    def spend(self, now: float, cost: float = 1.0) -> None:
        """Takes ``cost`` tokens even when that leaves the bucket in debt (a frame already read must be paid)."""
        self._refill(now)
        self.tokens -= cost

    def wait_s(self, now: float, cost: float = 1.0) -> float:
        """Seconds until ``cost`` tokens are there (0 when they are now)."""
        self._refill(now)
        missing = cost - self.tokens
        return 0.0 if missing <= 0 else missing / self.rate_per_s


class ReadPacing:
    """How long to wait before reading a connection's next frame: never a drop, only a later read."""

    def __init__(self, frames_per_s: float, burst: int, now: float) -> None:
        self._bucket = TokenBucket(frames_per_s, max(1, burst), at=now)
        self.paced_s = 0.0
        """Total time the adapter was told to wait (the sender was slowed this long)."""
        self.paced_reads = 0

    def delay(self, now: float) -> float:
        wait = self._bucket.wait_s(now)
        if wait > 0:
            self.paced_s += wait
            self.paced_reads += 1
        return wait

    def frame_read(self, now: float) -> None:
        self._bucket.spend(now)


class JunkBudget:
    """Frames that could not be understood: answered while the budget lasts, the connection closed beyond it."""

    def __init__(self, junk_per_s: float, burst: int, now: float) -> None:
        self._bucket = TokenBucket(junk_per_s, max(1, burst), at=now)
        self.junk_per_s = junk_per_s
        self.burst = burst

    def allow(self, now: float) -> bool:
        return self._bucket.take(now)
