"""Which engine to speak through, and the command-line options that say so, defined once so every command (``say``,
``bench``, ``wyoming``…) means the same by them. No heavy imports: ``--help`` stays fast."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from typing import Literal

from voicedesk.engine.errors import UsageError
from voicedesk.engine.events import DEFAULT_MAX_BUFFER_DELAY_MS, SessionConfig
from voicedesk.engine.model.voices import DEFAULT_VOICE
from voicedesk.engine.request_fields import MAX_BUFFER_DELAY_MS, MAX_SPEED, MIN_SPEED
from voicedesk.engine.text.frontend.lexicon import EMPTY_LEXICON, Lexicon, LexiconError, load_lexicon_file
from voicedesk.engine.text.frontend.settings import TextSettings

EngineKind = Literal["local", "websocket", "sagemaker"]
ENGINE_KINDS: tuple[EngineKind, ...] = ("local", "websocket", "sagemaker")
TOKEN_ENV = "VOICEDESK_TOKEN"
"""The bearer token of a ``voicedesk serve`` box, for servers and clients alike."""


@dataclass(frozen=True, slots=True)
class EngineSpec:
    kind: EngineKind = "local"
    target: str | None = None
    """websocket: ws(s)://host:port[/path]; sagemaker: endpoint name; local: unused."""
    device: str | None = None
    """local: 'cpu', 'cuda', 'cuda:1'; None picks CUDA when present."""
    token: str | None = None
    """websocket: bearer token for a lab box started with --token."""
    region: str | None = None
    profile: str | None = None
    variant: str | None = None
    options: dict[str, object] = field(default_factory=dict)

    def describe(self) -> str:
        return self.kind if self.kind == "local" else f"{self.kind} {self.target}"


def parse_engine_args(values: list[str] | None) -> EngineSpec:
    """``--engine local`` / ``--engine websocket URL`` / ``--engine sagemaker NAME`` (as argparse nargs='+')."""
    if not values:
        return EngineSpec()
    kind, *rest = values
    if kind not in ENGINE_KINDS:
        raise UsageError(f"Unknown engine {kind!r}.", "Use local, 'websocket URL' or 'sagemaker ENDPOINT'.")
    if kind == "local":
        if rest:
            raise UsageError("The local engine takes no target.", "Write just --engine local.")
        return EngineSpec()
    if len(rest) != 1:
        what = "a ws:// or wss:// URL" if kind == "websocket" else "an endpoint name"
        raise UsageError(f"The {kind} engine needs {what}.", f"Write --engine {kind} TARGET.")
    return EngineSpec(kind=kind, target=rest[0])  # type: ignore[arg-type]


def add_engine_options(parser: argparse.ArgumentParser, flag: str = "--engine", side: str = "") -> None:
    """``--engine KIND [TARGET]`` and its options; ``flag``/``side`` declare a second engine (``--engine-b``)."""
    suffix = f"-{side}" if side else ""
    which = f" (the {side.upper()} side)" if side else ""
    parser.add_argument(
        flag, nargs="+", metavar="KIND", help=f"local (default), 'websocket URL' or 'sagemaker ENDPOINT'{which}"
    )
    parser.add_argument(f"--device{suffix}", help="local engine: cpu, cuda or cuda:N (default: CUDA when present)")
    parser.add_argument(f"--token{suffix}", help=f"websocket engine: bearer token (default: ${TOKEN_ENV})")
    parser.add_argument(f"--region{suffix}", help="sagemaker engine: AWS region (default: the profile's)")
    parser.add_argument(f"--profile{suffix}", help="sagemaker engine: AWS profile (default: the usual chain)")
    parser.add_argument(f"--variant{suffix}", help="sagemaker engine: target production variant")


def spec_from_args(args: argparse.Namespace, flag: str = "engine", side: str = "") -> EngineSpec:
    """The engine the options describe; a second side's options it leaves unset follow the first side's."""
    suffix = f"_{side}" if side else ""
    spec = parse_engine_args(getattr(args, flag, None))

    def option(name: str) -> str | None:
        value = getattr(args, f"{name}{suffix}", None)
        return value if value is not None else getattr(args, name, None)

    token = option("token") or os.environ.get(TOKEN_ENV) or None
    return EngineSpec(
        kind=spec.kind,
        target=spec.target,
        device=option("device"),
        token=token if spec.kind == "websocket" else None,
        region=option("region"),
        profile=option("profile"),
        variant=option("variant"),
    )


def add_session_options(parser: argparse.ArgumentParser, speed: bool = True) -> None:
    """``--voice``, ``--speed`` and ``--max-buffer-delay``: how a session speaks."""
    parser.add_argument(
        "--voice",
        default=DEFAULT_VOICE,
        help=f"a voice name, .pt path, or blend 'af_heart:0.7,am_adam:0.3' (default {DEFAULT_VOICE})",
    )
    if speed:
        parser.add_argument("--speed", type=float, default=1.0, help=f"{MIN_SPEED:g} to {MAX_SPEED:g} (default 1.0)")
    parser.add_argument(
        "--max-buffer-delay",
        type=float,
        default=DEFAULT_MAX_BUFFER_DELAY_MS,
        metavar="MS",
        help="how long text without a sentence end waits for more before it is spoken anyway "
        f"(default {DEFAULT_MAX_BUFFER_DELAY_MS} ms; 0: at once)",
    )


def add_lexicon_option(parser: argparse.ArgumentParser, who: str) -> None:
    """``--lexicon FILE``: a JSON pronunciation lexicon (see README, "Pronunciations")."""
    parser.add_argument(
        "--lexicon",
        metavar="FILE",
        help=f'a JSON pronunciation lexicon ([{{"word": "Siobhan", "phonemes": "ʃɪvˈɔn"}}, ...]) for {who}; '
        "a session's own entries (the config message's 'lexicon') override it word by word",
    )


def lexicon_from_args(args: argparse.Namespace) -> Lexicon:
    """The ``--lexicon`` file, checked before anything starts; a bad entry is a usage error naming it."""
    path = getattr(args, "lexicon", None)
    if path is None:
        return EMPTY_LEXICON
    try:
        return load_lexicon_file(path)
    except LexiconError as exc:
        raise UsageError(f"--lexicon: {exc.message}", exc.advice) from None


def config_from_args(args: argparse.Namespace) -> SessionConfig:
    delay = args.max_buffer_delay
    if not 0 <= delay <= MAX_BUFFER_DELAY_MS:
        raise UsageError(
            f"--max-buffer-delay {delay:g} is out of range.", f"Give 0 to {MAX_BUFFER_DELAY_MS} milliseconds."
        )
    return SessionConfig(
        voice=args.voice,
        speed=getattr(args, "speed", 1.0),
        max_buffer_delay_ms=round(delay),
        text=TextSettings(lexicon=lexicon_from_args(args)),
    )
