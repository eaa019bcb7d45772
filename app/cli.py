"""``voicedesk``: the desktop app with no arguments, or one of the subcommands below.

Each subcommand lives next to the code it drives and registers itself through ``register(subparsers)``;
this module only assembles them. Registration must stay import-light (no torch, no Qt) so ``--help`` is fast.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from app.main import add_app_arguments
from engine.errors import VoicedeskError

# Modules that add subcommands, in the order --help lists them.
SUBCOMMAND_MODULES = [
    "app.say_cli",  # say
    "engine.models_cli",  # models fetch|status|import
    "endpoint.serve_cli",  # serve
    "endpoint.wyoming.cli",  # wyoming
    "app.bench_cli",  # bench engine|server|...
    "endpoint.sagemaker_local.cli",  # sagemaker-local
    "endpoint.deploy_cli",  # deploy [status|destroy|image]
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="voicedesk",
        description="Low-latency streaming speech for voice agents (Kokoro-82M). "
        "Run with no arguments to open the desktop app.",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv: debug)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    app_parser = subparsers.add_parser("app", help="open the desktop app (the default)")
    add_app_arguments(app_parser)  # app.main imports Qt only when the app runs
    app_parser.set_defaults(handler=_run_app)
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def _run_app(args: argparse.Namespace) -> int:
    from app.main import run_app

    return run_app(args)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING - 10 * min(args.verbose, 2),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    handler = getattr(args, "handler", _run_app)
    try:
        return int(handler(args) or 0)
    except VoicedeskError as exc:
        print(f"voicedesk: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
