"""``voicedesk bench flow``, the load side (``bench_flow`` prints the table).

- **waiting** (nobody waits behind a long sentence): a newcomer's time to first audio (its request sent → its
  first audio frame) for a short reply, three ways, side by side in one run: alone; behind three sessions
  streaming long replies (arriving at random moments, as independent callers do); right after a client vanished
  in the middle of a long sentence. Medians of ``repeat``.
  Goals: ≤ 2.0× and ≤ 1.5× its time alone.
- **stalled**: the server in its own process (``python -m voicedesk.app.lab.bench_serve``) and N clients that
  never read,
  for M minutes, after the same sentences were read normally once (the baseline). Each connects through a socket
  with a tiny receive buffer, sends a long reply and reads nothing; when the server drops it (found by a ping that
  can no longer be written), it connects again. A healthy client asks for a short reply every few seconds. The
  server's RSS is sampled throughout; at the end the stalled clients go and the bench waits for ``/ping`` to
  report no sessions. Goals: RSS growth ≤ 200 MB; all slots back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from voicedesk.engine.protocol import BIDI_PATH

GUARD_S = 600.0
BEHIND_GOAL = 2.0
VANISHED_GOAL = 1.5
RSS_GOAL_MB = 200.0
NEWCOMER_TEXT = "Sure, I can help with that."
LONG_REPLY = " ".join(
    [
        "The quarterly report shows that revenue grew in every region this year, although costs rose faster than "
        "expected in the second half, and the board now wants a plan for next year by the end of the month.",
        "Marketing spent most of its budget on the spring campaign, which brought in many new customers, but "
        "retention fell in the autumn, when two competitors cut their prices at the same time.",
    ]
    * 3
)
VANISHING_TEXT = (
    "Yes I see, and the long sentence that this client is hearing goes on and on through many clauses, past the "
    "weather and the traffic and the news of the day, until the client simply disappears in the middle of it."
)
"""After its early first fragment ("Yes I see,") one long chunk: alone on the model, it is one long call."""
STALLED_SENTENCE = "This is one more sentence of a very long reply that nobody is reading."
STALLED_TEXT = " ".join([STALLED_SENTENCE] * 55)
VANISH_AFTER_S = 0.1
ARRIVAL_SPREAD = 5.0
"""Behind busy sessions the newcomer arrives at a random moment within this many times its time alone: arriving
right after its previous request would lock onto the moment a busy session's next part has just started."""
SEED = 9


class BenchFailure(RuntimeError):
    pass


# ---- waiting --------------------------------------------------------------------------------------


@dataclass
class WaitingResult:
    alone_s: list[float] = field(default_factory=list)
    behind_busy_s: list[float] = field(default_factory=list)
    after_vanished_s: list[float] = field(default_factory=list)

    @staticmethod
    def _median(values: list[float]) -> float | None:
        return statistics.median(values) if values else None

    def ratio(self, values: list[float]) -> float | None:
        alone, other = self._median(self.alone_s), self._median(values)
        return other / alone if alone and other is not None else None

    def to_json(self) -> dict[str, object]:
        return {
            "alone_s": self.alone_s,
            "behind_busy_s": self.behind_busy_s,
            "after_vanished_s": self.after_vanished_s,
            "behind_busy_ratio": self.ratio(self.behind_busy_s),
            "after_vanished_ratio": self.ratio(self.after_vanished_s),
            "goals": {"behind_busy_ratio": BEHIND_GOAL, "after_vanished_ratio": VANISHED_GOAL},
        }


def _request(text: str, voice: str, request_id: str) -> str:
    return json.dumps({"text": text, "voice": voice, "request_id": request_id})


async def newcomer_ttfa(ws_url: str, voice: str) -> float:
    """Connects, asks for a short reply, returns the time from the request to its first audio (reads it all)."""
    from websockets.asyncio.client import connect

    async with connect(ws_url, max_size=None) as ws:
        sent = time.monotonic()
        await ws.send(_request(NEWCOMER_TEXT, voice, "newcomer"))
        first: float | None = None
        async with asyncio.timeout(GUARD_S):
            while True:
                frame = await ws.recv()
                if isinstance(frame, bytes):
                    first = first if first is not None else time.monotonic() - sent
                    continue
                message = json.loads(frame)
                if message.get("type") == "error":
                    raise BenchFailure(f"the newcomer got {message.get('code')}: {message.get('message')}")
                if message.get("type") == "synthesis_complete":
                    if first is None:
                        raise BenchFailure("the newcomer's request finished without audio")
                    return first


async def _busy_session(ws_url: str, voice: str, streaming: asyncio.Event) -> None:
    """Streams long replies back to back, reading everything at once, until cancelled."""
    from websockets.asyncio.client import connect

    async with connect(ws_url, max_size=None) as ws:
        while True:
            await ws.send(_request(LONG_REPLY, voice, "busy"))
            while True:
                frame = await ws.recv()
                if isinstance(frame, bytes):
                    streaming.set()
                elif json.loads(frame).get("type") in ("synthesis_complete", "error"):
                    break


async def _vanish_mid_sentence(ws_url: str, voice: str) -> None:
    from websockets.asyncio.client import connect

    ws = await connect(ws_url, max_size=None)
    await ws.send(_request(VANISHING_TEXT, voice, "vanishing"))
    async with asyncio.timeout(GUARD_S):
        while True:
            frame = await ws.recv()
            if isinstance(frame, str):
                message = json.loads(frame)
                if message.get("type") == "sentence_start" and len(message["text"]) > 100:
                    break
    await asyncio.sleep(VANISH_AFTER_S)
    ws.transport.abort()  # gone without a word, mid-sentence


async def measure_waiting(ws_url: str, repeat: int, voice: str, progress) -> WaitingResult:  # type: ignore[no-untyped-def]
    result = WaitingResult()
    await newcomer_ttfa(ws_url, voice)  # warms the path; not counted
    for round_no in range(repeat):
        result.alone_s.append(await newcomer_ttfa(ws_url, voice))
        await _vanish_mid_sentence(ws_url, voice)
        result.after_vanished_s.append(await newcomer_ttfa(ws_url, voice))
        progress(
            f"  round {round_no + 1}/{repeat}: alone {result.alone_s[-1] * 1000:.0f} ms, right after a client "
            f"vanished {result.after_vanished_s[-1] * 1000:.0f} ms"
        )
    streaming = [asyncio.Event() for _ in range(3)]
    busy = [asyncio.create_task(_busy_session(ws_url, voice, event)) for event in streaming]
    try:
        async with asyncio.timeout(GUARD_S):
            await asyncio.gather(*(event.wait() for event in streaming))
        rng = random.Random(SEED)
        spread_s = ARRIVAL_SPREAD * statistics.median(result.alone_s)
        for round_no in range(repeat):
            await asyncio.sleep(rng.uniform(0, spread_s))
            result.behind_busy_s.append(await newcomer_ttfa(ws_url, voice))
            took = result.behind_busy_s[-1] * 1000
            progress(f"  round {round_no + 1}/{repeat}: behind three busy sessions {took:.0f} ms")
    finally:
        for task in busy:
            task.cancel()
        await asyncio.gather(*busy, return_exceptions=True)
    result.alone_s.append(await newcomer_ttfa(ws_url, voice))  # once more after the load, side by side
    return result


# ---- stalled clients and RSS ----------------------------------------------------------------------


@dataclass
class StalledResult:
    clients: int
    minutes: float
    synth: str
    rss_mb: list[tuple[float, float]] = field(default_factory=list)
    """(seconds since the clients started, server RSS in MB)."""
    baseline_mb: float = 0.0
    after_mb: float = 0.0
    sessions_dropped: int = 0
    drop_after_s: list[float] = field(default_factory=list)
    """How long each stalled client was held before the server dropped it."""
    max_sessions_seen: int = 0
    slots_back: bool = False
    slots_back_s: float | None = None
    healthy_ttfa_s: list[float] = field(default_factory=list)
    healthy_failures: list[str] = field(default_factory=list)

    @property
    def peak_mb(self) -> float:
        return max((mb for _, mb in self.rss_mb), default=self.baseline_mb)

    @property
    def growth_mb(self) -> float:
        return self.peak_mb - self.baseline_mb

    def to_json(self) -> dict[str, object]:
        body = dict(self.__dict__)
        body.update(peak_mb=self.peak_mb, growth_mb=self.growth_mb, goal_growth_mb=RSS_GOAL_MB)
        return body


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise BenchFailure(f"no VmRSS for process {pid}")


async def _ping_sessions(http_url: str) -> int | None:
    import httpx

    try:
        async with httpx.AsyncClient(timeout=10) as client:
            response = await client.get(http_url + "/ping")
    except httpx.HTTPError:
        return None
    return int(response.json().get("sessions", 0)) if response.status_code == 200 else None


async def _read_one(ws_url: str, text: str, voice: str) -> None:
    from websockets.asyncio.client import connect

    async with connect(ws_url, max_size=None) as ws:
        await ws.send(_request(text, voice, "warm-up"))
        async with asyncio.timeout(GUARD_S):
            while True:
                frame = await ws.recv()
                if isinstance(frame, str) and json.loads(frame).get("type") in ("synthesis_complete", "error"):
                    return


async def _stalled_client(ws_url: str, port: int, voice: str, stop: asyncio.Event, result: StalledResult) -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    while not stop.is_set():
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
        ws = await connect(ws_url, sock=sock, max_queue=1, ping_interval=None, close_timeout=0.5, max_size=None)
        opened = time.monotonic()
        try:
            await ws.send(_request(STALLED_TEXT, voice, "stalled"))
            while not stop.is_set():
                await asyncio.sleep(1.0)
                await ws.ping()  # the pong is never read: this only finds out whether the server dropped us
        except ConnectionClosed:
            result.sessions_dropped += 1
            result.drop_after_s.append(time.monotonic() - opened)
        finally:
            ws.transport.abort()


async def _healthy_client(ws_url: str, voice: str, stop: asyncio.Event, result: StalledResult) -> None:
    while not stop.is_set():
        try:
            result.healthy_ttfa_s.append(await newcomer_ttfa(ws_url, voice))
        except Exception as exc:  # recorded and reported: the healthy client must be served
            result.healthy_failures.append(f"{type(exc).__name__}: {exc}")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 5.0)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def _wait_ready(process: asyncio.subprocess.Process, http_url: str) -> None:
    async with asyncio.timeout(GUARD_S):
        while True:
            if await _ping_sessions(http_url) is not None:
                return
            if process.returncode is not None:
                raise BenchFailure(f"the server exited with {process.returncode}; see its log")
            await asyncio.sleep(0.5)


async def measure_stalled(  # type: ignore[no-untyped-def]
    server_args: list[str], synth: str, clients: int, minutes: float, voice: str, progress, log_path: Path
) -> StalledResult:
    """Runs ``python -m voicedesk.app.lab.bench_serve --port P ARGS`` (output to ``log_path``) under the stalled
    load."""
    port = _free_port()
    http_url, ws_url = f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}{BIDI_PATH}"
    result = StalledResult(clients, minutes, synth)
    command = [
        sys.executable,
        "-m",
        "voicedesk.app.lab.bench_serve",
        "--port",
        str(port),
        "--max-sessions",
        str(clients + 8),
        # Each stalled client's sentences wait for the model at once whenever the load (re)connects: under the
        # default saturation limit (8 waiting sentences) the healthy client would be refused queue_saturated by
        # design. This scenario is about what stalled clients hold, so like the session cap the limit is lifted.
        "--max-queue-depth",
        str(clients + 8),
    ]
    command.append("-v")  # its log says why each stalled client was dropped
    with log_path.open("w") as log:
        process = await asyncio.create_subprocess_exec(*command, *server_args, stdout=log, stderr=subprocess.STDOUT)
        try:
            await _wait_ready(process, http_url)
            # The baseline is the server after the same load, read: what the model itself keeps after making these
            # sentences (allocator caches, grown buffers) is not what stalled clients cost.
            await asyncio.gather(*(_read_one(ws_url, STALLED_SENTENCE, voice) for _ in range(clients)))
            await newcomer_ttfa(ws_url, voice)
            result.baseline_mb = rss_mb(process.pid)
            progress(f"  server RSS before the load: {result.baseline_mb:.0f} MB")
            stop = asyncio.Event()
            stalled = [asyncio.create_task(_stalled_client(ws_url, port, voice, stop, result)) for _ in range(clients)]
            healthy = asyncio.create_task(_healthy_client(ws_url, voice, stop, result))
            started, next_report = time.monotonic(), 30.0
            while (elapsed := time.monotonic() - started) < minutes * 60:
                result.rss_mb.append((round(elapsed, 1), rss_mb(process.pid)))
                result.max_sessions_seen = max(result.max_sessions_seen, await _ping_sessions(http_url) or 0)
                if elapsed >= next_report:
                    next_report += 30.0
                    progress(
                        f"  {elapsed:.0f} s: RSS {result.rss_mb[-1][1]:.0f} MB, {result.sessions_dropped} stalled "
                        f"session(s) dropped so far, healthy requests {len(result.healthy_ttfa_s)} served / "
                        f"{len(result.healthy_failures)} failed"
                    )
                await asyncio.sleep(2.0)
            stop.set()
            healthy.cancel()
            await asyncio.gather(*stalled, healthy, return_exceptions=True)
            gone = time.monotonic()
            async with asyncio.timeout(120):
                while True:
                    if await _ping_sessions(http_url) == 0:
                        break
                    await asyncio.sleep(0.1)
                result.slots_back, result.slots_back_s = True, time.monotonic() - gone
            result.after_mb = rss_mb(process.pid)
        except TimeoutError:
            result.after_mb = rss_mb(process.pid)
        finally:
            if process.returncode is None:
                process.terminate()
                try:
                    await asyncio.wait_for(process.wait(), 40)
                except TimeoutError:
                    process.kill()
    return result
