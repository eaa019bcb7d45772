"""``voicedesk bench voice`` runs end to end, small: espeak-ng speech into the virtual microphone, heard by tiny.en,
answered by the scripted agent and random-weight Kokoro, played to the null sink; and the same models one after
another. The figures are a benchmark's, not checked here; what is checked is that each round heard what was said and
that its parts add up as the table says."""

from __future__ import annotations

import json
import sys

import pytest

from tests.app.voice.conftest import virtual_mic, words  # noqa: F401 - a fixture
from voicedesk.app.lab.bench_voice import UTTERANCES
from voicedesk.engine.commands import main

# alone: real-time audio that must not starve (tests/support/parallel.py)
pytestmark = [pytest.mark.slow, pytest.mark.audio, pytest.mark.alone]


def test_bench_voice_times_the_loop_and_the_baseline_on_the_same_utterance(virtual_mic, tmp_path, capsys, monkeypatch):  # noqa: F811
    report = tmp_path / "voice.json"
    argv = ["bench", "voice", "--repeat", "1", "--utterances", "1", "--device", "cpu", "--mic-sink", virtual_mic]
    argv += ["--warm-up", "0", "--reply", "Done. The lights are off."]
    monkeypatch.setattr(sys, "argv", ["voicedesk", *argv])
    assert main([*argv, "--json", str(report)]) == 0
    table = capsys.readouterr().out
    assert "streaming loop" in table and "one after another" in table and "overhead beyond the models" in table
    (r,) = json.loads(report.read_text())["rounds"]
    # The words themselves are tested in tests/app/voice/ (the bench's microphone loses or garbles a word now and
    # then: "turn up the kitchen like this", "of the kitchen lights", "the kitchen light"); here, that it was this
    # utterance that was heard, at least two of its words.
    said = set(words(UTTERANCES[0]).split())
    assert len(set(words(r["heard"]).split()) & said) >= 2, r["heard"]
    assert 0 < r["decision_s"] < r["loop_s"] and r["decision_s"] < r["baseline_s"]
    parts = r["decision_s"] + r["stt_s"] + r["agent_s"] + r["tts_s"] + r["play_s"]
    assert r["baseline_s"] == pytest.approx(parts)
    assert min(r["stt_s"], r["agent_s"], r["tts_s"], r["play_s"], r["loop_tts_s"], r["player_s"]) > 0
    stages = r["stages"]
    assert 0 <= stages["final_transcript"] <= stages["fragment_in"] <= stages["chunk_released"] <= stages["sent"]
    assert stages["sent"] < stages["first_byte"] <= stages["dac"] <= stages["audible"]
    spent = r["loop_stt_s"] + r["loop_agent_s"] + r["loop_tts_s"] + r["player_s"] + r["overhead_s"]
    assert r["loop_s"] == pytest.approx(r["decision_s"] + spent)
