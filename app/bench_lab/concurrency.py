"""Scenario 4: 1, 2, 4 … sessions at once; p50/p95 time to first audio, stalls and underruns per level.

Arrivals follow ``voicedesk bench server`` (endpoint/bench_server.py) so both report the same goal the same way:
*spread* (default) — at level N each session speaks up at a random moment within the time one request takes
alone (measured at the lowest level first), like independent callers; *together* — all at the same instant, the
worst case, where one model necessarily synthesizes N first sentences one after another. The goal (Kokoro-FastAPI
issue #115): p95 at 4 sessions ≤ 2 × p50 at 1, for spread arrivals. Each utterance's time to first audio is from
its own request.
"""

from __future__ import annotations

import asyncio
import random

from app.bench_lab.context import LabContext
from app.bench_lab.probe import SessionProbe, whole_text
from app.bench_lab.recorder import UtteranceRecord
from app.bench_lab.runs import Run, ScenarioResult, group_summary, in_group, ratio
from engine.api import Session
from engine.metrics import percentile

ARRIVALS = ("spread", "together")
SEED = 115
"""The spread arrivals' random moments are seeded, so two runs draw the same ones."""


async def run_concurrency(ctx: LabContext) -> ScenarioResult:
    cfg = ctx.config
    levels = sorted(set(cfg.sessions))
    result = ScenarioResult(
        "concurrency", f"Concurrency sweep: {', '.join(map(str, levels))} sessions, {cfg.arrival} arrivals"
    )
    rng = random.Random(SEED)
    window_s: float | None = None
    for i in range(cfg.repeat):
        for n in levels:
            ctx.progress(f"concurrency: repeat {i + 1}/{cfg.repeat}: {n} session(s), {cfg.arrival}")
            spread = cfg.arrival == "spread" and window_s is not None and n > 1
            delays = [rng.uniform(0.0, window_s) if spread else 0.0 for _ in range(n)]  # type: ignore[arg-type]
            opened = await asyncio.gather(*(ctx.open_session() for _ in range(n)))
            records = await asyncio.gather(
                *(
                    _speak_after(ctx, session, delay, f"{n} sessions #{i + 1}.{j + 1}")
                    for j, ((session, _), delay) in enumerate(zip(opened, delays, strict=True))
                )
            )
            for j, record in enumerate(records):
                extra = {"session": j, "session_open_s": opened[j][1], "delay_s": delays[j]}
                result.runs.append(Run(f"{n} sessions", i, record, extra))
            if window_s is None and n == levels[0]:
                window_s = percentile([_request_s(r) for r in records], 50)
    if cfg.arrival == "spread" and levels[0] > 1:
        result.notes.append(f"no level 1 to time one request alone: level {levels[0]} arrived together")
    rows = []
    base = None
    for n in levels:
        summary = group_summary(in_group(result.runs, f"{n} sessions"))
        ttfa = summary["time_to_first_audio_s"]
        base = ttfa["p50"] if base is None else base
        rows.append(
            {
                "sessions": n,
                "time_to_first_audio_s": ttfa,
                "stalls": summary["stalls"],
                "stall_s": summary["stall_s"],
                "fell_behind": summary["fell_behind"],
                "min_cumulative_rtf": summary["min_cumulative_rtf"],
                "underruns": summary["underruns"],
                "p95_over_p50_at_lowest": ratio(ttfa["p95"], base),
            }
        )
    result.summary = {
        "arrival": cfg.arrival,
        "window_s": window_s,
        "levels": rows,
        "ratio_of": f"p95 time to first audio at each level ÷ p50 at {levels[0]} session(s)",
        "goal": "p95 at 4 sessions <= 2 x p50 at 1 (spread arrivals)",
        "stalls_from": "engine.metrics.playback_pacing (a gapless player's stalls; no player in this scenario)",
    }
    return result


def _request_s(record: UtteranceRecord) -> float | None:
    """How long one request took: from sending it to its last audio chunk."""
    chunks = record.timeline.chunks
    return chunks[-1].at_s if chunks else None


async def _speak_after(ctx: LabContext, session: Session, delay_s: float, label: str) -> UtteranceRecord:
    """One of N concurrent utterances: never played (N voices at once would measure nothing useful)."""
    async with SessionProbe(session, ctx.clock, None, ctx.config.prebuffer_s, ctx.config.guard_s) as probe:
        await asyncio.sleep(delay_s)  # the arrival process: when this caller speaks up
        return await probe.speak(whole_text(ctx.config.text), label)
