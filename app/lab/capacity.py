"""Scenario: capacity planning — how many sessions one instance serves before time to first audio p95 passes a
target. Its answer is the number to give ``voicedesk deploy --target-sessions``.

The ramp (``CapacityRamp``, pure) measures 1, 2, 4, 8 … sessions at once until p95 passes the target (or
``--max-sessions`` is reached), then bisects between the last level that met it and the first that did not.
Each level is the concurrency scenario's measurement (``app.lab.concurrency.measure_level``: the same
arrivals, spread by default, the same seed), repeated ``--repeat`` times; p95 is over all its utterances.
A level with a failed request (a server at its capacity refuses new requests with ``queue_saturated``) counts as
missing the target: its p95 is over the requests that were served.

Before and after, side by side: with ``--engine-b`` the same ramp runs against engine B too (e.g. the honest
stand-in served in-process as A, ``--prepare-workers 2`` as B), one after the other in one run, and the table shows
both answers. Against a lab server (``app.lab.bench_serve``) it also asks each for its per-sentence CPU time of each
stage (``GET /lab/stages``: front-end, G2P, forward, encode) and the load average, and shows them side by side.
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from voicedesk.app.lab.arrivals import new_rng, parse_arrivals, pattern_at
from voicedesk.app.lab.concurrency import measure_level, window_of
from voicedesk.app.lab.context import LabContext
from voicedesk.app.lab.runs import Run, ScenarioResult, group_summary, in_group
from voicedesk.engine.api import Engine

DEPLOY_OPTION = "voicedesk deploy --target-sessions"


@dataclass
class CapacityRamp:
    """Which level to measure next, and the answer once known (pure: it is told each level's p95)."""

    target_s: float
    max_sessions: int
    p95_s: dict[int, float | None] = field(default_factory=dict)
    """Measured levels → their p95 time to first audio (None: nothing measured, e.g. every request failed)."""
    failed: dict[int, int] = field(default_factory=dict)
    """Measured levels → requests that failed (refused with ``queue_saturated``, or broke): a level with any
    misses the target, since its p95 is over the requests that were served."""

    def __post_init__(self) -> None:
        if not self.target_s > 0:
            raise ValueError(f"the target must be a positive number of seconds; got {self.target_s}")
        if self.max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1; got {self.max_sessions}")

    def met(self, sessions: int) -> bool:
        p95 = self.p95_s[sessions]
        return p95 is not None and p95 <= self.target_s and not self.failed.get(sessions, 0)

    def record(self, sessions: int, p95_s: float | None, failed: int = 0) -> None:
        self.p95_s[sessions] = p95_s
        self.failed[sessions] = failed

    @property
    def bounds(self) -> tuple[int, int | None]:
        """(highest level that met the target with every lower level meeting it too, or 0; lowest level that
        missed it, or None)."""
        missed = sorted(n for n in self.p95_s if not self.met(n))
        first_miss = missed[0] if missed else None
        passed = [n for n in self.p95_s if self.met(n) and (first_miss is None or n < first_miss)]
        return max(passed, default=0), first_miss

    def next_level(self) -> int | None:
        """The next level to measure, or None when the answer is known."""
        good, bad = self.bounds
        if bad is None:
            if good >= self.max_sessions:
                return None
            return 1 if good == 0 else min(2 * good, self.max_sessions)
        return None if bad - good <= 1 else (good + bad) // 2

    @property
    def sessions_per_instance(self) -> int:
        return self.bounds[0]

    @property
    def limited_by(self) -> str:
        """'target' (the ramp found where p95 passes it) or 'max_sessions' (it never did, up to the maximum)."""
        return "max_sessions" if self.bounds[1] is None else "target"


async def run_capacity(ctx: LabContext) -> ScenarioResult:
    cfg = ctx.config
    result = ScenarioResult(
        "capacity",
        f"Capacity: sessions per instance while time to first audio p95 <= {cfg.target_ttfa_s * 1000:.0f} ms",
    )
    engine = await ctx.get_engine()
    result.summary = await _ramp(ctx, engine, ctx.engine_label, "", result)
    engine_b = await ctx.get_engine_b()
    if engine_b is not None:
        result.summary["b"] = await _ramp(ctx, engine_b, ctx.engine_b_label or "B", "B: ", result)
    return result


async def _ramp(ctx: LabContext, engine: Engine, label: str, prefix: str, result: ScenarioResult) -> dict[str, Any]:
    cfg = ctx.config
    arrival = parse_arrivals(cfg.arrival)[0]
    ramp = CapacityRamp(cfg.target_ttfa_s, cfg.max_sessions)
    rng = new_rng()
    window_s: float | None = None
    while (n := ramp.next_level()) is not None:
        group = f"{prefix}{n} sessions"
        for i in range(cfg.repeat):
            ctx.progress(f"capacity: {prefix}{n} session(s), {pattern_at(n, arrival)}, repeat {i + 1}/{cfg.repeat}")
            measured = await measure_level(ctx, n, arrival, window_s, rng, f"capacity {group} #{i + 1}", engine)
            result.runs += [Run(group, i, record, extra) for record, extra in measured]
        if n == 1:
            window_s = window_of([run.record for run in in_group(result.runs, group)])
        summary = group_summary(in_group(result.runs, group))
        ttfa = summary["time_to_first_audio_s"]
        ramp.record(n, ttfa["p95"], summary["errors"])
        ctx.progress(f"capacity: {prefix}{n} session(s): p95 {_ms(ttfa['p95'])} (target {_ms(cfg.target_ttfa_s)})")
    rows = []
    for n in sorted(ramp.p95_s):
        summary = group_summary(in_group(result.runs, f"{prefix}{n} sessions"))
        rows.append(
            {
                "sessions": n,
                "arrival": pattern_at(n, arrival),
                "time_to_first_audio_s": summary["time_to_first_audio_s"],
                "errors": summary["errors"],
                "met": ramp.met(n),
            }
        )
    answer = ramp.sessions_per_instance
    if answer == 0:
        result.notes.append(
            f"{prefix}even one session alone misses the target: no session count meets it on this engine"
        )
    elif ramp.limited_by == "max_sessions":
        result.notes.append(
            f"{prefix}p95 stayed within the target up to --max-sessions {cfg.max_sessions}: the instance serves at "
            "least that many; raise --max-sessions to find its limit"
        )
    return {
        "target_ttfa_s": cfg.target_ttfa_s,
        "max_sessions": cfg.max_sessions,
        "arrival": arrival,
        "window_s": window_s,
        "levels": rows,
        "sessions_per_instance": answer,
        "limited_by": ramp.limited_by,
        "deploy": f"{DEPLOY_OPTION} {answer}" if answer else None,
        "measured_on": label,
        "stages": await asyncio.to_thread(server_stages, engine),
    }


def server_stages(engine: Engine) -> dict[str, Any] | None:
    """A lab server's per-stage figures (``app.lab.bench_serve``'s ``/lab/stages``); None from any other server."""
    url = getattr(getattr(engine, "settings", None), "url", None)
    if not isinstance(url, str) or not url.startswith(("ws://", "wss://")):
        return None
    parts = urllib.parse.urlsplit(url)
    scheme = "https" if parts.scheme == "wss" else "http"
    try:
        with urllib.request.urlopen(f"{scheme}://{parts.netloc}/lab/stages", timeout=10) as response:
            return json.loads(response.read())
    except (OSError, ValueError):
        return None


STAGES = ("front-end", "g2p", "forward", "encode")


def stage_rows(summaries: list[tuple[str, dict[str, Any]]]) -> list[list[str]]:
    """The per-stage table: one row per stage, p50/p95 CPU ms per sentence for each side that reported them."""
    sides = [(name or "server", s["stages"]) for name, s in summaries if s.get("stages")]
    if not sides:
        return []
    header = ["stage (ms per sentence)"]
    for name, _stages in sides:
        header += [f"{name} p50", f"{name} p95"]
    rows = [header]
    for stage in STAGES:
        row = [stage + (" (faked: wall)" if stage == "forward" else " (CPU)")]
        for _name, stages in sides:
            figures = stages["stages"].get(stage) or {}
            row += [_num(figures.get("p50_ms")), _num(figures.get("p95_ms"))]
        rows.append(row)
    workers = ", ".join(f"{name}: {stages['prepare_workers']}" for name, stages in sides)
    load = ", ".join(f"{name}: {' '.join(f'{x:.1f}' for x in stages['load_average'])}" for name, stages in sides)
    rows.append([f"prepare workers ({workers}); load average 1/5/15 min at the end ({load})"])
    return rows


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value * 1000:.0f} ms"


def capacity_line(summary: dict[str, Any]) -> str:
    """The answer in words (the table prints it; the number is the one ``--target-sessions`` takes)."""
    answer = summary["sessions_per_instance"]
    target = f"time to first audio p95 <= {summary['target_ttfa_s'] * 1000:.0f} ms"
    if answer == 0:
        return f"sessions per instance at {target}: 0 (one session alone misses it)"
    at_least = "at least " if summary["limited_by"] == "max_sessions" else ""
    return f"sessions per instance at {target}: {at_least}{answer}  → {summary['deploy']}"
