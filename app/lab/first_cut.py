"""Scenario ``first-cut``: first audio of a long first sentence with no clause mark, the chunker's eager phrase cut
against the rule before it (decided at the 12th word, then cut back to a phrase boundary), at 20 and 80 tokens/s.

The rule is the session's chunker's, so the scenario needs the local engine (it opens local sessions with either
chunker on the same model and scheduler); on a remote engine it is skipped and says why. Runs alternate the two
rules, so the machine's drift favours neither; the ratio is eager ÷ at-12th-word p50 time to first audio.
"""

from __future__ import annotations

from functools import partial

from voicedesk.app.lab.context import LabContext
from voicedesk.app.lab.probe import Agent, SessionProbe
from voicedesk.app.lab.runs import Run, ScenarioResult, group_summary, in_group, p50, ratio
from voicedesk.engine.local import LocalEngine, LocalSession
from voicedesk.engine.text.chunker import IncrementalSentenceChunker

FIRST_CUT_TEXT = (
    "Let me check the current thermostat settings in the living room for you before it gets colder tonight."
)
"""Its first sentence has no clause mark: the early first fragment comes from the phrase rule alone."""
RATES = (20.0, 80.0)
EAGER = "eager phrase cut"
AT_MAX = "cut at the 12th word"


def first_chunk(text: str, eager: bool) -> str:
    chunker = IncrementalSentenceChunker(eager_phrase_cut=eager)
    chunks = chunker.feed(text)
    return chunks[0] if chunks else (chunker.flush() or "")


async def run_first_cut(ctx: LabContext) -> ScenarioResult:
    cfg = ctx.config
    result = ScenarioResult("first-cut", "First audio of a long first sentence: eager phrase cut vs at the 12th word")
    engine = await ctx.get_engine()
    if not isinstance(engine, LocalEngine):
        result.skipped = "needs the local engine: the cut is made by the session's chunker, on the server's side"
        return result
    config = ctx.session_config
    for rate in RATES:
        for i in range(cfg.repeat):
            order = (EAGER, AT_MAX) if i % 2 == 0 else (AT_MAX, EAGER)
            for rule in order:
                ctx.progress(f"first-cut: {rate:g} tokens/s, repeat {i + 1}/{cfg.repeat}: {rule}")
                chunker = partial(IncrementalSentenceChunker, eager_phrase_cut=rule == EAGER)
                session = LocalSession(engine.synthesizer, engine.scheduler, config, engine.limits, chunker)
                agent = Agent(FIRST_CUT_TEXT, rate, ctx.clock)
                label = f"{rule} @ {rate:g} tok/s #{i + 1}"
                async with SessionProbe(
                    session, ctx.clock, ctx.player, cfg.prebuffer_s, cfg.guard_s, ctx.engine_label
                ) as probe:
                    record = await probe.speak(agent.tokens(), label, lambda a=agent: a.first_token_s)
                result.runs.append(Run(f"{rule} @ {rate:g}", i, record, {"tokens_per_s": rate}))
    rows = {}
    for rate in RATES:
        eager, at_max = (group_summary(in_group(result.runs, f"{rule} @ {rate:g}")) for rule in (EAGER, AT_MAX))
        rows[f"{rate:g}"] = {
            "eager": eager,
            "at_max": at_max,
            "ratio": ratio(p50(eager), p50(at_max)),
        }
    result.summary = {
        "rates": rows,
        "first_chunk": {"eager": first_chunk(FIRST_CUT_TEXT, True), "at_max": first_chunk(FIRST_CUT_TEXT, False)},
        "ratio_of": "p50 time to first audio from the agent's first token, eager ÷ at the 12th word",
    }
    return result
