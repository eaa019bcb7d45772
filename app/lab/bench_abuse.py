"""``voicedesk bench abuse``: the endpoint attacked the ways issue 11 found, against a real ``voicedesk serve``.

The server runs as a subprocess with its default limits (so its memory can be read from ``/proc``, and its log
measured); the attackers are real sockets from this machine, some from other loopback addresses to play other
clients. In order: mutated frames over four sessions, junk HTTP bodies, header bombs (plain HTTP, one endless
header, the WebSocket upgrade), slow headers from one address and from ten (with a healthy client served
meanwhile), frames over the WebSocket limit, requests that would cost hours of compute, more sessions than one
client may hold, and a client flooding junk frames beside a healthy one. The report gives frames sent and
answered, the server's memory before and after, the healthy client's time to first audio during the flood ÷ alone
(goal ≤ 1.5), and every refused connection with the reason. Linux only (``/proc``, ``127.0.0.0/8``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from voicedesk.app.lab.abuse_server import HEALTHY_TEXT, rss_mib, start_server, wait_ready

FLOOD_GOAL_RATIO = 1.5


def register_bench(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "abuse",
        help="attack a voicedesk serve subprocess (fuzzing, slowloris, header bombs, floods) and report",
        description="Start voicedesk serve with its default limits and attack it from this machine: mutated "
        "frames, junk HTTP bodies, header bombs, slowloris, 17 MiB frames, oversized compute, too many sessions, "
        "a flooding client beside a healthy one. Exits 1 when a frame went unanswered or the server broke.",
    )
    parser.add_argument("--frames", type=int, default=10_000, help="mutated frames, over 4 sessions (10000)")
    parser.add_argument("--slowloris", type=int, default=500, help="slow-header connections per wave (500)")
    parser.add_argument("--bomb-mb", type=int, default=300, help="megabytes each header bomb tries to send (300)")
    parser.add_argument("--rounds", type=int, default=5, help="healthy requests alone and during the flood (5)")
    parser.add_argument("--header-timeout", type=float, default=10.0, help="the server's --header-timeout (10)")
    parser.add_argument("--device", default="cpu", help="the server's --device (cpu)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", metavar="FILE", help="also write the report as JSON to FILE")
    parser.add_argument(
        "--only",
        choices=("all", "hardening", "flow", "junk", "spoken", "valid"),
        default="all",
        help="hardening: the attacks on voicedesk serve with Kokoro; flow: fast agents, a healthy client beside a "
        "1,000 frames/s agent, four attacking addresses and a fifth (paced stand-in synthesizer); junk: the junk "
        "flood beside a healthy Kokoro client, side by side against a server whose junk budget is per connection "
        "(the rule before), with the server's CPU per thread; spoken: the no-op and spoken 1,000 frames/s floods, "
        "with and without preemption, alternating, with the server's CPU; valid: issue 34's attacks with valid input "
        "beside a healthy client, on the paced stand-in and on Kokoro on CPU; default all (without junk, spoken, "
        "valid)",
    )
    parser.add_argument("--models", default="paced,kokoro", help="--only valid: paced, kokoro or both (paced,kokoro)")
    parser.add_argument("--attacks", help="--only valid: comma-separated attack names (default: all)")
    parser.add_argument(
        "--server-checkout", metavar="DIR", help="--only valid: run the servers from another checkout (a before)"
    )
    parser.add_argument("--repeats", type=int, default=3, help="--only junk/spoken: turns per case (3)")
    parser.add_argument("--flood-s", type=float, default=20.0, help="--only junk: least flood per turn, s (20)")
    parser.set_defaults(handler=_run)


# ---- the run ------------------------------------------------------------------------------------------


@dataclass
class AbuseReport:
    settings: dict[str, object]
    phases: dict[str, object] = field(default_factory=dict)
    memory: dict[str, dict[str, float]] = field(default_factory=dict)
    log: dict[str, object] = field(default_factory=dict)
    alive_after: bool = False
    ping_after: int | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "settings": self.settings,
            "phases": self.phases,
            "memory_mib": self.memory,
            "log": self.log,
            "alive_after": self.alive_after,
            "ping_after": self.ping_after,
        }


async def run_abuse(args: argparse.Namespace, progress) -> AbuseReport:  # type: ignore[no-untyped-def]
    import httpx
    from websockets.exceptions import ConnectionClosed

    from voicedesk.app.lab.abuse_fuzz import Target, fuzz
    from voicedesk.app.lab.abuse_load import (
        compute_requests,
        flood_beside_healthy,
        http_junk,
        session_cap,
        times_to_first_audio,
    )
    from voicedesk.app.lab.abuse_transport import header_bombs, oversized_frames, slowloris
    from voicedesk.endpoint.settings import ServerSettings

    defaults = ServerSettings()
    report = AbuseReport(
        {
            "frames": args.frames,
            "slowloris": args.slowloris,
            "bomb_mb": args.bomb_mb,
            "rounds": args.rounds,
            "header_timeout_s": args.header_timeout,
            "device": args.device,
            "server": "voicedesk serve, default limits",
        }
    )
    with tempfile.TemporaryDirectory(prefix="voicedesk-abuse-") as folder:
        server = start_server(args.device, args.header_timeout, Path(folder))
        try:
            progress("starting voicedesk serve (the model loads in the background)…")
            await wait_ready(server)
            target = Target("127.0.0.1", server.port)
            await times_to_first_audio(target, 1, HEALTHY_TEXT)  # warm
            report.memory["before"] = rss_mib(server.process.pid)

            def phase(name: str, value: object) -> None:
                report.phases[name] = value
                report.memory[f"after {name}"] = rss_mib(server.process.pid)
                progress(f"{name}: {json.dumps(value)[:300]}")

            log_before = server.log_bytes()
            progress(f"fuzzing: {args.frames} mutated frames over 4 sessions…")
            fuzzed = await fuzz(
                target,
                args.frames,
                4,
                args.seed,
                defaults.connection.frames_per_s,
                defaults.connection.frame_burst,
                defaults.connection.max_frame_bytes,
            )
            report.log["bytes_during_fuzz"] = server.log_bytes() - log_before
            phase("fuzz", fuzzed.to_json())
            phase("http_junk", dict(await http_junk(target, 200, args.seed)))
            phase("header_bombs", [b.to_json() for b in await header_bombs(target, args.bomb_mb * 1_000_000)])

            async def healthy_meanwhile() -> dict[str, object]:
                """A new client from 127.0.0.1, retrying while the connection cap is full."""
                began, refused = time.monotonic(), 0
                async with httpx.AsyncClient(timeout=30) as client:
                    while True:
                        try:
                            ping = (await client.get(target.http_url + "/ping")).status_code
                            ttfa = (await times_to_first_audio(target, 1, HEALTHY_TEXT))[0]
                            break
                        except (httpx.TransportError, OSError, ConnectionClosed):
                            refused += 1
                            if time.monotonic() - began > 4 * args.header_timeout:
                                return {"served": False, "refused": refused}
                            await asyncio.sleep(0.5)
                return {
                    "served": True,
                    "ping": ping,
                    "refused_first": refused,
                    "ttfa_s": round(ttfa, 3),
                    "served_after_s": round(time.monotonic() - began, 3),
                }

            hold_s = args.header_timeout + 5
            for name, sources in (
                ("slowloris, one address", ["127.0.0.2"]),
                ("slowloris, ten addresses", [f"127.0.0.{i}" for i in range(10, 20)]),
            ):
                progress(f"{name}: {args.slowloris} connections for {hold_s:g} s…")
                result, healthy = await slowloris(
                    target, args.slowloris, sources, hold_s, 1.0, healthy_meanwhile, args.header_timeout / 2
                )
                phase(name, {**result.to_json(), "healthy_client_meanwhile": healthy})
            # Four addresses, so that each stays within its share of sessions (the frames, not the cap, are measured).
            frames = await oversized_frames(target, 16, 17 * 2**20, [f"127.0.0.{5 + i}" for i in range(4)])
            phase("17 MiB frames", frames.to_json())
            phase("compute", [r.to_json() for r in await compute_requests(target)])
            cap = (defaults.max_sessions_per_client or 8) + 1
            phase("sessions from one address", dict(await session_cap(target, cap)))
            progress(f"flood beside a healthy client: {args.rounds} requests alone, then {args.rounds} during…")
            flooded = await flood_beside_healthy(target, args.rounds, HEALTHY_TEXT, min_flood_s=25.0)
            phase("flood", flooded.to_json())

            async with httpx.AsyncClient(timeout=30) as client:
                report.ping_after = (await client.get(target.http_url + "/ping")).status_code
            report.alive_after = server.alive
            report.memory["after"] = rss_mib(server.process.pid)
        finally:
            server.stop()
            text = server.log_text()
            report.log.update(
                total_bytes=len(text.encode()),
                lines=text.count("\n"),
                tracebacks=text.count("Traceback"),
                refusal_lines=[line for line in text.splitlines() if "refused new connections" in line],
            )
    return report


def _run(args: argparse.Namespace) -> int:
    from voicedesk.app.lab.abuse_flow import format_flow, run_flow

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 8192)), hard))
    progress = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    only = getattr(args, "only", "all")
    if only == "junk":
        from voicedesk.app.lab.abuse_side_by_side import format_junk, junk_side_by_side

        junk = asyncio.run(junk_side_by_side(args.device, args.repeats, args.rounds, args.flood_s, progress))
        if args.json:
            Path(args.json).write_text(json.dumps({"junk": junk}, indent=2) + "\n")
        print("\n".join(format_junk(junk)))
        return 0
    if only == "spoken":
        from voicedesk.app.lab.abuse_side_by_side import format_spoken, spoken_side_by_side

        spoken = asyncio.run(spoken_side_by_side(args.repeats, args.rounds, progress))
        if args.json:
            Path(args.json).write_text(json.dumps({"spoken": spoken}, indent=2) + "\n")
        print("\n".join(format_spoken(spoken)))
        return 0
    if only == "valid":
        return _run_valid(args, progress)
    flow = asyncio.run(run_flow(args.rounds, progress)) if only in ("all", "flow") else None
    if only == "flow":
        if args.json:
            Path(args.json).write_text(json.dumps({"flow": flow}, indent=2) + "\n")
        print("\n".join(format_flow(flow)))  # type: ignore[arg-type]
        return 0 if flow_passed(flow) else 1  # type: ignore[arg-type]
    report = asyncio.run(run_abuse(args, progress))
    if flow is not None:
        report.phases["flow"] = flow
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_json(), indent=2) + "\n")
    print(format_report(report))
    if flow is not None:
        print("\n".join(format_flow(flow)))
    return 0 if passed(report) and (flow is None or flow_passed(flow)) else 1


def _run_valid(args: argparse.Namespace, progress) -> int:  # type: ignore[no-untyped-def]
    from voicedesk.app.lab.abuse_valid import ATTACKS, GOAL_RATIO, format_valid, run_valid

    names = [n.strip() for n in args.attacks.split(",")] if args.attacks else list(ATTACKS)
    unknown = [n for n in names if n not in ATTACKS]
    if unknown:
        print(f"unknown attack(s) {unknown}; known: {', '.join(ATTACKS)}", file=sys.stderr)
        return 2
    models = [m.strip() for m in args.models.split(",")]
    report = asyncio.run(run_valid(models, names, args.rounds, args.server_checkout, progress))
    if args.json:
        Path(args.json).write_text(json.dumps({"valid": report}, indent=2, ensure_ascii=False) + "\n")
    print("\n".join(format_valid(report)))
    runs = [run for attacks in report.values() for name, run in attacks.items() if name != "server log"]
    met = all(
        run["ratio"] is not None and run["ratio"] <= GOAL_RATIO and "queue_saturated" not in run["refused_during"]
        for run in runs
    )
    return 0 if met else 1


def flow_passed(flow: dict[str, object]) -> bool:
    """Every word of every fast agent spoken in order and flushed, without error (the timings are reported)."""
    runs = [v for k, v in flow.items() if k.startswith("fast agent")]
    return all(r["in_order"] and r["flushed"] and not r["errors"] for r in runs)  # type: ignore[index]


def passed(report: AbuseReport) -> bool:
    fuzz = report.phases.get("fuzz", {})
    return (
        report.alive_after
        and report.ping_after == 200
        and fuzz.get("unanswered") == 0  # type: ignore[union-attr]
        and fuzz.get("internal") == 0  # type: ignore[union-attr]
        and fuzz.get("sessions_usable_after") == fuzz.get("sessions")  # type: ignore[union-attr]
    )


def format_report(report: AbuseReport) -> str:
    phases = report.phases
    fuzz = phases["fuzz"]
    flood = phases["flood"]
    lines = [
        "voicedesk bench abuse — a voicedesk serve subprocess with default limits, attacked from this machine",
        "",
        f"fuzzing     {fuzz['frames_sent']} frames over {fuzz['sessions']} sessions: {fuzz['frames_answered']} "
        f"answered, {fuzz['unanswered']} unanswered, {fuzz['internal']} internal; {fuzz['sessions_usable_after']}"
        f"/{fuzz['sessions']} sessions spoke afterwards ({fuzz['elapsed_s']} s); "
        f"log written meanwhile: {report.log.get('bytes_during_fuzz', 0):,} bytes",
        f"            errors: {fuzz['error_codes']}",
        f"HTTP junk   {phases['http_junk']}",
    ]
    for bomb in phases["header_bombs"]:
        lines.append(
            f"bomb        {bomb['name']}: {bomb['status']} {bomb['code']} after the client had written "
            f"{bomb['sent_before_refusal'] / 1e6:.1f} MB of {bomb['planned_bytes'] / 1e6:.0f} MB"
        )
    for name in ("slowloris, one address", "slowloris, ten addresses"):
        wave = phases[name]
        lines.append(
            f"slowloris   {wave['connections']} from {wave['sources']} address(es): {wave['outcomes']}, last closed "
            f"after {wave['closed_after_s_max']} s; a healthy client meanwhile: {wave['healthy_client_meanwhile']}"
        )
    frames = phases["17 MiB frames"]
    lines.append(f"17 MiB      {frames['connections']} frames at once: close codes {frames['close_codes']}")
    for refusal in phases["compute"]:
        lines.append(
            f"compute     {refusal['what']}: {refusal['status'] or ''} {refusal['code']} in {refusal['elapsed_s']} s"
        )
    lines.append(f"sessions    from one address: {phases['sessions from one address']}")
    ratio = flood["median_ratio"]
    lines += [
        f"flood       healthy time to first audio alone {flood['healthy_ttfa_alone_s']} s, during the flood "
        f"{flood['healthy_ttfa_during_s']} s: median ratio {ratio} (goal ≤ {FLOOD_GOAL_RATIO}: "
        f"{'met' if ratio <= FLOOD_GOAL_RATIO else 'NOT met'})",
        f"            the flooder: {flood['flood']}",
        "",
        "memory (MiB): " + ", ".join(f"{k} {v.get('VmRSS')}" for k, v in report.memory.items()),
        f"peak RSS (VmHWM) {report.memory['after'].get('VmHWM')} MiB",
        f"refused connections (server log): {report.log.get('refusal_lines')}",
        f"server log: {report.log.get('total_bytes', 0):,} bytes, {report.log.get('tracebacks')} tracebacks; "
        f"alive afterwards: {report.alive_after}, /ping {report.ping_after}",
    ]
    return "\n".join(lines)
