"""One way to open an engine from its ``EngineSpec``, for the CLI, the app and the benchmarks alike."""

from __future__ import annotations

import asyncio
import importlib.util

from voicedesk.engine.api import Engine
from voicedesk.engine.engine_spec import EngineSpec
from voicedesk.engine.errors import UsageError

LOCAL_PARTS = ("torch", "kokoro", "misaki")  # an install for remote engines only leaves them out (about 5 GB)


async def open_engine(spec: EngineSpec) -> Engine:
    if spec.kind == "local":
        if missing := [name for name in LOCAL_PARTS if importlib.util.find_spec(name) is None]:
            raise UsageError(
                f"The local engine needs {', '.join(missing)}, which this install does not have.",
                "Install them with pip install 'voicedesk[local]', or pick a websocket or sagemaker engine.",
            )
        from voicedesk.engine.local import LocalEngine
        from voicedesk.engine.model.kokoro_synth import KokoroSynthesizer

        synthesizer = await asyncio.to_thread(KokoroSynthesizer.load, spec.device)
        return LocalEngine(synthesizer)
    if spec.kind == "websocket":
        from voicedesk.engine.clients.websocket import WebSocketEngine

        return WebSocketEngine.from_spec(spec)
    if spec.kind == "sagemaker":
        from voicedesk.engine.clients.sagemaker import SageMakerEngine

        return SageMakerEngine.from_spec(spec)
    raise UsageError(f"Unknown engine kind {spec.kind!r}.", "Use local, websocket or sagemaker.")
