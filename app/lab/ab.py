"""Scenario: A/B of engines — the same text through A and B in alternation (A B A B …), each request on a fresh
session, per-sentence and per-stage latency side by side.

``voicedesk bench ab`` and the app's A/B runner (``app.lab.ab_runs``) both run ``run_ab``; ``ab_summary`` is the one
place their percentiles come from (``app.lab.runs.group_summary`` → ``engine.measure.metrics.summarize``), so for
the same recorded timelines the app shows exactly the numbers the bench prints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from voicedesk.app.lab.context import LabContext
from voicedesk.app.lab.probe import whole_text
from voicedesk.app.lab.runs import Run, ScenarioResult, group_summary, in_group, p50, ratio
from voicedesk.app.lab.scenarios import speak_once
from voicedesk.engine.measure.metrics import summarize
from voicedesk.engine.measure.recorder import UtteranceRecord

SIDES = ("A", "B")
SAME_ENGINE_NOTE = "no --engine-b: B is the same engine (an A/A run: shows the run-to-run noise)"


def ab_schedule(repeat: int) -> list[tuple[int, str]]:
    """(repeat, side) in the order measured: A B A B …, so drift hits both sides alike."""
    return [(i, side) for i in range(repeat) for side in SIDES]


def ab_summary(runs: Sequence[Run], engines: dict[str, str]) -> dict[str, Any]:
    """The A/B figures of the runs measured so far (any prefix of the schedule: the app shows them as they come)."""
    runs_a, runs_b = in_group(runs, "A"), in_group(runs, "B")
    width = max((len(run.timeline.sentences) for run in runs), default=0)
    per_sentence = []
    for k in range(width):
        a = summarize(_nth_ttfa(run.record, k) for run in runs_a)
        b = summarize(_nth_ttfa(run.record, k) for run in runs_b)
        per_sentence.append({"index": k + 1, "A_ttfa_s": a, "B_ttfa_s": b, "ratio": ratio(b["p50"], a["p50"])})
    groups = {"A": group_summary(runs_a), "B": group_summary(runs_b)}
    return {
        "engines": dict(engines),
        "groups": groups,
        "per_sentence": per_sentence,
        "ratio": ratio(p50(groups["B"]), p50(groups["A"])),
        "ratio_of": "p50 time to first audio, B ÷ A",
    }


async def run_ab(ctx: LabContext, on_run: Callable[[ScenarioResult], None] | None = None) -> ScenarioResult:
    """Runs the schedule; ``on_run`` sees the result after every utterance (its summary is then up to date)."""
    cfg = ctx.config
    engine_a = await ctx.get_engine()
    engine_b = await ctx.get_engine_b()
    label_b = ctx.engine_b_label if engine_b is not None else f"{ctx.engine_label} again"
    result = ScenarioResult("ab", f"A/B: A = {ctx.engine_label}, B = {label_b}")
    if engine_b is None:
        engine_b = engine_a
        result.notes.append(SAME_ENGINE_NOTE)
    engines = {"A": (engine_a, ctx.engine_label), "B": (engine_b, label_b)}
    for i, side in ab_schedule(cfg.repeat):
        engine, name = engines[side]
        ctx.progress(f"ab: repeat {i + 1}/{cfg.repeat}: {side}")
        text = whole_text(cfg.text)
        record, open_s = await speak_once(ctx, text, f"{side} #{i + 1}", engine=engine, engine_label=name)
        result.runs.append(Run(side, i, record, {"session_open_s": open_s}))
        result.summary = ab_summary(result.runs, {"A": ctx.engine_label, "B": label_b})
        if on_run is not None:
            on_run(result)
    result.summary = ab_summary(result.runs, {"A": ctx.engine_label, "B": label_b})
    return result


def _nth_ttfa(record: UtteranceRecord, k: int) -> float | None:
    sentences = record.timeline.sentences
    return sentences[k].ttfa_s if k < len(sentences) else None
