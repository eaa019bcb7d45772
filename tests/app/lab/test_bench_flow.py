"""``voicedesk bench flow`` runs end to end (with the paced stand-in, so in seconds) and its gap accounting is right.

The numbers it prints are benchmarks, not checked here; what is checked is that every scenario measures what it
says (each pause case heard its sentence, every rate was played, the three waiting cases were timed, the stalled
server's slots all came back) and that the simulated player attributes gaps as documented.
"""

from __future__ import annotations

import json
import sys

import pytest

from voicedesk.app.lab.bench_flow_agents import PAUSE_CASES, Spoken, Transcript, play
from voicedesk.engine.commands import main

pytestmark = pytest.mark.alone  # times it side by side (tests/support/parallel.py)


def test_bench_flow_runs_every_scenario_and_writes_json(tmp_path, capsys, monkeypatch):
    report = tmp_path / "flow.json"
    argv = [
        "bench", "flow", "--synth", "paced", "--realtime-factor", "100", "--repeat", "1", "--rates", "80",
        "--minutes", "0.25", "--stalled-clients", "3", "--server-log", str(tmp_path / "server.log"),
        "--json", str(report),
    ]  # fmt: skip
    monkeypatch.setattr(sys, "argv", ["voicedesk", *argv])
    assert main(argv) == 0
    table = capsys.readouterr().out
    document = json.loads(report.read_text())
    scenarios = document["scenarios"]
    assert [case["case"] for case in scenarios["pauses"]] == [name for name, _ in PAUSE_CASES]
    for case in scenarios["pauses"]:
        assert not case["errors"] and len(case["to_audio_s"]) == 1, case
        assert case["held_s"][0] >= 0 and case["synthesis_s"][0] > 0
    (rate,) = scenarios["pacing"]
    assert rate["tokens_per_s"] == 80 and rate["sentences"] >= 4 and not rate["errors"]
    waiting = scenarios["waiting"]
    assert len(waiting["alone_s"]) == 2 and len(waiting["behind_busy_s"]) == 1 and len(waiting["after_vanished_s"]) == 1
    assert waiting["behind_busy_ratio"] > 0 and waiting["after_vanished_ratio"] > 0
    stalled = scenarios["stalled"]
    assert stalled["slots_back"] is True and stalled["baseline_mb"] > 0 and stalled["rss_mb"]
    assert not stalled["healthy_failures"] and stalled["healthy_ttfa_s"]
    for heading in ("agents that pause", "gap-free delivery", "waiting for the model", "clients that never read"):
        assert heading in table


def _transcript(sentences: list[tuple[float, float, float, float]]) -> Transcript:
    """(text done at, audio at, audio seconds, synthesis seconds) per sentence; the first token at 0."""
    transcript = Transcript(20.0, sent_at=[0.0])
    for seq, (done, audio_at, audio_s, synthesis_s) in enumerate(sentences):
        transcript.spoken.append(Spoken(seq, f"s{seq}", audio_at - synthesis_s, done, audio_at, audio_s, synthesis_s))
    return transcript


def test_the_player_counts_no_gap_when_audio_keeps_ahead():
    result = play(_transcript([(0.5, 1.0, 3.0, 0.4), (2.0, 2.5, 3.0, 0.4), (3.0, 3.5, 2.0, 0.4)]))
    assert result.gaps == [] and result.sentences == 3 and result.audio_s == 8.0
    assert result.first_audio_s == 1.0


def test_the_player_puts_a_gap_down_to_the_agent_the_hold_and_synthesis():
    # The second sentence's text came 1 s after the first finished playing; it was then held 250 ms and made in
    # 0.5 s: all of its 1.75 s gap is explained.
    result = play(_transcript([(0.0, 0.5, 1.0, 0.4), (2.5, 3.25, 1.0, 0.5)]))
    (gap,) = result.gaps
    assert gap.gap_s == pytest.approx(1.75)
    assert gap.agent_s == pytest.approx(1.0)
    assert gap.hold_and_synthesis_s == pytest.approx(0.75)
    assert gap.unexplained_s == pytest.approx(0.0)


def test_the_player_reports_audio_that_came_later_than_anything_explains():
    # The text was in hand long before; synthesis took 0.2 s; yet the audio came 2 s after the first ended.
    result = play(_transcript([(0.0, 0.5, 1.0, 0.4), (0.2, 3.5, 1.0, 0.2)]))
    (gap,) = result.gaps
    assert gap.gap_s == pytest.approx(2.0)
    assert gap.agent_s == 0.0
    # Ready at the earliest when the model was free (0.5) plus synthesis (0.2): 0.7 s, before the gap even began.
    assert gap.unexplained_s == pytest.approx(2.0)
