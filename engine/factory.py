"""One way to get an engine from a description: ``local``, ``websocket URL`` or ``sagemaker ENDPOINT``.

The CLI, the app and the benchmarks all go through here, so every path is opened the same way.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Literal

from engine.api import Engine
from engine.errors import ErrorCode, VoicedeskError

EngineKind = Literal["local", "websocket", "sagemaker"]


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
    if kind not in ("local", "websocket", "sagemaker"):
        raise VoicedeskError(
            ErrorCode.BAD_MESSAGE, f"Unknown engine {kind!r}: use local, 'websocket URL' or 'sagemaker ENDPOINT'."
        )
    if kind == "local":
        if rest:
            raise VoicedeskError(ErrorCode.BAD_MESSAGE, "The local engine takes no target.")
        return EngineSpec()
    if len(rest) != 1:
        what = "a ws:// or wss:// URL" if kind == "websocket" else "an endpoint name"
        raise VoicedeskError(ErrorCode.BAD_MESSAGE, f"The {kind} engine needs {what}: --engine {kind} TARGET")
    return EngineSpec(kind=kind, target=rest[0])  # type: ignore[arg-type]


async def open_engine(spec: EngineSpec) -> Engine:
    if spec.kind == "local":
        from engine.kokoro_synth import KokoroSynthesizer
        from engine.local import LocalEngine

        synthesizer = await asyncio.to_thread(KokoroSynthesizer.load, spec.device)
        return LocalEngine(synthesizer)
    if spec.kind == "websocket":
        from engine.clients.websocket import WebSocketEngine

        return WebSocketEngine.from_spec(spec)
    if spec.kind == "sagemaker":
        from engine.clients.sagemaker import SageMakerEngine

        return SageMakerEngine.from_spec(spec)
    raise VoicedeskError(ErrorCode.BAD_MESSAGE, f"Unknown engine kind {spec.kind!r}")
