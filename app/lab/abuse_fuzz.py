"""The abuse suite's fuzzing: mutated frames (``app.lab.abuse_frames``) over several concurrent WebSocket sessions.

Each session sends its frames in batches; after each batch a barrier, ``cancel`` then ``flush`` with a request id of
its own. The server handles a connection's frames in order, so once the barrier's ``flushed`` is back every frame
before it has been dealt with: a frame counts as answered when it was a valid command, or when the protocol rejects
it and the error with its code (and ``request_id``) came back before the barrier. ``cancel`` stops whatever a valid
mutated request started, so the model is never busy for long. Each batch goes on a fresh connection from a fresh
loopback address: a batch is mostly junk, and an address sending more junk than its budget (a few frames a second,
bursts of 40, shared by the address's connections) is closed and then refused by design; the flood test is that
budget's subject. The per-address session cap (whose slot a closed connection frees a moment later) is not what is
measured either. Afterwards
every session must still speak a real request; one refused ``queue_saturated`` (the model busy on a slow machine)
asks again after its ``retry_after_s``, as a client should.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from dataclasses import dataclass, field

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from voicedesk.app.lab.abuse_frames import FrameMutator, MutatedFrame
from voicedesk.engine.errors import WIRE_CODES, ErrorCode
from voicedesk.engine.protocol import BIDI_PATH, DEFAULT_MAX_FRAME_BYTES

BATCH = 20
GUARD_S = 180.0
"""Upper bound on any single wait, so a broken server fails the run instead of hanging it."""


@dataclass(frozen=True, slots=True)
class Target:
    host: str
    port: int
    token: str | None = None

    @property
    def http_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://{self.host}:{self.port}{BIDI_PATH}"

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def connect(self, source: str | None = None, **kwargs: object) -> connect:
        """A WebSocket to the bidirectional route, from ``source`` (another loopback address: another client)."""
        extra: dict[str, object] = {"open_timeout": 60, "max_size": None}
        if source is not None:
            extra["local_addr"] = (source, 0)
        return connect(self.ws_url, additional_headers=self.headers, **(extra | kwargs))  # type: ignore[arg-type]


class TokenBucket:
    """The client's copy of the server's frame budget, kept a little under it."""

    def __init__(self, per_s: float, burst: float) -> None:
        self.per_s, self.burst = per_s, burst
        self._tokens, self._at = burst, time.monotonic()

    async def take(self, cost: float) -> None:
        while True:
            now = time.monotonic()
            self._tokens = min(self.burst, self._tokens + (now - self._at) * self.per_s)
            self._at = now
            if self._tokens >= cost:
                self._tokens -= cost
                return
            await asyncio.sleep((cost - self._tokens) / self.per_s)


@dataclass
class FuzzResult:
    sessions: int
    frames_sent: int = 0
    frames_answered: int = 0
    valid_frames: int = 0
    rejected_frames: int = 0
    error_codes: Counter[str] = field(default_factory=Counter)
    unknown_codes: Counter[str] = field(default_factory=Counter)
    sessions_usable_after: int = 0
    elapsed_s: float = 0.0
    problems: list[str] = field(default_factory=list)

    @property
    def unanswered(self) -> int:
        return self.frames_sent - self.frames_answered

    @property
    def internal(self) -> int:
        return self.error_codes[ErrorCode.INTERNAL]

    def to_json(self) -> dict[str, object]:
        return {
            "sessions": self.sessions,
            "frames_sent": self.frames_sent,
            "frames_answered": self.frames_answered,
            "unanswered": self.unanswered,
            "valid_frames": self.valid_frames,
            "rejected_frames": self.rejected_frames,
            "internal": self.internal,
            "error_codes": dict(self.error_codes),
            "unknown_codes": dict(self.unknown_codes),
            "sessions_usable_after": self.sessions_usable_after,
            "elapsed_s": round(self.elapsed_s, 1),
            "problems": self.problems,
        }


def matched(expected: list[tuple[str, str | None]], errors: list[tuple[str, str | None]]) -> int:
    """How many of the expected errors arrived, in order (answers to valid frames may come in between)."""
    found = 0
    for error in errors:
        if found < len(expected) and error == expected[found]:
            found += 1
    return found


async def fuzz(
    target: Target,
    frames: int,
    sessions: int = 4,
    seed: int = 11,
    frames_per_s: float = 100.0,
    frame_burst: int = 400,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
) -> FuzzResult:
    result = FuzzResult(sessions)
    started = time.monotonic()
    share = [frames // sessions + (1 if i < frames % sessions else 0) for i in range(sessions)]
    await asyncio.gather(
        *(
            _fuzz_session(
                target,
                FrameMutator(seed + i, max_frame_bytes),
                share[i],
                TokenBucket(0.9 * frames_per_s, 0.9 * frame_burst),
                result,
                f"s{i}",
                i,
            )
            for i in range(sessions)
        )
    )
    result.elapsed_s = time.monotonic() - started
    return result


def batch_address(session: int, batch_no: int) -> str:
    """A loopback address of its own for each batch of each session (127.0.0.0/8 is all loopback on Linux)."""
    return f"127.{30 + session}.{batch_no // 250}.{batch_no % 250 + 1}"


async def _fuzz_session(
    target: Target, mutator: FrameMutator, count: int, bucket: TokenBucket, result: FuzzResult, name: str, session: int
) -> None:
    batch_no = 0
    try:
        for batch_no, start in enumerate(range(0, count, BATCH)):
            batch = [mutator.next() for _ in range(min(BATCH, count - start))]
            async with target.connect(batch_address(session, batch_no)) as ws:
                await _send_batch(ws, batch, bucket, result, f"{name}-barrier-{batch_no}")
        async with target.connect(batch_address(session, batch_no + 1)) as ws:
            if await speaks(ws, f"{name}-after"):
                result.sessions_usable_after += 1
            else:
                result.problems.append(f"session {name} could not speak after the fuzzing")
    except (ConnectionClosed, OSError, TimeoutError) as exc:
        result.problems.append(f"session {name} ended: {type(exc).__name__}: {exc}")


async def _send_batch(
    ws: ClientConnection, batch: list[MutatedFrame], bucket: TokenBucket, result: FuzzResult, barrier: str
) -> None:
    for frame in batch:
        await bucket.take(1)
        await ws.send(frame.frame)
    await bucket.take(2)
    await ws.send(json.dumps({"type": "cancel"}))
    await ws.send(json.dumps({"type": "flush", "request_id": barrier}))
    errors: list[tuple[str, str | None]] = []
    async with asyncio.timeout(GUARD_S):
        while True:
            reply = await ws.recv()
            if isinstance(reply, bytes):
                continue
            message = json.loads(reply)
            if message.get("type") == "error":
                code = str(message.get("code"))
                result.error_codes[code] += 1
                if code not in WIRE_CODES:
                    result.unknown_codes[code] += 1
                errors.append((code, message.get("request_id")))
            elif message.get("type") == "flushed" and message.get("request_id") == barrier:
                break
    expected = [frame.expect for frame in batch if frame.expect is not None]
    result.frames_sent += len(batch)
    result.valid_frames += len(batch) - len(expected)
    result.rejected_frames += len(expected)
    result.frames_answered += len(batch) - len(expected) + matched(expected, errors)


SATURATED_RETRIES = 5


async def speaks(ws: ClientConnection, request_id: str, text: str = "Still here.") -> bool:
    """A real request on this session: audio and ``synthesis_complete``, no error (``queue_saturated`` is asked
    again after its ``retry_after_s``, up to ``SATURATED_RETRIES`` times)."""
    audio = 0
    async with asyncio.timeout(GUARD_S):
        for _ in range(SATURATED_RETRIES + 1):
            await ws.send(json.dumps({"text": text, "request_id": request_id}))
            while True:
                reply = await ws.recv()
                if isinstance(reply, bytes):
                    audio += len(reply)
                    continue
                message = json.loads(reply)
                if message.get("request_id") != request_id:
                    continue
                if message.get("type") == "error":
                    if message.get("code") != ErrorCode.QUEUE_SATURATED:
                        return False
                    await asyncio.sleep(min(10.0, float(message.get("retry_after_s") or 1.0)))
                    break
                if message.get("type") == "synthesis_complete":
                    return audio > 0
    return False
