"""The lab's scenarios: each measures its two (or more) sides in one run, alternating, and reports ratios.

Every scenario only uses ``LabContext``'s engine through the ``engine.api`` protocols, so it runs unchanged
against ``local``, ``websocket URL`` and ``sagemaker ENDPOINT``.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Awaitable, Callable

from voicedesk.app.lab.context import LabContext
from voicedesk.app.lab.floor import first_fragment, floor_figures, measure_bare_forward
from voicedesk.app.lab.probe import Agent, SessionProbe, whole_text
from voicedesk.app.lab.runs import Run, ScenarioResult, group_summary, in_group, p50, ratio
from voicedesk.engine.api import Engine
from voicedesk.engine.measure.metrics import summarize
from voicedesk.engine.measure.recorder import UtteranceRecord

STREAMING = "streaming"
GENERATE_THEN_SPEAK = "generate-then-speak"


async def speak_once(
    ctx: LabContext,
    fragments: AsyncIterable[str],
    label: str,
    origin: Callable[[], float | None] | None = None,
    engine: Engine | None = None,
    engine_label: str | None = None,
) -> tuple[UtteranceRecord, float]:
    """One utterance on a fresh session (played when the lab plays); returns it and the session's open time."""
    session, open_s = await ctx.open_session(engine)
    cfg = ctx.config
    name = engine_label or ctx.engine_label
    async with SessionProbe(session, ctx.clock, ctx.player, cfg.prebuffer_s, cfg.guard_s, name) as probe:
        record = await probe.speak(fragments, label, origin)
    return record, open_s


async def run_streaming(ctx: LabContext) -> ScenarioResult:
    """Scenario 1: the agent's first token → first audible sample, streamed vs generate-then-speak."""
    cfg = ctx.config
    result = ScenarioResult("streaming", f"Streaming vs generate-then-speak (agent at {cfg.tokens_per_s:g} tokens/s)")
    engine = await ctx.get_engine()
    fragment = first_fragment(cfg.text)
    for i in range(cfg.repeat):
        order = (STREAMING, GENERATE_THEN_SPEAK) if i % 2 == 0 else (GENERATE_THEN_SPEAK, STREAMING)
        for group in order:
            ctx.progress(f"streaming: repeat {i + 1}/{cfg.repeat}: {group}")
            # The floor's bare forward alternates after / before our run, so a model warmed by the same input
            # (or the machine's drift) does not favour one side.
            forward = await measure_bare_forward(engine, fragment, cfg.voice) if group == STREAMING and i % 2 else None
            agent = Agent(cfg.text, cfg.tokens_per_s, ctx.clock)
            fragments = agent.tokens() if group == STREAMING else agent.whole_reply()
            record, _ = await speak_once(ctx, fragments, f"{group} #{i + 1}", lambda a=agent: a.first_token_s)
            extra: dict[str, object] = {"reply_s": (agent.last_token_s or 0.0) - (agent.first_token_s or 0.0)}
            if group == STREAMING:
                forward = forward or await measure_bare_forward(engine, fragment, cfg.voice)
                extra["floor"] = floor_figures(record.timeline, forward) | {"forward_before_run": bool(i % 2)}
            result.runs.append(Run(group, i, record, extra))
    streamed, waited = in_group(result.runs, STREAMING), in_group(result.runs, GENERATE_THEN_SPEAK)
    floors = [run.extra["floor"] for run in streamed if run.extra["floor"]["available"]]
    groups = {STREAMING: group_summary(streamed), GENERATE_THEN_SPEAK: group_summary(waited)}
    result.summary = {
        "groups": groups,
        "ratio": ratio(p50(groups[STREAMING]), p50(groups[GENERATE_THEN_SPEAK])),
        "ratio_of": "p50 time to first audio, streaming ÷ generate-then-speak (from the agent's first token)",
        "goal": "<= 0.20 on the local engine",
        "floor": {
            "floor_s": summarize(f["floor_s"] for f in floors),
            "ttfa_s": summarize(f["ttfa_s"] for f in floors),
            "ratio": summarize(f["ratio"] for f in floors),
            "ratio_of": "streaming time to first audio ÷ floor, per run",
            "goal": "<= 1.05 on the local engine",
            "why_absent": None if floors else next((r.extra["floor"]["why"] for r in streamed), "no runs"),
        },
    }
    return result


async def run_seed(ctx: LabContext) -> ScenarioResult:
    """Scenario 2: three sentences on one persistent session, one request each: one audio segment apiece."""
    cfg = ctx.config
    result = ScenarioResult("seed", f"The seed's check: {len(cfg.seed_sentences)} sentences on one persistent session")
    for i in range(cfg.repeat):
        ctx.progress(f"seed: repeat {i + 1}/{cfg.repeat}")
        session, _ = await ctx.open_session()
        probe = SessionProbe(session, ctx.clock, ctx.player, cfg.prebuffer_s, cfg.guard_s, ctx.engine_label)
        async with probe:
            for k, text in enumerate(cfg.seed_sentences):
                record = await probe.speak(whole_text(text), f"seed #{i + 1} sentence {k + 1}")
                result.runs.append(Run(f"sentence {k + 1}", i, record, {"text": text}))
    rows = []
    for k, text in enumerate(cfg.seed_sentences):
        runs = in_group(result.runs, f"sentence {k + 1}")
        sentences = [s for run in runs for s in run.timeline.sentences]
        rows.append(
            {
                "text": text,
                "sentences_spoken": summarize(len(run.timeline.sentences) for run in runs),
                "segments": max((n for run in runs for n in run.record.segments.values()), default=0),
                "audio_s": summarize(s.audio_s for s in sentences),
                "ttfb_s": summarize(s.ttfb_s for s in sentences),
                "ttfa_s": summarize(s.ttfa_s for s in sentences),
                "synthesis_s": summarize(s.synthesis_s for s in sentences),
                "rtf": summarize(s.rtf for s in sentences),
            }
        )
    result.summary = {
        "sentences": rows,
        # Every sentence the engine spoke came as one contiguous audio segment between its start and end …
        "one_segment_per_sentence": all(set(run.record.segments.values()) == {1} for run in result.runs),
        # … and each request was spoken as one sentence (a clause mark after a few words may split one early).
        "one_sentence_per_request": all(len(run.timeline.sentences) == 1 for run in result.runs),
        "errors": sum(len(run.record.errors) for run in result.runs),
    }
    return result


async def run_cold(ctx: LabContext) -> ScenarioResult:
    """Scenario 6: the first request after start (model load, warm-up, connect) apart from the steady state."""
    cfg = ctx.config
    result = ScenarioResult("cold", "Cold vs warm: the first request after start, then the steady state")
    fresh = ctx.engine is None
    if fresh:
        ctx.progress(f"cold: opening {ctx.engine_label} (model load and warm-up for local)…")
        engine = await ctx.get_engine()
        open_s = ctx.engine_open_s
    else:
        ctx.progress(f"cold: the engine is open already; opening a second {ctx.engine_label}…")
        started = ctx.clock()
        engine = await ctx.open_engine()
        open_s = ctx.clock() - started
        ctx.on_close(engine.aclose)
    text = cfg.seed_sentences[0]
    for i in range(1 + cfg.repeat):
        group = "cold" if i == 0 else "warm"
        ctx.progress(f"cold: request {i + 1}: {group}")
        record, session_open_s = await speak_once(ctx, whole_text(text), f"{group} #{i}", engine=engine)
        result.runs.append(Run(group, i, record, {"session_open_s": session_open_s}))
    cold, warm = in_group(result.runs, "cold"), in_group(result.runs, "warm")
    groups = {"cold": group_summary(cold), "warm": group_summary(warm)}
    session_open = {g: summarize(r.extra["session_open_s"] for r in in_group(result.runs, g)) for g in groups}
    result.summary = {
        "engine_open_s": open_s,
        "engine_open_is_start": fresh,
        "groups": groups,
        "session_open_s": session_open,
        "ratio": ratio(p50(groups["cold"]), p50(groups["warm"])),
        "ratio_of": "time to first audio of the first request ÷ p50 of the later ones",
        "start_to_first_audio_s": _sum_or_none(open_s, session_open["cold"]["p50"], p50(groups["cold"])),
    }
    return result


def _sum_or_none(*parts: float | None) -> float | None:
    return None if any(p is None for p in parts) else sum(parts)  # type: ignore[arg-type]


Scenario = Callable[[LabContext], Awaitable[ScenarioResult]]
