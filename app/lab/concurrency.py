"""Scenario: 1, 2, 4 … sessions at once; p50/p95 time to first audio, session open time and stalls per level.

This is the one concurrency measurement (``voicedesk bench concurrency``, and ``voicedesk bench server``, its
alias against an endpoint): arrivals from ``app.lab.arrivals``, one goal check (``goal_check``). Each
utterance's time to first audio is from its own request. The goal (Kokoro-FastAPI issue #115, where a second
stream waited for the whole of the first): p95 at 4 sessions ≤ 2 × p50 at the lowest level, for spread arrivals;
the scheduler makes that possible by putting every utterance's first sentence ahead of other sessions' later
sentences. Session open time is the connection's accept time for a remote engine (goal < 250 ms).

``measure_level`` is shared with the capacity scenario (``app.lab.capacity``).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from typing import Any

from voicedesk.app.lab.arrivals import arrival_delays, new_rng, parse_arrivals, pattern_at
from voicedesk.app.lab.context import LabContext
from voicedesk.app.lab.probe import SessionProbe, whole_text
from voicedesk.app.lab.runs import Run, ScenarioResult, group_summary, in_group, ratio
from voicedesk.engine.api import Engine, Session
from voicedesk.engine.local import LocalEngine
from voicedesk.engine.measure.metrics import percentile, summarize
from voicedesk.engine.measure.recorder import UtteranceRecord

GOAL = "p95 at 4 sessions <= 2 x p50 at 1 (spread arrivals)"
GOAL_SESSIONS = 4
GOAL_RATIO = 2.0
ACCEPT_GOAL = "< 250 ms (remote engines: the connection's accept time)"
ACCEPT_GOAL_S = 0.250


async def measure_level(
    ctx: LabContext,
    sessions: int,
    arrival: str,
    window_s: float | None,
    rng: random.Random,
    label: str,
    engine: Engine | None = None,
) -> list[tuple[UtteranceRecord, dict[str, Any]]]:
    """One round at one level: ``sessions`` fresh sessions each speak the text once, arriving as ``arrival`` says
    (on ``engine``; None: the context's engine).

    Returns each utterance with its facts: session index, session open time, arrival delay.
    """
    delays = arrival_delays(rng, sessions, arrival, window_s)
    opened = await asyncio.gather(*(ctx.open_session(engine) for _ in range(sessions)))
    records = await asyncio.gather(
        *(
            _speak_after(ctx, session, delay, f"{label}.{j + 1}")
            for j, ((session, _), delay) in enumerate(zip(opened, delays, strict=True))
        )
    )
    return [
        (record, {"session": j, "session_open_s": opened[j][1], "delay_s": delays[j]})
        for j, record in enumerate(records)
    ]


def request_s(record: UtteranceRecord) -> float | None:
    """How long one request took: from sending it to its last audio chunk."""
    chunks = record.timeline.chunks
    return chunks[-1].at_s if chunks else None


def window_of(records: Sequence[UtteranceRecord]) -> float | None:
    """Spread arrivals' window: p50 of one request's time alone."""
    return percentile([request_s(r) for r in records], 50)


async def run_concurrency(ctx: LabContext) -> ScenarioResult:
    cfg = ctx.config
    levels = sorted(set(cfg.sessions))
    arrivals = parse_arrivals(cfg.arrival)
    plan = [(n, a) for n in levels for a in (arrivals[:1] if n == 1 else arrivals)]
    result = ScenarioResult(
        "concurrency", f"Concurrency sweep: {', '.join(map(str, levels))} sessions, {', '.join(arrivals)} arrivals"
    )
    rng = new_rng()
    window_s: float | None = None
    for i in range(cfg.repeat):
        for n, arrival in plan:
            group = _group(n, arrival, arrivals)
            ctx.progress(f"concurrency: repeat {i + 1}/{cfg.repeat}: {n} session(s), {pattern_at(n, arrival)}")
            measured = await measure_level(ctx, n, arrival, window_s, rng, f"{group} #{i + 1}")
            result.runs += [Run(group, i, record, extra) for record, extra in measured]
            if window_s is None and n == levels[0]:
                window_s = window_of([record for record, _ in measured])
    if "spread" in arrivals and levels[0] > 1:
        result.notes.append(f"no level 1 to time one request alone: level {levels[0]} arrived together")
    rows = []
    base = None
    for n, arrival in plan:
        runs = in_group(result.runs, _group(n, arrival, arrivals))
        summary = group_summary(runs)
        ttfa = summary["time_to_first_audio_s"]
        base = ttfa["p50"] if base is None else base
        rows.append(
            {
                "sessions": n,
                "arrival": pattern_at(n, arrival),
                "time_to_first_audio_s": ttfa,
                "session_open_s": summarize(run.extra["session_open_s"] for run in runs),
                "stalls": summary["stalls"],
                "stall_s": summary["stall_s"],
                "fell_behind": summary["fell_behind"],
                "min_cumulative_rtf": summary["min_cumulative_rtf"],
                "underruns": summary["underruns"],
                "p95_over_p50_at_lowest": ratio(ttfa["p95"], base),
            }
        )
    opens = summarize(run.extra["session_open_s"] for run in result.runs)
    in_process = isinstance(ctx.engine, LocalEngine)  # opening is no connection: nothing to judge
    result.summary = {
        "arrival": ",".join(arrivals),
        "window_s": window_s,
        "levels": rows,
        "ratio_of": f"p95 time to first audio at each level ÷ p50 at {levels[0]} session(s)",
        "goal": GOAL,
        "goal_check": goal_check(rows),
        "session_open_s": opens,
        "accept_goal": ACCEPT_GOAL,
        "accept_met": None if opens["max"] is None or in_process else opens["max"] < ACCEPT_GOAL_S,
        "stalls_from": "engine.metrics.playback_pacing (a gapless player's stalls; no player in this scenario)",
    }
    return result


def goal_check(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The concurrency goal on a sweep's rows: p95 at 4 spread sessions ÷ p50 at the lowest level ≤ 2."""
    row = next((r for r in rows if r["sessions"] == GOAL_SESSIONS and r["arrival"] == "spread"), None)
    value = None if row is None else row["p95_over_p50_at_lowest"]
    why = None
    if row is None:
        why = f"no level of {GOAL_SESSIONS} sessions with spread arrivals"
    elif value is None:
        why = "no time to first audio was measured"
    return {"ratio": value, "limit": GOAL_RATIO, "met": None if value is None else value <= GOAL_RATIO, "why": why}


def _group(sessions: int, arrival: str, arrivals: Sequence[str]) -> str:
    if sessions == 1 or len(arrivals) == 1:
        return f"{sessions} sessions"
    return f"{sessions} sessions {arrival}"


async def _speak_after(ctx: LabContext, session: Session, delay_s: float, label: str) -> UtteranceRecord:
    """One of N concurrent utterances: never played (N voices at once would measure nothing useful)."""
    probe = SessionProbe(session, ctx.clock, None, ctx.config.prebuffer_s, ctx.config.guard_s, ctx.engine_label)
    async with probe:
        await asyncio.sleep(delay_s)  # the arrival process: when this caller speaks up
        return await probe.speak(whole_text(ctx.config.text), label)
