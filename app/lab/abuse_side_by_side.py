"""``voicedesk bench abuse --only junk``: the junk flood beside a healthy Kokoro client, before and after the junk
budget became the address's, side by side.

Two ``voicedesk serve`` subprocesses with the same model and default limits: "after" as it ships, "before" with
``EndpointRuntime.junk_by_address`` off (each connection its own junk budget, so a flooder that reconnects gets a
new one each time). They take turns, the order swapped every repeat, so both see the same machine. Each turn: the
healthy client's time to first audio alone, then beside a client flooding junk frames and reconnecting
(``abuse_load.flood``, from its own address). Beside the ratio, what the flood costs the server itself, which the
machine's load does not change: CPU seconds per second of its event loop (the main thread) and of its other
threads (the model's, encoding, torch's pool: Python 3.12 does not name them for ``/proc``), read alone and during
the flood, and the junk frames it answered and connections it opened. The flooder's own CPU (it runs on this
machine too) is reported beside them.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from voicedesk.app.lab.abuse_fuzz import Target
from voicedesk.app.lab.abuse_load import flood_beside_healthy, times_to_first_audio
from voicedesk.app.lab.abuse_server import HEALTHY_TEXT, ServerProcess, _free_port, wait_ready

BEFORE, AFTER = "before (a junk budget per connection)", "after (a junk budget per address)"


def serve_before(argv: list[str]) -> int:
    """``voicedesk serve`` with each connection's own junk budget (the rule before), for the comparison only."""
    from voicedesk.endpoint import runner, serve_cli

    original = runner.serve_forever

    def serve_forever(app, settings) -> None:  # type: ignore[no-untyped-def]
        app.state.runtime.junk_by_address = None
        original(app, settings)

    runner.serve_forever = serve_forever  # serve_cli imports it at call time
    return serve_cli.main(argv)


def start(device: str, folder: Path, name: str, before: bool) -> ServerProcess:
    port = _free_port()
    argv = ["serve", "--port", str(port), "--device", device]
    if before:
        code = "import sys; from voicedesk.app.lab.abuse_side_by_side import serve_before; "
        command = [sys.executable, "-c", code + f"sys.exit(serve_before({argv[1:]!r}))"]
    else:
        command = [sys.executable, "-m", "voicedesk.engine.commands", *argv]
    env = {k: v for k, v in os.environ.items() if k != "VOICEDESK_TOKEN"}
    log_path = folder / f"{name}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    return ServerProcess(port, process, log_path)


def _cpu_s(stat: Path) -> float:
    fields = stat.read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu_s(pid: int) -> dict[str, float]:
    """CPU seconds (user + system) of the process's main thread, which runs the event loop (``main``), and of all
    its threads together (``all``, including threads that have ended)."""
    return {"main": _cpu_s(Path(f"/proc/{pid}/task/{pid}/stat")), "all": _cpu_s(Path(f"/proc/{pid}/stat"))}


class CpuMeter:
    """CPU seconds per wall second of a server's event loop (its main thread) and of its other threads."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._at, self._cpu = time.monotonic(), thread_cpu_s(pid)

    def read(self) -> dict[str, float]:
        now, cpu = time.monotonic(), thread_cpu_s(self.pid)
        wall = now - self._at
        loop, total = cpu["main"] - self._cpu["main"], cpu["all"] - self._cpu["all"]
        self._at, self._cpu = now, cpu
        return {"event_loop": round(loop / wall, 3), "others": round((total - loop) / wall, 3)}


async def one_turn(server: ServerProcess, rounds: int, flood_s: float) -> dict[str, object]:
    target = Target("127.0.0.1", server.port)
    meter = CpuMeter(server.process.pid)
    result = await flood_beside_healthy(target, rounds, HEALTHY_TEXT, min_flood_s=flood_s, cpu=meter)
    return {
        "load_average": [round(x, 2) for x in os.getloadavg()],
        **result.to_json(),
    }


async def junk_side_by_side(device: str, repeats: int, rounds: int, flood_s: float, progress) -> dict[str, object]:  # type: ignore[no-untyped-def]
    import tempfile

    turns: dict[str, list[dict[str, object]]] = {BEFORE: [], AFTER: []}
    with tempfile.TemporaryDirectory(prefix="voicedesk-junk-") as folder:
        servers = {
            BEFORE: start(device, Path(folder), "before", True),
            AFTER: start(device, Path(folder), "after", False),
        }
        try:
            progress("starting two voicedesk serve (before / after), the models load in the background…")
            for server in servers.values():
                await wait_ready(server)
                await times_to_first_audio(Target("127.0.0.1", server.port), 1, HEALTHY_TEXT)  # warm
            for repeat in range(repeats):
                order = (BEFORE, AFTER) if repeat % 2 == 0 else (AFTER, BEFORE)
                for name in order:
                    progress(f"repeat {repeat + 1}/{repeats}: {name}…")
                    turn = await one_turn(servers[name], rounds, flood_s)
                    turns[name].append(turn)
                    progress(f"  ratio {turn['median_ratio']}, load {turn['load_average']}, cpu {turn['server_cpu']}")
        finally:
            for server in servers.values():
                server.stop()
    return {"device": device, "repeats": repeats, "rounds": rounds, "turns": turns}


def format_junk(report: dict[str, object]) -> list[str]:
    turns: dict[str, list[dict]] = report["turns"]  # type: ignore[assignment]
    lines = [
        "",
        f"junk flood beside a healthy Kokoro client ({report['device']}), before / after side by side, "
        f"{report['repeats']} repeats alternating (healthy time to first audio during ÷ alone; server CPU s/s):",
    ]
    for name, runs in turns.items():
        for run in runs:
            cpu, flood = run["server_cpu"], run["flood"]
            lines.append(
                f"  {name:<40} ratio {run['median_ratio']:>5}  load {run['load_average'][0]:>5}  "
                f"event loop {cpu['alone']['event_loop']:.2f} → {cpu['during']['event_loop']:.2f}, "
                f"other threads {cpu['alone']['others']:.2f} → {cpu['during']['others']:.2f}; flooder answered "
                f"{flood['errors'].get('bad_json', 0)} junk frames on {flood['connections']} connections, refused "
                f"{sum(flood['refused'].values())} times, in {flood['elapsed_s']} s (its own CPU {flood['cpu_s']} s)"
            )
    for name, runs in turns.items():
        ratios = [r["median_ratio"] for r in runs]
        loops = [r["server_cpu"]["during"]["event_loop"] for r in runs]
        lines.append(
            f"  median {name:<33} ratio {statistics.median(ratios):.2f} (goal ≤ 1.5), event loop during the flood "
            f"{statistics.median(loops):.2f} CPU s/s"
        )
    return lines


# ---- the spoken flood ----------------------------------------------------------------------------------------

SPOKEN_CASES = (("as it ships", "config"), ("no preemption", "text"), ("as it ships", "text"))
"""The no-op flood (what reading 1,000 frames/s costs), then the spoken flood on a server whose scheduler never
stops a running call for a first sentence (the rule before) and on the server as it ships."""


async def spoken_side_by_side(repeats: int, rounds: int, progress) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """A healthy client beside a 1,000 frames/s agent on the paced stand-in (``abuse_flow``), each case in turn,
    the order reversed every repeat, with the server's CPU alone and during the flood."""
    import tempfile

    from voicedesk.app.lab.abuse_flow import BIDI_PATH, _wait_ping, healthy_beside_flood, start_paced_server

    turns: dict[str, list[dict[str, object]]] = {f"{server}, {kind}": [] for server, kind in SPOKEN_CASES}
    with tempfile.TemporaryDirectory(prefix="voicedesk-spoken-") as folder:
        servers = {
            "as it ships": start_paced_server(Path(folder) / "ships.log"),
            "no preemption": start_paced_server(Path(folder) / "before.log", preemption=False),
        }
        try:
            for _, port in servers.values():
                await _wait_ping(port)
            for repeat in range(repeats):
                cases = SPOKEN_CASES if repeat % 2 == 0 else tuple(reversed(SPOKEN_CASES))
                for server, kind in cases:
                    process, port = servers[server]
                    progress(f"repeat {repeat + 1}/{repeats}: {server}, {kind} frames…")
                    url = f"ws://127.0.0.1:{port}{BIDI_PATH}"
                    turn = await healthy_beside_flood(url, rounds, kind, cpu=CpuMeter(process.pid))
                    turns[f"{server}, {kind}"].append(turn)
                    progress(f"  ratio {turn['median_ratio']}, load {turn['load_average']}, {turn['server_cpu']}")
        finally:
            for process, _ in servers.values():
                process.terminate()
                process.wait(30)
    return {"repeats": repeats, "rounds": rounds, "turns": turns}


def format_spoken(report: dict[str, object]) -> list[str]:
    turns: dict[str, list[dict]] = report["turns"]  # type: ignore[assignment]
    lines = [
        "",
        f"a healthy client beside a 1,000 frames/s agent (paced stand-in at 50×), {report['repeats']} repeats "
        "alternating (time to first audio during ÷ alone; server CPU s/s alone → during):",
    ]
    for name, runs in turns.items():
        for run in runs:
            cpu = run["server_cpu"]
            lines.append(
                f"  {name:<28} ratio {run['median_ratio']:>5} ({run['median_added_s']:+.3f} s)  load "
                f"{run['load_average'][0]:>5}  event loop {cpu['alone']['event_loop']:.2f} → "
                f"{cpu['during']['event_loop']:.2f}, other threads {cpu['alone']['others']:.2f} → "
                f"{cpu['during']['others']:.2f}; the agent's own CPU {run['flood'].get('cpu_per_s')} s/s"
            )
    for name, runs in turns.items():
        ratios = [r["median_ratio"] for r in runs]
        loops = [r["server_cpu"]["during"]["event_loop"] - r["server_cpu"]["alone"]["event_loop"] for r in runs]
        lines.append(
            f"  median {name:<21} ratio {statistics.median(ratios):.2f} (goal ≤ 1.2), the flood's event-loop "
            f"CPU {statistics.median(loops):+.2f} s/s"
        )
    return lines
