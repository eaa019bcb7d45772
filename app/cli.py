"""``voicedesk``: the desktop app with no arguments, or one of the commands listed in ``COMMANDS``.

``COMMANDS`` is the one list of what ``voicedesk`` can do, in the order ``--help`` shows it. Each command lives next
to the code it drives and adds itself with ``register(subparsers)``. Those modules import nothing heavy at the top
(no torch, Qt, Starlette, boto3: tests/app/test_commands.py checks), so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from types import ModuleType

from voicedesk.app import bench_cli, say_cli
from voicedesk.app.main import add_app_arguments
from voicedesk.endpoint import serve_cli
from voicedesk.endpoint.deploy import cli as deploy_cli
from voicedesk.endpoint.sagemaker_local import cli as sagemaker_local_cli
from voicedesk.endpoint.wyoming import cli as wyoming_cli
from voicedesk.engine.errors import VoicedeskError
from voicedesk.engine.model import models_cli, phonemes_cli

COMMANDS: tuple[ModuleType, ...] = (
    say_cli,  # say
    models_cli,  # models fetch|status|import
    phonemes_cli,  # phonemes
    serve_cli,  # serve
    wyoming_cli,  # wyoming
    bench_cli,  # bench engine|lab|streaming|…|flow|abuse
    sagemaker_local_cli,  # sagemaker-local
    deploy_cli,  # deploy [status|destroy|image]
)


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
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def _run_app(args: argparse.Namespace) -> int:
    from voicedesk.app.main import run_app

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
