"""``voicedesk bench abuse --only valid`` runs its attacks against a real ``serve`` subprocess (the paced stand-in)
and a real Wyoming server, with the healthy client measured alone and beside each; timings are the benchmark's,
this checks that each attack attacks and the healthy client is served."""

from __future__ import annotations

import pytest

from voicedesk.app.lab.abuse_valid import format_valid, run_valid

pytestmark = pytest.mark.alone  # times it side by side (tests/support/parallel.py)


@pytest.mark.slow
async def test_each_attack_runs_beside_a_served_healthy_client() -> None:
    names = ["lexicon", "speaking vs idle", "Wyoming slots"]
    report = await run_valid(["paced"], names, 1, None, lambda _: None)
    runs = report["paced"]
    assert runs["server log"] == {"tracebacks": 0}
    for name in names:
        run = runs[name]
        assert run["during_s"] and not run["refused_during"], (name, run)  # type: ignore[index]
    assert runs["lexicon"]["attacker"]["lexicon configs sent"] > 0  # type: ignore[index]
    speaking = runs["speaking vs idle"]["attacker"]  # type: ignore[index]
    assert "speaking: told too_many_sessions" not in speaking, speaking  # an idle session made room each time
    assert runs["Wyoming slots"]["attacker"]["connections opened"] >= 64  # type: ignore[index]
    assert any("lexicon" in line for line in format_valid(report))
