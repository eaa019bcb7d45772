"""``voicedesk``: the desktop app with no arguments, or one of ``COMMANDS`` (in ``--help`` order).

Each command's module is imported only when the parser is built, so a command whose part is not installed says what
to install and ``--help`` stays fast; tests/test_architecture.py reads these names as the dispatch's imports."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from voicedesk.engine.errors import UsageError, VoicedeskError


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    module: str  # where register(subparsers) lives
    extra: str  # the install extra that brings what it needs: pip install 'voicedesk[EXTRA]'


COMMANDS: tuple[Command, ...] = (
    Command("app", "voicedesk.app.main", "desktop"),
    Command("say", "voicedesk.app.say_cli", "desktop"),
    Command("models", "voicedesk.engine.model.models_cli", "local"),  # models fetch|status|import
    Command("phonemes", "voicedesk.engine.model.phonemes_cli", "local"),
    Command("serve", "voicedesk.endpoint.serve_cli", "endpoint"),
    Command("wyoming", "voicedesk.endpoint.wyoming.cli", "endpoint"),
    Command("bench", "voicedesk.app.lab.bench_cli", "all"),  # bench engine|lab|streaming|…|flow|abuse
    Command("sagemaker-local", "voicedesk.app.lab.sagemaker_local.cli", "aws"),
    Command("deploy", "voicedesk.endpoint.deploy.cli", "aws"),  # deploy [status|destroy|image]
    Command("announcer", "voicedesk.app.house.cli", "all"),  # the console without a window (docs/house.md)
)
DEFAULT = "app"  # what `voicedesk` with no command runs


def _register_missing(subparsers: argparse._SubParsersAction, command: Command, missing: str) -> None:
    advice = (
        f"`voicedesk {command.name}` is not available in this install ({missing} is missing): "
        f"install it with pip install 'voicedesk[{command.extra}]'."
    )
    parser = subparsers.add_parser(command.name, help=f"(not installed: needs voicedesk[{command.extra}])")
    parser.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)

    def refuse(_args: argparse.Namespace) -> int:
        raise UsageError(advice)

    parser.set_defaults(handler=refuse)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="voicedesk",
        description="Low-latency streaming speech for voice agents (Kokoro-82M). "
        "Run with no arguments to open the desktop app.",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv: debug)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        try:
            module = importlib.import_module(command.module)
        except ModuleNotFoundError as exc:
            # A library, or the command's own part of voicedesk (app/ is not in the image); a typo inside voicedesk
            # fails loudly instead.
            missing = exc.name or command.module
            if missing.startswith("voicedesk.") and not (command.module + ".").startswith(missing + "."):
                raise
            _register_missing(subparsers, command, missing)
        else:
            module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING - 10 * min(args.verbose, 2),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not hasattr(args, "handler"):  # no command: the desktop app, with its default options
        args = parser.parse_args([*(argv if argv is not None else sys.argv[1:]), DEFAULT])
    try:
        return int(args.handler(args) or 0)
    except VoicedeskError as exc:
        print(f"voicedesk: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
