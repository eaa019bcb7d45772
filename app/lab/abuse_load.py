"""The abuse suite's attacks on shared capacity: one client flooding small junk frames beside a healthy one,
requests that would cost hours of compute, more sessions than one client may hold, and junk HTTP bodies.

The flooder runs in a process of its own (``multiprocessing``, spawn): in the measuring process it would take the
measuring client's CPU and GIL, and the healthy client's time to first audio would then say more about the
benchmark than about the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import multiprocessing
import socket
import statistics
import time
from collections import Counter
from dataclasses import asdict, dataclass, field

import httpx
from websockets.exceptions import ConnectionClosed, InvalidStatus

from voicedesk.app.lab.abuse_frames import FrameMutator
from voicedesk.app.lab.abuse_fuzz import GUARD_S, Target
from voicedesk.engine.errors import ErrorCode

FLOOD_FRAME = b"\x00junk"
COMPUTE_TEXT = "word " * 3_900
"""19,500 characters: under the 20,000-character message limit, but at speed 0.25 about 87 minutes of audio."""


# ---- the flooding client ----------------------------------------------------------------------------


@dataclass
class FloodStats:
    frames_sent: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    connections: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    """Connections refused before the WebSocket handshake, by HTTP status and code (an address whose junk budget
    is empty gets ``429 rate_limited``)."""
    close_codes: Counter[int] = field(default_factory=Counter)
    elapsed_s: float = 0.0
    cpu_s: float = 0.0
    """CPU time the flooding process used (on a shared machine, taken from everyone else)."""

    def to_json(self) -> dict[str, object]:
        body = asdict(self)
        body["cpu_s"] = round(self.cpu_s, 1)
        body["close_codes"] = {str(k): v for k, v in self.close_codes.items()}
        body["errors"] = dict(self.errors)
        body["refused"] = dict(self.refused)
        body["elapsed_s"] = round(self.elapsed_s, 1)
        return body


async def flood(  # type: ignore[no-untyped-def]
    target: Target,
    source: str | None,
    should_stop,
    started=None,
    small_send_buffer: bool = True,
    stats: FloodStats | None = None,
) -> FloodStats:
    """Sends ``FLOOD_FRAME`` as fast as the socket takes it, reconnecting whenever the server closes (a
    persistent attacker), until ``should_stop()``. ``stats``, if given, is filled as it goes. A refused connection
    is tried again after 0.1 s (its ``retry_after_s`` ignored), as after a connection error."""
    stats = stats if stats is not None else FloodStats()
    began = time.monotonic()
    while not should_stop():
        try:
            async with target.connect(source) as ws:
                stats.connections += 1
                sock = ws.transport.get_extra_info("socket")
                if sock is not None and small_send_buffer:
                    # Block on the server's backpressure at once rather than after megabytes of kernel buffer: on
                    # a shared machine the flooder's own CPU would otherwise weigh on what is measured.
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
                if started is not None:
                    started.set()
                reader = asyncio.create_task(_count_replies(ws, stats))
                try:
                    while not should_stop() and not reader.done():
                        await ws.send(FLOOD_FRAME)
                        stats.frames_sent += 1
                        if stats.frames_sent % 64 == 0:
                            await asyncio.sleep(0)
                finally:
                    reader.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await reader
                if ws.close_code is not None:
                    stats.close_codes[ws.close_code] += 1
        except ConnectionClosed as exc:
            stats.close_codes[exc.rcvd.code if exc.rcvd else 1006] += 1
        except InvalidStatus as exc:
            stats.refused[f"{exc.response.status_code} {_code_of(exc.response.body)}"] += 1
            await asyncio.sleep(0.1)
        except OSError:
            await asyncio.sleep(0.1)
    stats.elapsed_s = time.monotonic() - began
    stats.cpu_s = time.process_time()
    return stats


def _code_of(body: bytes | None) -> str | None:
    try:
        return json.loads(body or b"").get("code")
    except (ValueError, AttributeError):
        return None


async def _count_replies(ws, stats: FloodStats) -> None:  # type: ignore[no-untyped-def]
    with contextlib.suppress(ConnectionClosed):
        async for reply in ws:
            if isinstance(reply, str):
                message = json.loads(reply)
                if message.get("type") == "error":
                    stats.errors[str(message.get("code"))] += 1


def _flood_process(target: Target, source: str | None, started, stop, results) -> None:  # type: ignore[no-untyped-def]
    stats = asyncio.run(flood(target, source, stop.is_set, started))
    results.put(stats.to_json())


# ---- the healthy client -----------------------------------------------------------------------------


async def times_to_first_audio(target: Target, rounds: int, text: str, source: str | None = None) -> list[float]:
    """Seconds from sending each request to its first audio frame, one request after another on one session."""
    times: list[float] = []
    async with target.connect(source) as ws:
        for i in range(rounds):
            request_id = f"healthy-{i}"
            sent = time.monotonic()
            await ws.send(json.dumps({"text": text, "request_id": request_id}))
            first: float | None = None
            async with asyncio.timeout(GUARD_S):
                while True:
                    reply = await ws.recv()
                    if isinstance(reply, bytes):
                        first = first if first is not None else time.monotonic() - sent
                        continue
                    message = json.loads(reply)
                    if message.get("request_id") != request_id:
                        continue
                    if message.get("type") == "error":
                        raise RuntimeError(f"the healthy request failed: {message.get('code')}")
                    if message.get("type") == "synthesis_complete":
                        break
            if first is None:
                raise RuntimeError("the healthy request got no audio")
            times.append(first)
    return times


@dataclass
class FloodResult:
    alone_s: list[float]
    during_s: list[float]
    flood: dict[str, object]
    server_cpu: dict[str, dict[str, float]] | None = None
    """The server's CPU seconds per second (event loop, model thread), alone and during the flood, when measured."""

    @property
    def ratio(self) -> float:
        return statistics.median(self.during_s) / statistics.median(self.alone_s)

    def to_json(self) -> dict[str, object]:
        return {
            "healthy_ttfa_alone_s": [round(t, 3) for t in self.alone_s],
            "healthy_ttfa_during_s": [round(t, 3) for t in self.during_s],
            "median_ratio": round(self.ratio, 2),
            "flood": self.flood,
            **({"server_cpu": self.server_cpu} if self.server_cpu is not None else {}),
        }


async def flood_beside_healthy(
    target: Target,
    rounds: int,
    text: str,
    flood_source: str | None = "127.0.0.3",
    settle_s: float = 1.0,
    min_flood_s: float = 0.0,
    cpu=None,  # type: ignore[no-untyped-def]
) -> FloodResult:
    """The healthy client's time to first audio alone, then while another client floods junk frames: ``rounds``
    requests, and more until the flood has lasted ``min_flood_s`` (long enough for the server to close the
    flooder and see it come back). ``cpu``: something whose ``read()`` gives the server's CPU use since the last
    read (``abuse_side_by_side.CpuMeter``), read alone and during the flood."""
    if cpu is not None:
        cpu.read()
    alone = await times_to_first_audio(target, rounds, text)
    cpu_alone = cpu.read() if cpu is not None else None
    context = multiprocessing.get_context("spawn")
    started, stop, results = context.Event(), context.Event(), context.Queue()
    flooder = context.Process(
        target=_flood_process, args=(target, flood_source, started, stop, results), name="flooder", daemon=True
    )
    flooder.start()
    try:
        if not await asyncio.to_thread(started.wait, 120):
            raise RuntimeError("the flooding client did not connect")
        await asyncio.sleep(settle_s)
        if cpu is not None:
            cpu.read()
        flood_began = time.monotonic()
        during = await times_to_first_audio(target, rounds, text)
        while time.monotonic() - flood_began < min_flood_s:
            during += await times_to_first_audio(target, 1, text)
        cpu_during = cpu.read() if cpu is not None else None
    finally:
        stop.set()
    stats = await asyncio.to_thread(results.get, True, 120)
    await asyncio.to_thread(flooder.join, 30)
    server_cpu = {"alone": cpu_alone, "during": cpu_during} if cpu_alone and cpu_during else None
    return FloodResult(alone, during, stats, server_cpu)


# ---- compute, sessions, HTTP junk ---------------------------------------------------------------------


@dataclass
class Refusal:
    what: str
    status: int | None
    code: str | None
    elapsed_s: float

    def to_json(self) -> dict[str, object]:
        return {"what": self.what, "status": self.status, "code": self.code, "elapsed_s": round(self.elapsed_s, 3)}


async def compute_requests(target: Target, text: str = COMPUTE_TEXT, speed: float = 0.25) -> list[Refusal]:
    """Requests that would hold the model for a long time, on every route: each must be refused before synthesis."""
    refusals: list[Refusal] = []
    async with target.connect() as ws:
        for what, frames in (
            ("WebSocket whole request", [{"text": text, "speed": speed, "request_id": "big"}]),
            ("WebSocket streamed text", [{"type": "config", "speed": speed}, {"type": "text", "text": text}]),
        ):
            began = time.monotonic()
            for frame in frames:
                await ws.send(json.dumps(frame))
            async with asyncio.timeout(GUARD_S):
                while True:
                    reply = await ws.recv()
                    if isinstance(reply, str) and (message := json.loads(reply)).get("type") == "error":
                        refusals.append(Refusal(what, None, message.get("code"), time.monotonic() - began))
                        break
    async with httpx.AsyncClient(base_url=target.http_url, headers=target.headers, timeout=GUARD_S) as client:
        for what, path, body in (
            ("POST /invocations", "/invocations", {"text": text, "speed": speed}),
            ("POST /v1/audio/speech", "/v1/audio/speech", {"model": "kokoro", "input": text, "speed": speed}),
        ):
            began = time.monotonic()
            response = await client.post(path, json=body)
            payload = response.json()
            code = payload.get("code") or (payload.get("error") or {}).get("code")
            refusals.append(Refusal(what, response.status_code, code, time.monotonic() - began))
    return refusals


async def session_cap(target: Target, sessions: int, source: str | None = "127.0.0.4") -> Counter[str]:
    """Opens ``sessions`` at once from one address and holds them: how many were served, how many refused."""
    outcomes: Counter[str] = Counter()
    async with contextlib.AsyncExitStack() as stack:
        for _ in range(sessions):
            ws = await stack.enter_async_context(target.connect(source))
            try:
                reply = await asyncio.wait_for(ws.recv(), 1.0)
            except TimeoutError:
                outcomes["served"] += 1
                continue
            except ConnectionClosed:
                outcomes["closed"] += 1
                continue
            message = json.loads(reply) if isinstance(reply, str) else {}
            with contextlib.suppress(ConnectionClosed, TimeoutError):
                await asyncio.wait_for(ws.wait_closed(), 10)
            outcomes[f"refused: {message.get('code')} (close {ws.close_code})"] += 1
    return outcomes


async def http_junk(target: Target, bodies: int, seed: int = 7) -> Counter[str]:
    """Bodies that are not JSON at all (cut, mangled, nested 100,000 deep, 5,000-digit numbers) on both speech
    routes: every answer must be a JSON ``bad_json``/``bad_message`` 4xx."""
    mutator = FrameMutator(seed)
    outcomes: Counter[str] = Counter()
    async with httpx.AsyncClient(base_url=target.http_url, headers=target.headers, timeout=GUARD_S) as client:
        sent = 0
        while sent < bodies:
            frame = mutator.next()
            if frame.expect is None or frame.expect[0] != ErrorCode.BAD_JSON:
                continue  # a body that parses may be valid, and would be spoken
            body = frame.frame.encode("utf-8") if isinstance(frame.frame, str) else frame.frame
            path = "/invocations" if sent % 2 else "/v1/audio/speech"
            response = await client.post(path, content=body, headers={"Content-Type": "application/json"})
            sent += 1
            try:
                payload = response.json()
                code = payload.get("code") or (payload.get("error") or {}).get("code")
            except ValueError:
                code = "not JSON"
            outcomes[f"{response.status_code} {code}"] += 1
    return outcomes
