"""``voicedesk bench flow``: time and flow control in the session, measured with real clients against a real server
(docs/bench.md, "Flow control: `voicedesk bench flow`").

Scenarios (``--scenarios``, default all):
- ``pauses``: an agent sends a reply and goes quiet without a flush; last token → its audio, less synthesis
  (``app.lab.bench_flow_agents``). Goal ≤ 300 ms.
- ``pacing``: a reply streamed at 5, 20, 80 tokens/s; gaps a player would hear, and how much of each the agent's
  pace, the hold of finished text and synthesis do not explain. Goal: none unexplained.
- ``waiting``: a newcomer's time to first audio alone, behind three busy sessions, right after a client vanished
  mid-sentence (``app.lab.bench_flow_load``). Goals ≤ 2.0× and ≤ 1.5×.
- ``stalled``: server RSS under 16 clients that never read, for ``--minutes`` (default 5), the server in its own
  process. Goals: growth ≤ 200 MB, all slots back afterwards.

The first three run against an in-process server (uvicorn on 127.0.0.1 in a thread). ``--synth kokoro`` (default)
is Kokoro from the Hugging Face cache; ``--synth paced`` is a stand-in synthesizer making tones at
``--realtime-factor`` × real time (GPU-like by default), to see the server's own behaviour apart from the speed
of the machine. Registration stays import-light.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
from pathlib import Path

from voicedesk.engine.errors import UsageError
from voicedesk.engine.model.voices import DEFAULT_VOICE
from voicedesk.engine.protocol import BIDI_PATH

SCENARIOS = ("pauses", "pacing", "waiting", "stalled")


def register_bench(subparsers: argparse._SubParsersAction) -> None:
    help_text = "flow control: agents that pause, gap-free pacing, waiting behind others, stalled clients' RSS"
    parser = subparsers.add_parser("flow", help=help_text, description=help_text)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"subset of {','.join(SCENARIOS)}")
    parser.add_argument("--synth", choices=("kokoro", "paced"), default="kokoro", help="the server's synthesizer")
    parser.add_argument(
        "--realtime-factor", type=float, default=50.0, help="--synth paced: seconds of audio per second (default 50)"
    )
    parser.add_argument("--device", help="--synth kokoro: cpu, cuda or cuda:N (default: CUDA when present)")
    parser.add_argument("--voice", default=DEFAULT_VOICE)
    parser.add_argument("--repeat", type=int, default=3, help="repeats of the pause and waiting measurements")
    parser.add_argument("--rates", default="5,20,80", help="pacing: the agent's tokens per second (default 5,20,80)")
    parser.add_argument("--minutes", type=float, default=5.0, help="stalled: how long the load lasts (default 5)")
    parser.add_argument("--stalled-clients", type=int, default=16, help="stalled: clients that never read")
    parser.add_argument("--server-log", type=Path, default=Path("bench-flow-server.log"), help="stalled: its log")
    parser.add_argument("--json", nargs="?", const="-", metavar="PATH", help="the report as JSON: stdout, or PATH")
    parser.set_defaults(handler=_run)


def _parse(args: argparse.Namespace) -> tuple[list[str], list[float]]:

    names = [n.strip() for n in args.scenarios.split(",") if n.strip()]
    if not names or any(n not in SCENARIOS for n in names):
        raise UsageError(f"--scenarios takes names from {','.join(SCENARIOS)}; got {args.scenarios!r}.")
    try:
        rates = [float(r) for r in args.rates.split(",") if r.strip()]
    except ValueError:
        rates = []
    if not rates or min(rates) <= 0:
        raise UsageError(f"--rates takes positive numbers like 5,20,80; got {args.rates!r}.")
    return names, rates


def _run(args: argparse.Namespace) -> int:
    import asyncio

    names, rates = _parse(args)
    progress = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731 - progress goes to stderr
    document: dict[str, object] = {
        "bench": "flow",
        "command": " ".join(["voicedesk", *sys.argv[1:]]),
        "synth": args.synth if args.synth == "kokoro" else f"paced {args.realtime_factor:g}x",
        "machine": f"{platform.machine()}, {os.cpu_count()} CPU(s), {platform.system()} {platform.release()}",
        "repeat": max(1, args.repeat),
        "scenarios": {},
    }
    scenarios: dict[str, object] = document["scenarios"]  # type: ignore[assignment]
    in_process = [n for n in names if n != "stalled"]
    if in_process:
        document["device"] = _run_in_process(args, in_process, rates, scenarios, progress)
    if "stalled" in names:
        from voicedesk.app.lab.bench_flow_load import measure_stalled

        document.setdefault("device", "the server's own process (python -m voicedesk.app.lab.bench_serve)")
        server_args = ["--synth", args.synth, "--realtime-factor", str(args.realtime_factor)]
        server_args += ["--device", args.device] if args.device else []
        progress(f"bench flow: {args.stalled_clients} clients that never read, {args.minutes:g} min…")
        stalled = asyncio.run(
            measure_stalled(
                server_args,
                str(document["synth"]),
                args.stalled_clients,
                args.minutes,
                args.voice,
                progress,
                args.server_log,
            )
        )
        scenarios["stalled"] = stalled.to_json()
    if args.json == "-":
        print(json.dumps(document, indent=2))
    else:
        print(format_flow(document))
        if args.json:
            Path(args.json).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
            progress(f"bench flow: JSON written to {args.json}")
    return 0


def _run_in_process(args, names, rates, scenarios, progress) -> str:  # type: ignore[no-untyped-def]
    import asyncio
    from dataclasses import asdict

    from voicedesk.app.lab.bench_flow_agents import measure_pacing, measure_pauses
    from voicedesk.app.lab.bench_flow_load import measure_waiting
    from voicedesk.endpoint.runner import ServerThread
    from voicedesk.endpoint.server import create_app
    from voicedesk.endpoint.settings import ServerSettings

    if args.synth == "paced":
        from voicedesk.app.lab.paced_synth import PacedSynthesizer

        synthesizer = PacedSynthesizer(args.realtime_factor)
    else:
        from voicedesk.engine.model.kokoro_synth import KokoroSynthesizer

        progress("bench flow: loading the model…")
        synthesizer = KokoroSynthesizer.load(args.device)
    settings = ServerSettings(max_sessions=16, max_sessions_per_client=None)
    repeat = max(1, args.repeat)
    with ServerThread(create_app(synthesizer, settings)) as server:
        ws_url = server.ws_url + BIDI_PATH

        async def measure() -> None:
            if "pauses" in names:
                progress(f"bench flow: agents that pause, {repeat} repeat(s) per case…")
                found = await measure_pauses(ws_url, repeat, args.voice, progress)
                scenarios["pauses"] = [{**asdict(r), "beyond_synthesis_s": r.beyond_synthesis_s} for r in found]
            if "pacing" in names:
                progress("bench flow: gap-free delivery…")
                scenarios["pacing"] = [r.to_json() for r in await measure_pacing(ws_url, rates, args.voice, progress)]
            if "waiting" in names:
                progress(f"bench flow: waiting for the model, {repeat} round(s)…")
                scenarios["waiting"] = (await measure_waiting(ws_url, repeat, args.voice, progress)).to_json()

        asyncio.run(measure())
    return synthesizer.device


# ---- the table ------------------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value * 1000:.0f} ms"


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _verdict(ok: bool | None) -> str:
    return "—" if ok is None else ("met" if ok else "NOT met")


def format_flow(document: dict) -> str:  # type: ignore[type-arg]
    scenarios = document["scenarios"]
    lines = [f"bench flow: synthesizer {document['synth']} on {document.get('device', '?')}; {document['machine']}"]
    for name, section in (
        ("pauses", _pauses_lines),
        ("pacing", _pacing_lines),
        ("waiting", _waiting_lines),
        ("stalled", _stalled_lines),
    ):
        if name in scenarios:
            lines += ["", *section(scenarios[name], document)]
    return "\n".join(lines)


def _pauses_lines(cases: list[dict], document: dict) -> list[str]:  # type: ignore[type-arg]
    from voicedesk.app.lab.bench_flow_agents import PAUSE_GOAL_S

    lines = [
        f"agents that pause without a flush (medians of {document['repeat']}), from the last token (or from the end "
        "of the session's previous sentence, when it was still on the model: 'waited'): to the sentence handed to "
        f"the model, to its first audio, and that less its synthesis (goal ≤ {PAUSE_GOAL_S * 1000:.0f} ms)",
        f"  {'case':<22}{'waited':>9}{'handed':>9}{'to audio':>10}{'synthesis':>11}{'beyond':>9}  goal",
    ]
    for case in cases:
        beyond = _median(case["beyond_synthesis_s"])
        ok = None if beyond is None else beyond <= PAUSE_GOAL_S
        waited, held = _ms(_median(case["waited_s"])), _ms(_median(case["held_s"]))
        errors = f"  ({len(case['errors'])} error(s): {case['errors'][0]})" if case["errors"] else ""
        lines.append(
            f"  {case['case']:<22}{waited:>9}{held:>9}{_ms(_median(case['to_audio_s'])):>10}"
            f"{_ms(_median(case['synthesis_s'])):>11}{_ms(beyond):>9}  {_verdict(ok)}{errors}"
        )
    return lines


def _pacing_lines(rates: list[dict], _document: dict) -> list[str]:  # type: ignore[type-arg]
    from voicedesk.app.lab.bench_flow_agents import UNEXPLAINED_GOAL_S

    lines = [
        "gap-free delivery: a player from the first audio; a gap is a wait of 20 ms or more; unexplained is what "
        "the agent's pace, the ≤ 250 ms hold of finished text and synthesis do not account for "
        f"(goal ≤ {UNEXPLAINED_GOAL_S * 1000:.0f} ms)",
        f"  {'tokens/s':>8}{'sentences':>10}{'audio':>8}{'1st audio':>11}{'gaps':>6}{'total':>9}{'longest':>9}"
        f"{'unexplained':>13}  goal",
    ]
    for rate in rates:
        ok = rate["max_unexplained_s"] <= UNEXPLAINED_GOAL_S and not rate["errors"]
        audio = f"{rate['audio_s']:.1f} s"
        lines.append(
            f"  {rate['tokens_per_s']:>8g}{rate['sentences']:>10}{audio:>8}{_ms(rate['first_audio_s']):>11}"
            f"{len(rate['gaps']):>6}{_ms(rate['gap_total_s']):>9}{_ms(rate['max_gap_s']):>9}"
            f"{_ms(rate['max_unexplained_s']):>13}  {_verdict(ok)}"
        )
    return lines


def _waiting_lines(waiting: dict, _document: dict) -> list[str]:  # type: ignore[type-arg]
    from voicedesk.app.lab.bench_flow_load import BEHIND_GOAL, VANISHED_GOAL

    lines = [
        "waiting for the model: a newcomer's time to first audio (medians), and its ratio to the time alone",
        f"  {'alone':<46}{_ms(_median(waiting['alone_s'])):>9}",
    ]
    for label, key, goal in (
        ("behind three sessions streaming long replies", "behind_busy", BEHIND_GOAL),
        ("right after a client vanished mid-sentence", "after_vanished", VANISHED_GOAL),
    ):
        ratio = waiting[f"{key}_ratio"]
        shown = "—" if ratio is None else f"{ratio:.2f}×"
        ok = None if ratio is None else ratio <= goal
        lines.append(f"  {label:<46}{_ms(_median(waiting[f'{key}_s'])):>9}{shown:>8}  goal ≤ {goal:g}×: {_verdict(ok)}")
    return lines


def _stalled_lines(stalled: dict, _document: dict) -> list[str]:  # type: ignore[type-arg]
    from voicedesk.app.lab.bench_flow_load import RSS_GOAL_MB

    drops, healthy, failures = stalled["drop_after_s"], stalled["healthy_ttfa_s"], stalled["healthy_failures"]
    back = f" (in {_ms(stalled['slots_back_s'])})" if stalled["slots_back_s"] is not None else ""
    return [
        f"{stalled['clients']} clients that never read, {stalled['minutes']:g} min: the server process's RSS",
        f"  before {stalled['baseline_mb']:.0f} MB, peak {stalled['peak_mb']:.0f} MB "
        f"(+{stalled['growth_mb']:.0f} MB), after {stalled['after_mb']:.0f} MB; "
        f"goal growth ≤ {RSS_GOAL_MB:.0f} MB: {_verdict(stalled['growth_mb'] <= RSS_GOAL_MB)}",
        f"  stalled sessions the server dropped: {stalled['sessions_dropped']} (held {_ms(_median(drops))} median, "
        f"{_ms(max(drops, default=None))} longest); most sessions at once: {stalled['max_sessions_seen']}",
        f"  all slots back afterwards: {_verdict(stalled['slots_back'])}{back}",
        f"  a healthy client meanwhile: {len(healthy)} served (time to first audio median "
        f"{_ms(_median(healthy))}), {len(failures)} failed" + (f" (first: {failures[0]})" if failures else ""),
    ]
