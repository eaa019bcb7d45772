"""What a client may ask of the server (pure: time is passed in), one rule for the WebSocket and the HTTP routes.

- Limits: what a session and its connection accept, and the compute budget; messages never echo a huge value back.
- Budgets per second, as token buckets: every frame is read, in order, no faster than ``frames_per_s`` (a faster
  sender waits in TCP, never dropped); undecodable frames are answered until the junk budget runs dry, then the
  connection is closed, and with per-client caps that budget is the address's (``JunkByAddress``), so a junk flood
  that reconnects is refused before the handshake.
- Admission by expected wait behind a session's own backlog (``judge``): other sessions cannot starve a request (the
  scheduler runs first sentences first, splits and pre-empts long calls), so a client holding no backlog is never
  refused; a flood is the flooder's wait."""

from __future__ import annotations

import math
from dataclasses import dataclass

from voicedesk.engine import request_fields as fields
from voicedesk.engine.errors import ErrorCode
from voicedesk.engine.events import Error
from voicedesk.engine.protocol import DEFAULT_MAX_FRAME_BYTES


@dataclass(frozen=True, slots=True)
class SessionLimits:
    max_message_chars: int = 20_000
    """Largest text accepted in one ``send_text`` or whole request."""
    max_buffered_chars: int = 100_000
    """Text accepted but not yet synthesized (chunker buffer + queued sentences)."""
    max_audio_ahead_s: float = 5.0
    """Audio synthesized but not yet taken by the listener; above it the next sentence waits (backpressure)."""
    max_request_audio_s: float = 1_200.0
    """Compute budget of one whole request or message, in seconds of audio (text length ÷ speed, estimated)."""
    max_session_audio_s: float = 4 * 3_600.0
    """Compute budget of one session, in seconds of audio synthesized over its life."""


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    """Largest request frame decoded; bigger ones get ``frame_too_large``."""
    idle_timeout_s: float = 300.0
    """A client that neither sends text nor takes audio this long, owed nothing, is closed (``idle_timeout``)."""
    frames_per_s: float = 100.0
    """Sustained client frames read per second (a token bucket); a faster sender is read later, never dropped."""
    frame_burst: int = 400
    """Frames read at once above the sustained rate."""
    junk_per_s: float = 2.0
    """Frames that cannot be understood, per second, sustained; each is answered with its error."""
    junk_burst: int = 40
    """Junk frames answered at once; one more than the budget allows closes the connection (1008)."""


def check_text(
    text: str,
    speed: float,
    buffered_chars: int,
    limits: SessionLimits,
    request_id: str | None = None,
    whole: bool = False,
) -> Error | None:
    """Why ``text`` may not be accepted now (too long, buffer full, over the compute budget), or None."""
    try:
        fields.text_length(len(text), limits.max_message_chars, "'text'" if whole else "This text")
        if buffered_chars + len(text) > limits.max_buffered_chars:
            return Error(
                ErrorCode.BUFFER_FULL,
                f"This session already holds {buffered_chars:,} characters not yet spoken "
                f"(limit {limits.max_buffered_chars:,}); this text was not accepted. "
                "Wait for speech to catch up, or cancel.",
                request_id=request_id,
            )
        fields.audio_budget(text, speed, limits.max_request_audio_s, "request" if whole else "message")
    except fields.FieldError as exc:
        return Error(exc.code, exc.message, request_id=request_id)
    return None


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
    """Undecodable frames are answered while the budget lasts (``bucket``: the address's, or the connection's own)."""

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


REFUSALS_ANSWERED_AT_ONCE = 3
REFUSAL_HOLD_MAX_S = 1.0
REFUSAL_QUIET_S = 5.0
"""A refusal this long after the last one of the address starts a new streak (answered at once)."""


class JunkByAddress(BucketsByAddress):
    """Junk budgets of addresses: one closed for junk is refused new connections until its budget refills."""

    def __init__(self, junk_per_s: float, burst: int, max_addresses: int = 4096) -> None:
        super().__init__(junk_per_s, burst, max_addresses)
        self.refused = 0
        """Connections refused because their address's junk budget was empty."""
        self._streaks: dict[str, tuple[int, float]] = {}  # refusals in a row, the last's time; oldest first

    def budget(self, address: str, now: float) -> JunkBudget:
        """The junk budget of a new connection from ``address``: the address's own bucket."""
        return JunkBudget(self.per_s, int(self.burst), now, self.bucket(address, now))

    def hold_s(self, address: str, now: float) -> float:
        """Counts a refusal of ``address``: how long to hold its answer. Past the first few refusals in a row (each
        within ``REFUSAL_QUIET_S`` of the last), answers come later and later, up to ``REFUSAL_HOLD_MAX_S``: a client
        reconnecting in a tight loop is slowed to about one attempt a second instead of costing a thousand."""
        streak, last = self._streaks.pop(address, (0, now))
        streak = streak + 1 if now - last <= REFUSAL_QUIET_S else 1
        while len(self._streaks) >= self.max_addresses:  # forget the least recently refused: answers come sooner
            del self._streaks[next(iter(self._streaks))]
        self._streaks[address] = (streak, now)
        extra = streak - REFUSALS_ANSWERED_AT_ONCE
        return 0.0 if extra <= 0 else min(REFUSAL_HOLD_MAX_S, 0.05 * 2 ** min(extra - 1, 8))

    def refusal_s(self, address: str, now: float) -> float:
        """0 when ``address`` may connect now, else the seconds until its budget holds a frame (refused, and
        counted)."""
        bucket = self._buckets.get(address)
        wait = 0.0 if bucket is None else bucket.wait_s(now)
        if wait > 0:
            self.refused += 1
        return wait


FALLBACK_RETRY_AFTER_S = 5
"""The retry hint when the wait cannot be estimated yet: the AWS sample's ``Retry-After``."""


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
        """Seconds until the model could start the request's first sentence (None: speed not measured yet)."""
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
    """None to admit; otherwise the refusal. ``max_queue_depth`` refuses by count, as a backstop."""
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
