"""Helpers shared by the app's tests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from voicedesk.engine.engine_spec import EngineSpec
from voicedesk.engine.factory import open_engine

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def where_tasks_wait(loop: asyncio.AbstractEventLoop) -> str:
    """Each unfinished task and the chain of awaits it is stopped in (innermost last), for a wait that never ended."""
    lines = []
    for task in asyncio.all_tasks(loop):
        chain, awaited = [], task.get_coro()
        while awaited is not None and (frame := getattr(awaited, "cr_frame", None)) is not None:
            chain.append(f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno} {frame.f_code.co_name}")
            awaited = getattr(awaited, "cr_await", None)
        lines.append(f"{task.get_name()}: " + " → ".join(chain) + (f" → {awaited!r}" if awaited is not None else ""))
    return "\n".join(sorted(lines)) or "no task"


def opener_for(synthesizer: object) -> Callable:
    """Opens engines as the app does, except that 'local' reuses the suite's one loaded model."""

    async def opener(spec: EngineSpec):
        if spec.kind == "local":
            from voicedesk.engine.local import LocalEngine

            return LocalEngine(synthesizer)
        return await open_engine(spec)

    return opener


async def until(
    condition: Callable[[], object], within_s: float = 120.0, describe: Callable[[], object] | None = None
) -> None:
    """Waits for a condition while Qt and asyncio run (never a fixed time: the model is slower than real
    time on a shared 2-core machine, so everything is awaited by what it waits for)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    while not condition():
        if loop.time() > deadline:
            raise TimeoutError("condition not met in time" + (f": {describe()}" if describe else ""))
        await asyncio.sleep(0.02)
