"""Scenario ``first-cut``: what each first-cut policy of the chunker costs in first audio, at 20 and 80 tokens/s.

``clause`` (the default) cuts the first fragment eagerly only before a clause opener; ``phrase`` (the default
before it) before a preposition too; ``at-max`` decides at the 12th word. Each cut is a model call whose
intonation starts afresh, so the question is what the fewer cuts cost. Two first sentences: a long one with no
clause mark and a short one with a preposition. The rule is the session's chunker's, so the scenario needs the
local engine (local sessions with each chunker on the same model and scheduler); on a remote engine it is
skipped and says why. Runs rotate the policies, so the machine's drift favours none; the ratio is each policy's
p50 time to first audio ÷ ``clause``'s.
"""

from __future__ import annotations

from functools import partial

from voicedesk.app.lab.context import LabContext
from voicedesk.app.lab.probe import Agent, SessionProbe
from voicedesk.app.lab.runs import Run, ScenarioResult, group_summary, in_group, p50, ratio
from voicedesk.engine.local import LocalEngine, LocalSession
from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker
from voicedesk.engine.text.chunking.first_cut import FIRST_CUTS

FIRST_CUT_TEXTS = {
    "long": "Let me check the current thermostat settings in the living room for you before it gets colder tonight.",
    "short": "Add one half cup of water to the reservoir and then press start.",
}
"""No clause mark in either first sentence: the early first fragment comes from the policy alone."""
RATES = (20.0, 80.0)
POLICIES = tuple(FIRST_CUTS)


def first_chunk(text: str, first_cut: str) -> str:
    chunker = IncrementalSentenceChunker(first_cut=first_cut)
    chunks = chunker.feed(text)
    return chunks[0] if chunks else (chunker.flush() or "")


async def run_first_cut(ctx: LabContext) -> ScenarioResult:
    cfg = ctx.config
    result = ScenarioResult("first-cut", "First audio per first-cut policy (clause, phrase, at the 12th word)")
    engine = await ctx.get_engine()
    if not isinstance(engine, LocalEngine):
        result.skipped = "needs the local engine: the cut is made by the session's chunker, on the server's side"
        return result
    config = ctx.session_config
    for name, text in FIRST_CUT_TEXTS.items():
        for rate in RATES:
            for i in range(cfg.repeat):
                order = POLICIES[i % len(POLICIES) :] + POLICIES[: i % len(POLICIES)]
                for policy in order:
                    ctx.progress(f"first-cut: {name}, {rate:g} tokens/s, repeat {i + 1}/{cfg.repeat}: {policy}")
                    chunker = partial(IncrementalSentenceChunker, first_cut=policy)
                    session = LocalSession(engine.synthesizer, engine.scheduler, config, engine.limits, chunker)
                    agent = Agent(text, rate, ctx.clock)
                    async with SessionProbe(
                        session, ctx.clock, ctx.player, cfg.prebuffer_s, cfg.guard_s, ctx.engine_label
                    ) as probe:
                        record = await probe.speak(
                            agent.tokens(), f"{name} {policy} @ {rate:g} #{i + 1}", lambda a=agent: a.first_token_s
                        )
                    result.runs.append(Run(f"{name} {policy} @ {rate:g}", i, record, {"tokens_per_s": rate}))
    rows = {}
    for name in FIRST_CUT_TEXTS:
        for rate in RATES:
            found = {policy: group_summary(in_group(result.runs, f"{name} {policy} @ {rate:g}")) for policy in POLICIES}
            rows[f"{name} @ {rate:g}"] = {
                **found,
                "ratios": {policy: ratio(p50(found[policy]), p50(found["clause"])) for policy in POLICIES},
            }
    result.summary = {
        "rows": rows,
        "first_chunks": {n: {p: first_chunk(t, p) for p in POLICIES} for n, t in FIRST_CUT_TEXTS.items()},
        "ratio_of": "p50 time to first audio from the agent's first token, each policy ÷ clause",
    }
    return result
