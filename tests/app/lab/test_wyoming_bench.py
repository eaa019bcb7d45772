"""The side-by-side Wyoming bench's pure parts: how text is streamed and how the ratios are reported."""

from __future__ import annotations

from voicedesk.app.lab.wyoming_bench import Measurement, ServerRun, report, word_pieces


def test_text_is_streamed_in_word_pieces_that_add_up_to_it() -> None:
    text = "Good evening,  the lights are off.\nSee you."
    pieces = word_pieces(text)
    assert "".join(pieces) == text
    assert pieces[:2] == ["Good ", "evening,  "]


def test_the_report_gives_medians_and_the_first_servers_ratio_to_the_second() -> None:
    ours = ServerRun("a:1", "voicedesk")
    theirs = ServerRun("b:2", "kokoro")
    for ttfa, total in ((1.0, 4.0), (2.0, 6.0), (9.0, 8.0)):
        ours.measurements.append(Measurement("a:1", "streaming", "t", ttfa, total, 4.0))
        theirs.measurements.append(Measurement("b:2", "streaming", "t", ttfa * 4, total * 2, 4.0))
    table = report([ours, theirs], ("streaming",))
    assert "| streaming | voicedesk (a:1) | 2000 | 6000 | 4.00 | 1.50 |" in table
    assert "| streaming | kokoro (b:2) | 8000 | 12000 | 4.00 | 3.00 |" in table
    assert "| streaming | 0.25 | 0.50 |" in table
