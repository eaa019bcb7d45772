"""What a connection may ask of the server per second, as token buckets (pure: time is passed in).

Read pacing: every frame is read, in order, but no faster than ``frames_per_s``; a faster sender waits in TCP, never
dropped. Junk: undecodable frames are answered until ``junk_per_s`` runs dry, then the connection is closed. With
per-client caps the junk budget belongs to the address (``JunkByAddress``), so a junk flood that reconnects is refused
before the handshake."""

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
        self.paced_reads = 0

    def delay(self, now: float) -> float:
        wait = self._bucket.wait_s(now)
        if wait > 0:
            self.paced_reads += 1
        return wait

    def frame_read(self, now: float, cost: float = 1.0) -> None:
        """A frame was read; ``cost``: how many frames' worth of work it is (a lexicon costs more)."""
        self._bucket.spend(now, cost)


class JunkBudget:
    """Frames that could not be understood: answered while the budget lasts, the connection closed beyond it.
    ``bucket``: the address's, shared by its connections (``JunkByAddress``); otherwise the connection's own."""

    def __init__(self, junk_per_s: float, burst: int, now: float, bucket: TokenBucket | None = None) -> None:
        self._bucket = bucket if bucket is not None else TokenBucket(junk_per_s, max(1, burst), at=now)
        self.junk_per_s = junk_per_s
        self.burst = burst

    def allow(self, now: float) -> bool:
        return self._bucket.take(now)


class BucketsByAddress:
    """Token buckets per client address, shared by its connections; full buckets are forgotten and at most
    ``max_addresses`` kept, so many addresses cannot grow the table without bound."""

    def __init__(self, per_s: float, burst: float, max_addresses: int = 4096) -> None:
        self.per_s = per_s
        self.burst = max(1, burst)
        self.max_addresses = max_addresses
        self._buckets: dict[str, TokenBucket] = {}

    def bucket(self, address: str, now: float) -> TokenBucket:
        bucket = self._buckets.get(address)
        if bucket is None:
            self._forget(now)
            bucket = self._buckets[address] = TokenBucket(self.per_s, self.burst, at=now)
        return bucket

    def spend_s(self, address: str, now: float, cost: float) -> float:
        """Spends ``cost`` from the address's bucket; the seconds to wait until it is out of debt (0: none)."""
        bucket = self.bucket(address, now)
        bucket.spend(now, cost)
        return bucket.wait_s(now, 0.0)

    @property
    def addresses(self) -> int:
        """Addresses whose bucket is kept (at most ``max_addresses``; refilled ones are forgotten once it is full)."""
        return len(self._buckets)

    def _forget(self, now: float) -> None:
        if len(self._buckets) < self.max_addresses:
            return
        for address, bucket in list(self._buckets.items()):
            if bucket.wait_s(now, self.burst) == 0:
                del self._buckets[address]
        while len(self._buckets) >= self.max_addresses:
            fullest = max(self._buckets, key=lambda a: self._buckets[a].tokens)
            del self._buckets[fullest]


class JunkByAddress(BucketsByAddress):
    """Junk budgets of client addresses. An address is refused new connections while its budget holds less than
    one frame: it was just closed for junk, and what it would send next is more junk."""

    def __init__(self, junk_per_s: float, burst: int, max_addresses: int = 4096) -> None:
        super().__init__(junk_per_s, burst, max_addresses)
        self.refused = 0
        """Connections refused because their address's junk budget was empty."""

    def budget(self, address: str, now: float) -> JunkBudget:
        """The junk budget of a new connection from ``address``: the address's own bucket."""
        return JunkBudget(self.per_s, int(self.burst), now, self.bucket(address, now))

    def refusal_s(self, address: str, now: float) -> float:
        """0 when ``address`` may open a connection now; otherwise the seconds until its budget holds a frame
        again (the connection is refused, and counted)."""
        bucket = self._buckets.get(address)
        wait = 0.0 if bucket is None else bucket.wait_s(now)
        if wait > 0:
            self.refused += 1
        return wait
