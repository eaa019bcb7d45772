"""``voicedesk bench abuse --only valid``: issue 34's attacks with valid input (``app.lab.abuse_valid_attacks``),
each beside a healthy client, on the paced stand-in (50×, GPU-like) and on the random-weight Kokoro on CPU (where
a slow model turns a flood into a lock-out).

Per model, ``voicedesk serve`` (and, for the Wyoming attack, ``voicedesk wyoming``) runs in its own process with
default limits. Per attack, side by side in one window: the healthy client's time to first audio alone (a fresh
connection from 127.0.0.1 and a short whole request, ``rounds`` times), then the same while the attack runs in a
process of its own. Reported: the median ratio (goal ≤ 1.5), every refusal the healthy client got (never
``queue_saturated``: it holds no backlog), the server's event-loop CPU alone and during, the log it wrote, the load
average, and what the attacker did and was told. ``--server-checkout DIR`` runs the servers from another checkout
(a "before"); the attackers and the healthy client stay this one's.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from websockets.exceptions import ConnectionClosed, InvalidStatus

from voicedesk.app.lab.abuse_flow import time_to_first_audio
from voicedesk.app.lab.abuse_side_by_side import CpuMeter
from voicedesk.app.lab.abuse_valid_attacks import ATTACKS, AttackTarget, run_attack
from voicedesk.engine.protocol import BIDI_PATH

GOAL_RATIO = 1.5
HEALTHY_TEXT = "Sure, I can help with that."
GUARD_S = 120.0
MODELS = ("paced", "kokoro")
_PACED_WYOMING = """
import asyncio
from voicedesk.app.lab.paced_synth import PacedSynthesizer
from voicedesk.endpoint.wyoming.catalog import VoiceCatalog, probe_voices
from voicedesk.endpoint.wyoming.conversation import build_info
from voicedesk.endpoint.wyoming.server import WyomingSettings, WyomingTtsServer
from voicedesk.engine.local import LocalEngine
async def main():
    engine = LocalEngine(PacedSynthesizer(50.0))
    catalog = VoiceCatalog.build(await probe_voices(engine, "af_heart", ["af_heart"]), "af_heart")
    server = WyomingTtsServer(engine, catalog, build_info(catalog, "local"), WyomingSettings(port={port}))
    await server.start()
    await asyncio.Event().wait()
asyncio.run(main())
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    process: subprocess.Popen
    port: int
    log_path: Path

    @property
    def log_bytes(self) -> int:
        return self.log_path.stat().st_size

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


def start(model: str, kind: str, folder: Path, checkout: str | None) -> Server:
    """``kind`` serve or wyoming, around ``model`` paced or kokoro (CPU), its log in ``folder``."""
    port = _free_port()
    if model == "paced":
        code = (
            f"from voicedesk.app.lab.abuse_flow import serve_paced; serve_paced({port})"
            if kind == "serve"
            else _PACED_WYOMING.format(port=port)
        )
        command = [sys.executable, "-c", code]
    else:
        extra = ["--no-zeroconf", "--voices", "af_heart"] if kind == "wyoming" else []
        command = [sys.executable, "-m", "voicedesk.engine.commands", kind, "--port", str(port), "--device", "cpu"]
        command += extra
    env = {k: v for k, v in os.environ.items() if k != "VOICEDESK_TOKEN"}
    if checkout:
        env["PYTHONPATH"] = checkout  # its voicedesk/ comes before this checkout's editable install
    log_path = folder / f"{model}-{kind}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    return Server(process, port, log_path)


async def wait_ready(server: Server, kind: str, limit_s: float = 600.0) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"the {kind} server exited:\n{server.log_path.read_text(errors='replace')[-3000:]}")
        try:
            if kind == "wyoming":
                await healthy_wyoming(server.port)
            else:
                await healthy_ws(server.port)
            return
        except (OSError, RuntimeError, ConnectionClosed, InvalidStatus, TimeoutError):
            await asyncio.sleep(1.0)
    raise RuntimeError(f"the {kind} server was not ready in time")


# ---- the healthy client ----------------------------------------------------------------------------------


async def healthy_ws(port: int) -> float:
    return await time_to_first_audio(f"ws://127.0.0.1:{port}{BIDI_PATH}", "127.0.0.1")


async def healthy_wyoming(port: int) -> float:
    from wyoming.client import AsyncTcpClient
    from wyoming.error import Error as WyomingError
    from wyoming.tts import Synthesize

    async with AsyncTcpClient("127.0.0.1", port) as client:
        sent = time.monotonic()
        await client.write_event(Synthesize(text=HEALTHY_TEXT).event())
        async with asyncio.timeout(GUARD_S):
            while (event := await client.read_event()) is not None:
                if WyomingError.is_type(event.type):
                    raise RuntimeError(str(WyomingError.from_event(event).code))
                if event.type == "audio-chunk":
                    return time.monotonic() - sent
    raise RuntimeError("closed")


async def _rounds(healthy, port: int, rounds: int) -> tuple[list[float], list[str]]:  # type: ignore[no-untyped-def]
    times, refusals = [], []
    for _ in range(rounds):
        try:
            times.append(await healthy(port))
        except RuntimeError as exc:
            refusals.append(str(exc))
        except (OSError, ConnectionClosed, InvalidStatus, TimeoutError) as exc:
            refusals.append(type(exc).__name__)
        await asyncio.sleep(0.3)
    return times, refusals


async def _settle(port: int, limit_s: float = 60.0) -> int:
    """Waits until the last attack's sessions are gone (``/ping`` tells callers on this machine), so "alone" is
    alone; the sessions still open when the limit is up."""
    import httpx

    sessions = -1
    async with httpx.AsyncClient(timeout=10) as client:
        for _ in range(int(limit_s / 0.5)):
            sessions = (await client.get(f"http://127.0.0.1:{port}/ping")).json().get("sessions", 0)
            if sessions == 0:
                break
            await asyncio.sleep(0.5)
    await asyncio.sleep(1.0)
    return sessions


# ---- one attack beside the healthy client ----------------------------------------------------------------


async def measure(name: str, serve: Server, wyoming: Server | None, rounds: int) -> dict[str, object]:
    on_wyoming = name == "Wyoming slots"
    healthy, port = (healthy_wyoming, wyoming.port) if on_wyoming and wyoming else (healthy_ws, serve.port)
    measured = wyoming if on_wyoming and wyoming else serve
    meter = CpuMeter(measured.process.pid)
    leftover = await _settle(serve.port)
    alone, refused_alone = await _rounds(healthy, port, rounds)
    cpu_alone = meter.read()
    context = multiprocessing.get_context("spawn")
    started, stop, results = context.Event(), context.Event(), context.Queue()
    target = AttackTarget("127.0.0.1", serve.port, wyoming.port if wyoming else None)
    attacker = context.Process(target=run_attack, args=(name, target, started, stop, results), daemon=True)
    attacker.start()
    try:
        await asyncio.to_thread(started.wait, 60)
        await asyncio.sleep(3.0)  # the attack at full strength: sessions open, caps reached, bursts spent
        meter.read()
        log_before, began = measured.log_bytes, time.monotonic()
        during, refused = await _rounds(healthy, port, rounds)
        cpu_during = meter.read()
        log_rate = (measured.log_bytes - log_before) / (time.monotonic() - began)
    finally:
        stop.set()
    try:
        attack = await asyncio.to_thread(results.get, True, 60)
    except Exception:  # queue.Empty: it hung; say so rather than lose the run
        attack = {"attacker did not report": 1}
    await asyncio.to_thread(attacker.join, 10)
    if attacker.is_alive():
        attacker.kill()
    ratio = statistics.median(during) / statistics.median(alone) if during and alone else None
    return {
        "attack": ATTACKS[name][0],
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "alone_s": [round(t, 3) for t in alone],
        "during_s": [round(t, 3) for t in during],
        "ratio": None if ratio is None else round(ratio, 2),
        "refused_alone": refused_alone,
        "sessions_left_from_before": leftover,
        "refused_during": refused,
        "server_event_loop_cpu": {"alone": cpu_alone["event_loop"], "during": cpu_during["event_loop"]},
        "server_log_bytes_per_s": round(log_rate),
        "attacker": attack,
    }


async def run_valid(models: list[str], names: list[str], rounds: int, checkout: str | None, progress) -> dict:  # type: ignore[no-untyped-def,type-arg]
    report: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(prefix="voicedesk-valid-") as name:
        folder = Path(name)
        for model in models:
            progress(f"{model}: starting voicedesk serve{' and wyoming' if 'Wyoming slots' in names else ''}…")
            serve = start(model, "serve", folder, checkout)
            wyoming = start(model, "wyoming", folder, checkout) if "Wyoming slots" in names else None
            try:
                await wait_ready(serve, "serve")
                if wyoming is not None:
                    await wait_ready(wyoming, "wyoming")
                report[model] = {}
                for attack in names:
                    progress(f"{model}: {attack}…")
                    result = await measure(attack, serve, wyoming, rounds)
                    report[model][attack] = result
                    progress(f"  ratio {result['ratio']}, refused {result['refused_during']}, {result['attacker']}")
                logs = [s.log_path.read_text(errors="replace") for s in (serve, wyoming) if s is not None]
                report[model]["server log"] = {"tracebacks": sum(log.count("Traceback") for log in logs)}
            finally:
                for server in (serve, wyoming):
                    if server is not None:
                        server.stop()
    return report


def format_valid(report: dict[str, dict[str, object]]) -> list[str]:
    lines = [
        "",
        f"attacks with valid input beside a healthy client (first audio during ÷ alone, goal ≤ {GOAL_RATIO}; "
        "refusals the healthy client got; server event loop CPU s/s alone → during; server log written):",
    ]
    for model, attacks in report.items():
        for name, run in attacks.items():
            if name == "server log":
                lines.append(f"  {model:<7} server log: {run}")
                continue
            cpu = run["server_event_loop_cpu"]  # type: ignore[index]
            alone, during = run["alone_s"], run["during_s"]  # type: ignore[index]
            lines.append(
                f"  {model:<7} {name:<19} ratio {run['ratio']!s:>5}  alone {_median(alone)} s, during "  # type: ignore[index]
                f"{_median(during)} s; refused {run['refused_during'] or 'never'}; loop {cpu['alone']:.2f} → "  # type: ignore[index]
                f"{cpu['during']:.2f}; log {run['server_log_bytes_per_s']} B/s; load {run['load_average'][0]}"  # type: ignore[index]
            )
            lines.append(f"  {'':<7} {'':<19} attacker: {run['attacker']}")  # type: ignore[index]
    return lines


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.3f}" if values else "—"
