"""From parsed options to a finished report: opens the engines, the player and the context, runs the lab."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from voicedesk.app.lab.arrivals import parse_arrivals
from voicedesk.app.lab.context import LabConfig, LabContext
from voicedesk.app.lab.lab import machine_facts, run_lab
from voicedesk.app.lab.report import lab_document
from voicedesk.engine.engine_spec import EngineSpec, spec_from_args
from voicedesk.engine.engine_spec import config_from_args as session_config_from_args
from voicedesk.engine.errors import ErrorCode, UsageError, VoicedeskError
from voicedesk.engine.factory import open_engine
from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker

DAC_OFF = "not playing (add --play to time the first sample at the DAC)"


def parse_levels(text: str) -> tuple[int, ...]:
    try:
        levels = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        levels = ()
    if not levels or levels[0] < 1:
        raise UsageError(f"--sessions takes positive integers like 1,2,4; got {text!r}.")
    return levels


def sentences_of(text: str, count: int = 3) -> tuple[str, ...]:
    """The first ``count`` whole sentences of a text (the seed's check speaks each as its own request)."""
    chunker = IncrementalSentenceChunker(early_first_fragment=False, min_sentence_chars=0)
    chunks = chunker.feed(text)
    rest = chunker.flush()
    return tuple([*chunks, *([rest] if rest else [])][:count])


def config_from_args(args: argparse.Namespace) -> LabConfig:
    if args.repeat < 1:
        raise UsageError(f"--repeat must be at least 1; got {args.repeat}.")
    if not args.tokens_per_s > 0:
        raise UsageError(f"--tokens-per-s must be above 0; got {args.tokens_per_s}.")
    if not args.target_ms > 0:
        raise UsageError(f"--target-ms must be above 0; got {args.target_ms:g}.")
    if args.max_sessions < 1:
        raise UsageError(f"--max-sessions must be at least 1; got {args.max_sessions}.")
    config = LabConfig(
        repeat=args.repeat,
        voice=args.voice,
        max_buffer_delay_ms=session_config_from_args(args).max_buffer_delay_ms,
        tokens_per_s=args.tokens_per_s,
        sessions=parse_levels(args.sessions),
        arrival=",".join(parse_arrivals(args.arrival)),
        target_ttfa_s=args.target_ms / 1000,
        max_sessions=args.max_sessions,
    )
    text = getattr(args, "text", None)  # bench server's --text
    if text is not None:
        if not text.strip():
            raise VoicedeskError(ErrorCode.EMPTY_TEXT, "--text is empty: give it what each request says.")
        return replace(config, text=text.strip(), seed_sentences=sentences_of(text))
    if args.text_file is None:
        return config
    try:
        text = args.text_file.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"Cannot read --text-file {args.text_file}: {exc}.") from None
    if not text:
        raise VoicedeskError(ErrorCode.EMPTY_TEXT, f"--text-file {args.text_file} is empty: give it the agent's reply.")
    return replace(config, text=text, seed_sentences=sentences_of(text))


def _opener(spec: EngineSpec) -> Callable[[], Any]:
    async def open_it() -> Any:
        return await open_engine(spec)

    return open_it


async def run_from_args(args: argparse.Namespace, names: list[str], progress: Callable[[str], None]) -> dict[str, Any]:
    config = config_from_args(args)
    spec = spec_from_args(args)
    spec_b = spec_from_args(args, "engine_b", "b") if args.engine_b else None
    if "ab" in names and spec_b is None and args.lab_command == "ab":
        progress("bench ab: no --engine-b given: comparing the engine with itself (A/A)")
    if args.serve and spec.kind != "local":
        raise UsageError(
            f"--serve starts an endpoint around the local model; it cannot measure --engine {spec.kind}. "
            "Leave out --serve to measure that engine directly.",
        )
    server_url = args.server_url or (spec.target if spec.kind == "websocket" else None)
    ctx = LabContext(
        config,
        _opener(spec),
        spec.describe(),
        _opener(spec_b) if spec_b else None,
        spec_b.describe() if spec_b else None,
        server_url=server_url,
        server_token=spec.token,
        progress=progress,
    )
    if args.serve:
        from voicedesk.app.lab.served import served_engine_opener

        widest = max(max(config.sessions), config.max_sessions if "capacity" in names else 0)
        ctx.open_engine = served_engine_opener(ctx, args.device, widest)
    dac: dict[str, Any] = {"available": False, "why": DAC_OFF}
    player = None
    if args.play:
        from voicedesk.app.lab.playback import LabPlayer
        from voicedesk.app.player import AudioDeviceError

        try:
            device = args.output_device
            device = int(device) if device is not None and device.isdigit() else device  # an index, or a name
            player = LabPlayer(device, config.prebuffer_s).open()
            ctx.player = player
            dac = {"available": True, "why": None}
        except AudioDeviceError as exc:
            dac = {"available": False, "why": f"no sound output: {exc.message}"}
            progress(f"bench: {dac['why']} — measuring without the DAC stages")
    try:
        results = await run_lab(ctx, names)
    finally:
        if player is not None:
            player.close()
    return lab_document(
        results,
        engine=ctx.engine_label,
        engine_b=ctx.engine_b_label,
        config=config,
        machine=machine_facts(ctx),
        dac=dac,
    )
