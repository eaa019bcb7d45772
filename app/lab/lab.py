"""Runs the selected scenarios in order on one context and gathers their results (I/O orchestration only)."""

from __future__ import annotations

import logging
import os
import platform
from typing import Any

from voicedesk.app.lab.ab import run_ab
from voicedesk.app.lab.capacity import run_capacity
from voicedesk.app.lab.concurrency import run_concurrency
from voicedesk.app.lab.context import LabContext
from voicedesk.app.lab.report import SCENARIO_ORDER
from voicedesk.app.lab.runs import ScenarioResult
from voicedesk.app.lab.scenarios import Scenario, run_cold, run_seed, run_streaming
from voicedesk.app.lab.transport import run_transport
from voicedesk.engine.errors import ErrorCode, VoicedeskError

log = logging.getLogger(__name__)

SCENARIOS: dict[str, Scenario] = {
    "cold": run_cold,
    "streaming": run_streaming,
    "seed": run_seed,
    "ab": run_ab,
    "concurrency": run_concurrency,
    "transport": run_transport,
    "capacity": run_capacity,
}
assert tuple(SCENARIOS) == SCENARIO_ORDER
STOPPING_CODES = {
    ErrorCode.UNKNOWN_VOICE,
    ErrorCode.BAD_SPEED,
    ErrorCode.UNAUTHORIZED,
    ErrorCode.WEIGHTS_MISSING,
    ErrorCode.DEVICE_UNAVAILABLE,
}
"""Errors of the options themselves: every scenario would fail the same way, so the run stops and says why."""


async def run_lab(ctx: LabContext, names: list[str]) -> list[ScenarioResult]:
    """Runs ``names`` (in ``SCENARIO_ORDER``); a scenario that fails is reported as skipped and the rest go on.

    An engine that cannot be opened at all (weights missing, endpoint unreachable) or an option every scenario
    would trip on (an unknown voice, a refused token) ends the run with its ``VoicedeskError``, which says what
    to do.
    """
    unknown = sorted(set(names) - set(SCENARIOS))
    if unknown:
        raise ValueError(f"unknown scenario(s) {', '.join(unknown)}; known: {', '.join(SCENARIOS)}")
    results = []
    try:
        for name in [n for n in SCENARIO_ORDER if n in names]:
            ctx.progress(f"bench: scenario {name}…")
            try:
                results.append(await SCENARIOS[name](ctx))
            except VoicedeskError as exc:
                if ctx.engine is None or exc.code in STOPPING_CODES:
                    raise
                results.append(_failed(name, f"{exc.code}: {exc.message}"))
            except Exception as exc:  # one broken scenario must not cost the others' numbers
                log.exception("bench scenario %s failed", name)
                results.append(_failed(name, f"{type(exc).__name__}: {exc}"))
    finally:
        await ctx.aclose()
    return results


def _failed(name: str, why: str) -> ScenarioResult:
    return ScenarioResult(name, name, skipped=f"failed: {why}")


def machine_facts(ctx: LabContext) -> dict[str, Any]:
    device = ctx.engine.info.device if ctx.engine is not None else None
    facts: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "device": device,
    }
    try:
        import torch

        facts["torch"] = torch.__version__
        facts["torch_threads"] = torch.get_num_threads()
    except ImportError:
        pass
    where = f"model on {device}" if device else "model remote"
    facts["summary"] = f"{where}, {facts['cpus']} CPUs, {platform.system()} {platform.machine()}"
    return facts
