"""``voicedesk bench lab|streaming|first-cut|seed|ab|concurrency|transport|cold|capacity|server``: the latency lab
(docs/bench.md). ``server`` is an alias: the concurrency and transport scenarios against an endpoint.

Registration stays import-light (no torch, no engine code) so ``voicedesk --help`` is fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from voicedesk.engine.engine_spec import add_engine_options, add_session_options
from voicedesk.engine.errors import UsageError

SUBCOMMANDS = {
    "lab": "run the selected scenarios (default: all but capacity) into one report",
    "streaming": "agent's first token → first audible sample, streaming vs generate-then-speak (ratio)",
    "first-cut": "first audio of a first sentence at 20 and 80 tokens/s per first-cut policy: clause, phrase, "
    "at the 12th word (local engine)",
    "seed": "three sentences on one persistent session: one audio segment per sentence",
    "ab": "the same text through --engine and --engine-b in alternation, per-sentence latency side by side",
    "concurrency": "1, 2, 4 … sessions at once: p50/p95 time to first audio, session open time and stalls per level",
    "transport": "wire bytes per second of audio, binary frames vs SSE/base64",
    "cold": "the first request after start (model load, warm-up) apart from the steady state",
    "capacity": "ramp sessions until time to first audio p95 passes --target-ms: sessions per instance "
    "(the number for `voicedesk deploy --target-sessions`)",
    "server": "alias of `bench lab --scenarios concurrency,transport` against an endpoint: --url URL, or one "
    "started in-process around the local model (--serve)",
}
ALL = ("cold", "streaming", "first-cut", "seed", "ab", "concurrency", "transport", "capacity")
DEFAULT = ("cold", "streaming", "seed", "ab", "concurrency", "transport")
"""What ``bench lab`` runs without --scenarios (capacity ramps until a target is passed: asked for by name)."""
SERVER_SCENARIOS = ("concurrency", "transport")


def register_bench(subparsers: argparse._SubParsersAction) -> None:
    common = argparse.ArgumentParser(add_help=False)
    add_engine_options(common)
    add_engine_options(common, "--engine-b", side="b")  # the A/B scenario's B side; unset options follow A's
    add_session_options(common, speed=False)
    common.add_argument("--repeat", type=int, default=3, help="repeats of each measurement (default 3)")
    common.add_argument("--text-file", type=Path, help="the agent's reply (default: a short console reply)")
    common.add_argument("--tokens-per-s", type=float, default=20.0, help="the scripted agent's pace (default 20)")
    common.add_argument("--sessions", default="1,2,4", help="concurrency levels (default 1,2,4)")
    common.add_argument(
        "--arrival",
        default="spread",
        help="concurrency, capacity: 'spread' (requests at random moments within one request's time; default), "
        "'together' (all at once) or 'spread,together'",
    )
    common.add_argument("--server-url", help="transport: an endpoint's http://HOST:PORT (default: the engine's)")
    common.add_argument(
        "--serve",
        action="store_true",
        help="start the endpoint in-process on 127.0.0.1 around the local model and measure it through the "
        "websocket engine",
    )
    common.add_argument(
        "--target-ms", type=float, default=500.0, help="capacity: the time to first audio p95 to keep (default 500)"
    )
    common.add_argument("--max-sessions", type=int, default=32, help="capacity: the ramp's ceiling (default 32)")
    common.add_argument("--play", action="store_true", help="play the speech to time its first sample at the DAC")
    common.add_argument("--output-device", help="with --play: PortAudio output device name or index")
    common.add_argument(
        "--json", nargs="?", const="-", metavar="PATH", help="the report as JSON: to stdout, or to PATH"
    )
    common.add_argument("--plot", type=Path, metavar="PNG", help="draw the waterfall and comparison to this file")
    for name, help_text in SUBCOMMANDS.items():
        parser = subparsers.add_parser(name, parents=[common], help=help_text, description=help_text)
        if name == "lab":
            parser.add_argument(
                "--scenarios",
                default=",".join(DEFAULT),
                help=f"comma-separated subset of {','.join(ALL)} (default: all but capacity)",
            )
        if name == "server":
            parser.add_argument("--url", help="a running server, http://HOST:PORT (= --engine websocket URL)")
            parser.add_argument("--rounds", type=int, help="requests per session per level (= --repeat)")
            parser.add_argument("--arrivals", help="spread and/or together (= --arrival; default both)")
            parser.add_argument("--text", help="what each request says (instead of --text-file)")
        parser.set_defaults(handler=_run, lab_command=name)


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from voicedesk.app.lab.main import run_from_args

    if args.lab_command == "server":
        _server_alias(args)
    names = _names(args)
    progress = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731 - progress goes to stderr
    document = asyncio.run(run_from_args(args, names, progress))
    if args.json == "-":
        print(json.dumps(document, indent=2))
    else:
        from voicedesk.app.lab.table import format_lab

        print(format_lab(document))
        if args.json:
            Path(args.json).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
            progress(f"bench: JSON written to {args.json}")
    if args.plot:
        from voicedesk.app.lab.plot import draw_lab

        draw_lab(document, args.plot)
        progress(f"bench: plot written to {args.plot}")
    failed = [s["name"] for s in document["scenarios"] if (s["skipped"] or "").startswith("failed")]
    return 1 if failed else 0


def _names(args: argparse.Namespace) -> list[str]:

    if args.lab_command == "server":
        return list(SERVER_SCENARIOS)
    if args.lab_command != "lab":
        return [args.lab_command]
    names = [n.strip() for n in args.scenarios.split(",") if n.strip()]
    unknown = [n for n in names if n not in ALL]
    if unknown or not names:
        raise UsageError(f"--scenarios takes names from {','.join(ALL)}; got {args.scenarios!r}.")
    return names


def _server_alias(args: argparse.Namespace) -> None:
    """``bench server``'s own options, in the lab's terms (it measured the same things before the lab had them)."""
    if args.url:
        args.engine = ["websocket", args.url]
        args.server_url = args.server_url or args.url
    elif args.engine in (None, ["local"]):
        args.serve = True
    if args.rounds is not None:
        args.repeat = args.rounds
    args.arrival = args.arrivals or "spread,together"
    args.sessions = f"1,{args.sessions}"  # one session alone is the goal's baseline and times the spread window
