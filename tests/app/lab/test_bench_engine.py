"""`voicedesk bench engine` on the real random-weight engine: report structure and arithmetic (no speed claims)."""

from __future__ import annotations

import json

import pytest

from voicedesk.app.lab.bench_engine import format_report, run_engine_bench
from voicedesk.engine.commands import main

pytestmark = pytest.mark.alone  # times it side by side (tests/support/parallel.py)


@pytest.mark.slow
def test_engine_bench_reports_a_side_by_side_ratio_that_is_the_quotient_of_its_times(synthesizer):
    report = run_engine_bench(synthesizer, "Short one here. And two.", "af_heart", 1, lambda _: None)
    assert report.chunks >= 1
    assert len(report.bare_s) == len(report.ours_s) == len(report.whole_text_s) == 1
    assert all(t > 0 for t in report.bare_s + report.ours_s)
    assert report.throughput_ratio == pytest.approx(report.bare_s[0] / report.ours_s[0])
    assert report.best_ratio == pytest.approx(report.throughput_ratio)
    assert report.audio_s > 0
    assert set(report.rtf_by_words) == {4}  # the text has 5 words: no 8-word chunk or longer
    text = format_report(report)
    assert f"{report.throughput_ratio:.3f}" in text and "goal >= 0.97" in text
    body = json.loads(json.dumps(report.to_json()))
    assert body["throughput_ratio"] == pytest.approx(report.throughput_ratio)


def test_bench_engine_is_a_registered_command(capsys):
    with pytest.raises(SystemExit) as done:
        main(["bench", "engine", "--help"])
    assert done.value.code == 0
    assert "--repeat" in capsys.readouterr().out
