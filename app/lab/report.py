"""The lab's report as one JSON document (pure): scenario summaries, and every run's timeline in the
``voicedesk.timeline/1`` schema, so ``engine.measure.timeline.UtteranceTimeline.from_dict`` reads each run back.

Document (``schema`` = "voicedesk.bench-lab/1"; non-finite numbers are null):
    {schema, engine, engine_b, config: {...}, machine: {...}, dac: {available, why},
     scenarios: [{name, title, skipped, summary: {...}, notes: [...],
                  runs: [{group, repeat, segments: {seq: n}, errors, notes, extra?, timeline}]}]}
The table on stdout (``app.lab.table``) and the picture (``app.lab.plot``) are drawn from this
document only, so what is printed, plotted and exported is the same data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from voicedesk.app.lab.context import LabConfig
from voicedesk.app.lab.runs import ScenarioResult

LAB_SCHEMA = "voicedesk.bench-lab/1"
SCENARIO_ORDER = ("cold", "streaming", "seed", "ab", "concurrency", "transport", "capacity")
"""The order ``bench lab`` runs them: cold first, so its first request really is the first after start."""


def lab_document(
    results: Sequence[ScenarioResult],
    *,
    engine: str,
    engine_b: str | None,
    config: LabConfig,
    machine: dict[str, Any],
    dac: dict[str, Any],
) -> dict[str, Any]:
    return json_safe(
        {
            "schema": LAB_SCHEMA,
            "engine": engine,
            "engine_b": engine_b,
            "config": asdict(config),
            "machine": machine,
            "dac": dac,
            "scenarios": [result.to_dict() for result in results],
        }
    )


def json_safe(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def scenario(document: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((s for s in document["scenarios"] if s["name"] == name), None)
