"""``voicedesk bench lab|streaming|seed|ab|concurrency|transport|cold``: the latency lab (docs/bench.md).

Registration stays import-light (no torch, no engine code) so ``voicedesk --help`` is fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

SUBCOMMANDS = {
    "lab": "run the selected scenarios (default: all) into one report",
    "streaming": "agent's first token → first audible sample, streaming vs generate-then-speak (ratio)",
    "seed": "three sentences on one persistent session: one audio segment per sentence",
    "ab": "the same text through --engine and --engine-b in alternation, per-sentence latency side by side",
    "concurrency": "1, 2, 4 … sessions at once: p50/p95 time to first audio and stalls per level",
    "transport": "wire bytes per second of audio, binary frames vs SSE/base64",
    "cold": "the first request after start (model load, warm-up) apart from the steady state",
}
ALL = ("cold", "streaming", "seed", "ab", "concurrency", "transport")


def register_bench(subparsers: argparse._SubParsersAction) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--engine", nargs="+", metavar="KIND", default=["local"], help="local | websocket URL | sagemaker ENDPOINT"
    )
    common.add_argument("--engine-b", nargs="+", metavar="KIND", help="the B side of the A/B scenario (same forms)")
    common.add_argument("--device", help="local engine: cpu, cuda or cuda:N (default: CUDA when present)")
    common.add_argument("--token", help="websocket engine / server: bearer token (default: $VOICEDESK_TOKEN)")
    common.add_argument("--repeat", type=int, default=3, help="repeats of each measurement (default 3)")
    common.add_argument("--text-file", type=Path, help="the agent's reply (default: a short console reply)")
    common.add_argument("--tokens-per-s", type=float, default=20.0, help="the scripted agent's pace (default 20)")
    common.add_argument("--voice", default="af_heart")
    common.add_argument("--sessions", default="1,2,4", help="concurrency levels (default 1,2,4)")
    common.add_argument(
        "--arrival",
        choices=("spread", "together"),
        default="spread",
        help="concurrency: requests at random moments within one request's time (default), or all at once",
    )
    common.add_argument("--server-url", help="transport: an endpoint's http://HOST:PORT (default: the engine's)")
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
                "--scenarios", default=",".join(ALL), help=f"comma-separated subset of {','.join(ALL)} (default all)"
            )
        parser.set_defaults(handler=_run, lab_command=name)


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from app.bench_lab.main import run_from_args

    names = _names(args)
    progress = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731 - progress goes to stderr
    document = asyncio.run(run_from_args(args, names, progress))
    if args.json == "-":
        print(json.dumps(document, indent=2))
    else:
        from app.bench_lab.table import format_lab

        print(format_lab(document))
        if args.json:
            Path(args.json).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
            progress(f"bench: JSON written to {args.json}")
    if args.plot:
        from app.bench_lab.plot import draw_lab

        draw_lab(document, args.plot)
        progress(f"bench: plot written to {args.plot}")
    failed = [s["name"] for s in document["scenarios"] if (s["skipped"] or "").startswith("failed")]
    return 1 if failed else 0


def _names(args: argparse.Namespace) -> list[str]:
    from engine.errors import ErrorCode, VoicedeskError

    if args.lab_command != "lab":
        return [args.lab_command]
    names = [n.strip() for n in args.scenarios.split(",") if n.strip()]
    unknown = [n for n in names if n not in ALL]
    if unknown or not names:
        raise VoicedeskError(
            ErrorCode.BAD_MESSAGE, f"--scenarios takes names from {','.join(ALL)}; got {args.scenarios!r}."
        )
    return names
