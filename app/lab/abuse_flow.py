"""The flow-control and fair-admission half of ``voicedesk bench abuse`` (issue 20), against a server in its own
process with the default limits and the paced stand-in synthesizer (``app.lab.paced_synth``, GPU-like 50×), so
what is measured is the server's reading, pacing and admission, not the speed of this machine's model.

- **Fast agents**: 1,500 one-word ``text`` frames sent at 50, 150, 400 and 1,000 frames/s, then ``flush``: are
  all words spoken, in order (from the ``sentence_start`` texts), is ``flushed`` answered, any error? How long did
  the sender take (the server reads at its frame rate: TCP slows a faster sender)?
- **Beside a 1,000 frames/s agent**: a client in its own process sending frames at 1,000/s without end; a healthy
  client's time to first audio alone and beside it (median ratio, goal ≤ 1.2). Twice: frames of no-op ``config``
  (what reading and decoding 1,000 frames a second costs the server's CPU: the goal's subject) and one-word
  ``text`` frames that are spoken (the healthy client's first sentence then also needs the model the agent keeps
  busy: the scheduler's share). The spoken case runs twice side by side: against a second server whose scheduler
  never stops a running call for a first sentence (``SynthesisScheduler.preemption`` off: the rule before), and
  against the server as it ships.
- **A fifth address**: four attacking addresses each holding their share of sessions (idle, reconnecting when
  closed) and of connections (reconnecting when closed); a client from a fifth address, 10 times: time until its
  first audio (goal ≤ 2 s, 10 of 10).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from voicedesk.engine.protocol import BIDI_PATH

RATES = (50, 150, 400, 1_000)
WORDS = 1_500
FLOOD_RATE = 1_000
HEALTHY_GOAL_RATIO = 1.2
FIFTH_GOAL_S = 2.0
GUARD_S = 120.0
HEALTHY_TEXT = "Sure, I can help with that."


def serve_paced(port: int, realtime_factor: float = 50.0, preemption: bool = True) -> None:
    """The server under test: ``voicedesk serve``'s app and default limits around the paced stand-in
    (``preemption``: whether a first sentence may stop a call far ahead of its listener, as it ships)."""
    from voicedesk.app.lab.paced_synth import PacedSynthesizer
    from voicedesk.endpoint.runner import serve_forever
    from voicedesk.endpoint.server import create_app
    from voicedesk.endpoint.settings import ServerSettings

    settings = ServerSettings(port=port)
    app = create_app(PacedSynthesizer(realtime_factor), settings)
    app.state.runtime.scheduler.preemption = preemption
    serve_forever(app, settings)


def start_paced_server(log_path: Path, preemption: bool = True) -> tuple[subprocess.Popen, int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code = f"from voicedesk.app.lab.abuse_flow import serve_paced; serve_paced({port}, preemption={preemption})"
    with log_path.open("wb") as log:
        process = subprocess.Popen([sys.executable, "-c", code], stdout=log, stderr=subprocess.STDOUT)
    return process, port


# ---- fast agents ----------------------------------------------------------------------------------------


@dataclass
class AgentRun:
    rate: int
    words_spoken: int
    in_order: bool
    flushed: bool
    errors: list[str]
    send_s: float
    done_s: float

    def to_json(self) -> dict[str, object]:
        return {
            "frames_per_s": self.rate,
            "words_sent": WORDS,
            "words_spoken": self.words_spoken,
            "in_order": self.in_order,
            "flushed": self.flushed,
            "errors": self.errors,
            "send_s": round(self.send_s, 2),
            "flushed_after_s": round(self.done_s, 2),
        }


async def _send_paced(ws, words: list[str], rate: float) -> None:  # type: ignore[no-untyped-def]
    began = time.monotonic()
    for i, word in enumerate(words):
        ahead = began + i / rate - time.monotonic()
        if ahead > 0:
            await asyncio.sleep(ahead)
        await ws.send(json.dumps({"type": "text", "text": word + " "}))


async def fast_agent(url: str, rate: int) -> AgentRun:
    words = [f"word{i}" for i in range(WORDS)]
    spoken: list[str] = []
    errors: list[str] = []
    flushed = False
    began = time.monotonic()
    async with connect(url, max_size=None, open_timeout=GUARD_S) as ws:

        async def read() -> None:
            nonlocal flushed
            async for reply in ws:
                if isinstance(reply, bytes):
                    continue
                message = json.loads(reply)
                if message.get("type") == "sentence_start":
                    spoken.extend(str(message.get("text", "")).split())
                elif message.get("type") == "error":
                    errors.append(str(message.get("code")))
                elif message.get("type") == "flushed" and message.get("request_id") == "end":
                    flushed = True
                    return

        reader = asyncio.create_task(read())
        await _send_paced(ws, words, rate)
        await ws.send(json.dumps({"type": "flush", "request_id": "end"}))
        send_s = time.monotonic() - began
        with contextlib.suppress(TimeoutError, ConnectionClosed):
            async with asyncio.timeout(GUARD_S):
                await reader
        reader.cancel()
    return AgentRun(rate, len(spoken), spoken == words, flushed, errors, send_s, time.monotonic() - began)


# ---- a healthy client beside a 1,000 frames/s agent --------------------------------------------------------


async def time_to_first_audio(url: str, source: str | None = None) -> float:
    """Seconds to the first audio of a short whole request on a fresh WebSocket; RuntimeError names a refusal."""
    extra = {"local_addr": (source, 0)} if source else {}
    async with connect(url, max_size=None, open_timeout=GUARD_S, **extra) as ws:  # type: ignore[arg-type]
        sent = time.monotonic()
        await ws.send(json.dumps({"text": HEALTHY_TEXT, "request_id": "h"}))
        first = None
        async with asyncio.timeout(GUARD_S):
            async for reply in ws:
                if isinstance(reply, bytes):
                    first = first if first is not None else time.monotonic() - sent
                    continue
                message = json.loads(reply)
                if message.get("type") == "error":
                    raise RuntimeError(str(message.get("code")))
                if message.get("type") == "synthesis_complete":
                    break
    if first is None:
        raise RuntimeError("no audio")
    return first


def _flood_process(url: str, kind: str, started, stop, results) -> None:  # type: ignore[no-untyped-def]
    asyncio.run(_flood(url, kind, started, stop, results))


def _flood_frame(kind: str, n: int) -> str:
    if kind == "config":
        return json.dumps({"type": "config", "speed": 1.0})
    return json.dumps({"type": "text", "text": f"token{n} "})


async def _flood(url: str, kind: str, started, stop, results) -> None:  # type: ignore[no-untyped-def]
    sent = errors = 0
    async with connect(url, max_size=None, open_timeout=GUARD_S, local_addr=("127.0.0.3", 0)) as ws:

        async def drain() -> None:
            nonlocal errors
            async for reply in ws:
                if isinstance(reply, str) and json.loads(reply).get("type") == "error":
                    errors += 1

        reader = asyncio.create_task(drain())
        started.set()
        began = time.monotonic()
        while not stop.is_set():
            ahead = began + sent / FLOOD_RATE - time.monotonic()
            if ahead > 0:
                await asyncio.sleep(ahead)
            await ws.send(_flood_frame(kind, sent))
            sent += 1
        elapsed = time.monotonic() - began
        reader.cancel()
    # The agent's own CPU per second: it runs on this machine too (the machine's load, not the server's).
    cpu_per_s = round(time.process_time() / elapsed, 3)
    results.put({"frames_sent": sent, "sent_per_s": round(sent / elapsed), "errors": errors, "cpu_per_s": cpu_per_s})


async def healthy_beside_flood(url: str, rounds: int, kind: str, cpu=None) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """``cpu``: the server's ``abuse_side_by_side.CpuMeter``, read alone and during the flood, when given."""
    if cpu is not None:
        cpu.read()
    alone = [await time_to_first_audio(url) for _ in range(rounds)]
    cpu_alone = cpu.read() if cpu is not None else None
    context = multiprocessing.get_context("spawn")
    started, stop, results = context.Event(), context.Event(), context.Queue()
    flooder = context.Process(target=_flood_process, args=(url, kind, started, stop, results), daemon=True)
    flooder.start()
    try:
        if not await asyncio.to_thread(started.wait, 60):
            raise RuntimeError("the flooding agent did not connect")
        await asyncio.sleep(2.0)  # past its burst: the server now reads it at its frame rate
        if cpu is not None:
            cpu.read()
        during = [await time_to_first_audio(url) for _ in range(rounds)]
        cpu_during = cpu.read() if cpu is not None else None
    finally:
        stop.set()
    flood = await asyncio.to_thread(results.get, True, 60)
    await asyncio.to_thread(flooder.join, 30)
    ratio = statistics.median(during) / statistics.median(alone)
    return {
        "agent_frames": kind,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "median_added_s": round(statistics.median(during) - statistics.median(alone), 3),
        "ttfa_alone_s": [round(t, 3) for t in alone],
        "ttfa_beside_flood_s": [round(t, 3) for t in during],
        "median_ratio": round(ratio, 2),
        "goal": HEALTHY_GOAL_RATIO,
        "flood": flood,
        **({"server_cpu": {"alone": cpu_alone, "during": cpu_during}} if cpu is not None else {}),
    }


# ---- four attacking addresses and a fifth ----------------------------------------------------------------


async def _hold_session(url: str, source: str, stop: asyncio.Event, counts: dict[str, int]) -> None:
    """An idle session from ``source``, reopened as soon as it is closed (or refused)."""
    while not stop.is_set():
        try:
            async with connect(url, open_timeout=GUARD_S, local_addr=(source, 0)) as ws:
                counts["sessions opened"] += 1
                with contextlib.suppress(ConnectionClosed):
                    async for message in ws:
                        if isinstance(message, str) and (error := json.loads(message)).get("type") == "error":
                            counts[f"told {error.get('code')}"] += 1
                counts[f"closed {ws.close_code}"] += 1
        except (InvalidStatus, OSError, TimeoutError):
            counts["refused"] += 1
        await asyncio.sleep(0.05)


async def _hold_connection(port: int, source: str, stop: asyncio.Event, counts: dict[str, int]) -> None:
    """An idle TCP connection from ``source`` (no request), reopened as soon as the server closes it."""
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
            counts["connections opened"] += 1
            answer = await reader.read()
            if b"too_many_connections" in answer:  # closed to make room, and told so
                counts["connections told too_many_connections"] += 1
            writer.close()
        except OSError:
            counts["connect failed"] += 1
        await asyncio.sleep(0.05)


async def fifth_address(url: str, port: int, tries: int = 10) -> dict[str, object]:
    from collections import Counter

    from voicedesk.endpoint.settings import ServerSettings

    defaults = ServerSettings()
    sessions = defaults.max_sessions_per_client or 4
    connections = defaults.max_connections_per_client or 32
    stop = asyncio.Event()
    counts: Counter[str] = Counter()
    attackers = [f"127.0.0.{20 + i}" for i in range(4)]
    tasks = [
        asyncio.create_task(_hold_session(url, source, stop, counts)) for source in attackers for _ in range(sessions)
    ]
    tasks += [
        asyncio.create_task(_hold_connection(port, source, stop, counts))
        for source in attackers
        for _ in range(connections - sessions)
    ]
    times: list[float | None] = []
    try:
        await asyncio.sleep(3.0)  # every attacker at its caps
        for i in range(tries):
            began = time.monotonic()
            try:
                await time_to_first_audio(url, f"127.0.0.{60 + i}")
                times.append(time.monotonic() - began)
            except (InvalidStatus, OSError, RuntimeError, TimeoutError, ConnectionClosed):
                times.append(None)
            await asyncio.sleep(0.5)
    finally:
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    served = [t for t in times if t is not None and t <= FIFTH_GOAL_S]
    return {
        "attackers": f"4 addresses × {sessions} idle sessions + {connections - sessions} idle connections, "
        "reconnecting",
        "fifth_address_first_audio_s": [None if t is None else round(t, 3) for t in times],
        "served_within_goal": f"{len(served)}/{tries}",
        "goal_s": FIFTH_GOAL_S,
        "attackers_saw": dict(counts),
    }


BEFORE = "no preemption"
"""The spoken flood's comparison: the same server with ``SynthesisScheduler.preemption`` off (the rule before)."""


async def _wait_ping(port: int) -> None:
    import httpx

    async with httpx.AsyncClient(timeout=5) as client:
        for _ in range(300):
            with contextlib.suppress(httpx.TransportError):
                if (await client.get(f"http://127.0.0.1:{port}/ping")).status_code == 200:
                    return
            await asyncio.sleep(0.2)


async def run_flow(rounds: int, progress) -> dict[str, object]:  # type: ignore[no-untyped-def]
    import tempfile

    phases: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="voicedesk-flow-") as folder:
        process, port = start_paced_server(Path(folder) / "server.log")
        before, before_port = start_paced_server(Path(folder) / "before.log", preemption=False)
        url = f"ws://127.0.0.1:{port}{BIDI_PATH}"
        try:
            await _wait_ping(port)
            await _wait_ping(before_port)
            for rate in RATES:
                progress(f"fast agent: {WORDS} one-word frames at {rate}/s…")
                phases[f"fast agent {rate}/s"] = (await fast_agent(url, rate)).to_json()
            for kind in ("config", "text"):
                if kind == "text":  # side by side: the rule before, then as it ships
                    progress(f"a healthy client beside a {FLOOD_RATE}/s agent sending text frames, {BEFORE}…")
                    phases[f"healthy beside text frames, {BEFORE}"] = await healthy_beside_flood(
                        f"ws://127.0.0.1:{before_port}{BIDI_PATH}", rounds, "text"
                    )
                progress(f"a healthy client beside a {FLOOD_RATE}/s agent sending {kind} frames…")
                phases[f"healthy beside {kind} frames"] = await healthy_beside_flood(url, rounds, kind)
            progress("four attacking addresses and a fifth…")
            phases["fifth address"] = await fifth_address(url, port)
        finally:
            for server in (process, before):
                server.terminate()
                server.wait(30)
            log = (Path(folder) / "server.log").read_text(errors="replace")
            phases["server log"] = {"bytes": len(log.encode()), "tracebacks": log.count("Traceback")}
    return phases


def format_flow(phases: dict[str, object]) -> list[str]:
    lines = ["", "flow control and fair admission (paced stand-in synthesizer at 50×, default limits):"]
    for rate in RATES:
        run = phases[f"fast agent {rate}/s"]
        lines.append(
            f"agent {rate:>5}/s  {run['words_spoken']}/{run['words_sent']} words spoken, in order: {run['in_order']}, "  # type: ignore[index]
            f"flushed: {run['flushed']}, errors: {run['errors'] or 'none'}; sent in {run['send_s']} s, "  # type: ignore[index]
            f"flushed after {run['flushed_after_s']} s"  # type: ignore[index]
        )
    for name in ("config frames", f"text frames, {BEFORE}", "text frames"):
        healthy = phases[f"healthy beside {name}"]
        lines.append(
            f"healthy     time to first audio alone {healthy['ttfa_alone_s']} s, beside a {FLOOD_RATE}/s agent of "  # type: ignore[index]
            f"{name} {healthy['ttfa_beside_flood_s']} s: median ratio {healthy['median_ratio']} "  # type: ignore[index]
            f"({healthy['median_added_s']:+} s; goal ≤ {HEALTHY_GOAL_RATIO}); the agent: {healthy['flood']}; "  # type: ignore[index]
            f"load average {healthy['load_average']}"  # type: ignore[index]
        )
    fifth = phases["fifth address"]
    lines.append(
        f"fifth addr  {fifth['attackers']}: first audio {fifth['fifth_address_first_audio_s']} s, "  # type: ignore[index]
        f"{fifth['served_within_goal']} within {FIFTH_GOAL_S:g} s; attackers saw {fifth['attackers_saw']}"  # type: ignore[index]
    )
    lines.append(f"server log  {phases['server log']}")
    return lines
