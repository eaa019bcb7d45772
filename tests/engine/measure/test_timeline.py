"""Timeline assembly from raw marks: known waterfalls, any mark order, consistency checks, JSON and CSV round trips."""

from __future__ import annotations

import csv
import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voicedesk.engine.measure.timeline import (
    CSV_COLUMNS,
    SCHEMA,
    STAGES,
    TimelineBuilder,
    UtteranceTimeline,
    sentences_from_csv_rows,
)

T0 = 1000.0  # the caller's clock is arbitrary; everything is reported relative to the utterance's origin

# (method, args) calls describing a three-sentence utterance whose waterfall is worked out by hand below.
CALLS = [
    ("mark", (0, "fragment_in", T0)),
    ("mark", (0, "chunk_released", T0 + 0.40)),
    ("mark", (0, "sent", T0 + 0.41)),
    ("mark", (0, "first_byte", T0 + 0.61)),
    ("mark", (0, "dac", T0 + 0.75)),
    ("measure", (0, "leading_silence_s", 0.05)),  # first_audible is derived: 0.61 + 0.05
    ("measure", (0, "audio_s", 1.0)),
    ("measure", (0, "synthesis_s", 0.5)),
    ("describe", (0, 'Hello, "world".')),
    ("chunk", (0, T0 + 0.61, 0.5)),
    ("chunk", (0, T0 + 0.90, 0.5)),
    ("mark", (1, "fragment_in", T0 + 0.50)),
    ("mark", (1, "chunk_released", T0 + 1.00)),
    ("mark", (1, "sent", T0 + 1.00)),
    ("mark", (1, "first_byte", T0 + 1.30)),
    ("mark", (1, "first_audible", T0 + 1.32)),
    ("measure", (1, "audio_s", 0.8)),
    ("measure", (1, "seam_gap_s", 0.12)),
    ("measure", (1, "underruns", 0)),
    ("chunk", (1, T0 + 1.30, 0.8)),
    ("mark", (2, "fragment_in", T0 + 1.10)),
    ("mark", (2, "sent", T0 + 2.00)),  # no chunk_released mark: missing stages are allowed
    ("mark", (2, "first_byte", T0 + 2.71)),
    ("measure", (2, "audio_s", 1.0)),
    ("measure", (2, "underruns", 1)),
    ("describe", (2, "Ünïcode,\nnew line")),
    ("chunk", (2, T0 + 2.71, 1.0)),
]


def build(calls, **options) -> UtteranceTimeline:
    builder = TimelineBuilder(label="demo", **options)
    for method, args in calls:
        getattr(builder, method)(*args)
    return builder.build()


def test_waterfall_of_a_hand_computed_utterance():
    timeline = build(CALLS)
    assert timeline.origin_s == T0 and timeline.problems == ()
    first, second, third = timeline.sentences
    assert first.steps == pytest.approx(
        {"chunking_s": 0.40, "dispatch_s": 0.01, "ttfb_s": 0.20, "onset_s": 0.05, "output_s": 0.14}
    )
    assert first.first_audible_at_s == pytest.approx(0.66)
    assert first.ttfa_s == pytest.approx(0.25)
    assert first.heard_at_s == pytest.approx(0.80)
    assert first.rtf == 2.0
    assert second.ttfb_s == pytest.approx(0.30) and second.ttfa_s == pytest.approx(0.32)
    assert second.rtf is None and second.heard_at_s is None
    assert third.chunk_released_at_s is None and third.steps["chunking_s"] is None
    assert third.steps["dispatch_s"] is None and third.ttfa_s is None
    # Playback from 0.61 s: dry at 1.11, 1.61 (chunk at 0.90), 2.41 (seq 1 at 1.30); seq 2 arrives at 2.71.
    assert [s.stalls for s in timeline.sentences] == [0, 0, 1]
    assert third.stall_s == pytest.approx(0.30)
    summary = timeline.summary
    assert summary["first_byte_at_s"] == pytest.approx(0.61)
    assert summary["first_audible_at_s"] == pytest.approx(0.66)
    assert summary["dac_at_s"] == pytest.approx(0.75) and summary["heard_at_s"] == pytest.approx(0.80)
    assert summary["audio_s"] == pytest.approx(2.8) and summary["synthesis_s"] == 0.5
    assert summary["rtf"] == 2.0  # only the sentence with both audio and synthesis time counts
    assert summary["fell_behind"] and summary["stall_count"] == 1
    assert summary["underruns"] == 1
    assert summary["seam_gaps_s"] == [0.12, None]


@settings(max_examples=60, deadline=None)
@given(order=st.permutations(range(len(CALLS))))
def test_any_order_of_marks_gives_the_same_timeline(order):
    assert build([CALLS[i] for i in order]) == build(CALLS)


def test_origin_can_be_given_or_falls_back_to_the_earliest_mark():
    assert build(CALLS, origin_s=T0 - 0.5).sentences[0].first_byte_at_s == pytest.approx(1.11)
    no_fragments = build([c for c in CALLS if c[1][1:2] != ("fragment_in",)])
    assert no_fragments.origin_s == T0 + 0.40  # chunk_released of seq 0
    assert TimelineBuilder().build().sentences == ()
    # The earliest fragment_in wins over earlier marks of other stages.
    mixed = build([("mark", (0, "sent", 4.0)), ("mark", (1, "fragment_in", 5.0))])
    assert mixed.origin_s == 5.0 and mixed.sentences[0].sent_at_s == -1.0


def test_a_stage_marked_twice_keeps_its_earliest_time():
    timeline = build([*CALLS, ("mark", (0, "first_byte", T0 + 0.9)), ("mark", (0, "fragment_in", T0 - 0.1))])
    assert timeline.origin_s == T0 - 0.1
    assert timeline.sentences[0].first_byte_at_s == pytest.approx(0.71)


def test_inconsistent_marks_are_reported_in_words():
    timeline = build(
        [
            ("mark", (0, "fragment_in", 5.0)),
            ("mark", (0, "chunk_released", 5.2)),
            ("mark", (0, "first_byte", 5.1)),  # no "sent": checked against chunk_released
            ("mark", (0, "first_audible", 5.05)),
            ("chunk", (0, 5.0, 0.5)),
            ("measure", (0, "audio_s", 0.6)),
        ]
    )
    problems = "\n".join(timeline.problems)
    assert "first_byte at 0.100000 s is before chunk_released at 0.200000 s" in problems
    assert "first_audible" in problems and "(TTFA < TTFB)" in problems
    assert "before first_byte was marked" in problems
    assert "chunks carry 0.500000 s of audio but audio_s is 0.600000" in problems
    assert len(timeline.problems) == 4


def test_marks_before_an_explicit_origin_and_out_of_order_audio_are_problems():
    timeline = build([("mark", (0, "sent", 9.0)), ("chunk", (0, 11.0, 0.5)), ("chunk", (1, 10.5, 0.5))], origin_s=9.5)
    problems = "\n".join(timeline.problems)
    assert "sent at -0.500000 s is before the utterance's origin" in problems
    assert "pacing not computed" in problems and "non-decreasing" in problems
    assert timeline.pacing is None and timeline.summary["fell_behind"] is None


def test_bad_input_is_refused_with_a_clear_error():
    builder = TimelineBuilder()
    with pytest.raises(ValueError, match="unknown stage 'first_sound'; stages are fragment_in"):
        builder.mark(0, "first_sound", 1.0)
    with pytest.raises(ValueError, match="finite"):
        builder.mark(0, "sent", float("nan"))
    with pytest.raises(ValueError, match="seq must be an int >= 0"):
        builder.mark(-1, "sent", 1.0)
    with pytest.raises(ValueError, match="audio_s must be >= 0"):
        builder.measure(0, "audio_s", -1.0)
    with pytest.raises(ValueError, match="underruns must be a count"):
        builder.measure(0, "underruns", 1.5)
    with pytest.raises(ValueError, match="unknown measurement"):
        builder.measure(0, "rtf", 2.0)
    with pytest.raises(ValueError, match="not a voicedesk timeline"):
        UtteranceTimeline.from_dict({"schema": "something/else"})


def test_json_round_trip_and_stable_schema():
    # seq 2's audio in two chunks arriving together: the second has an infinite per-chunk RTF
    split = [c for c in CALLS if c != ("chunk", (2, T0 + 2.71, 1.0))] + [("chunk", (2, T0 + 2.71, 0.5))] * 2
    timeline = build(split)
    assert timeline.pacing.rtf_per_chunk[-1] == float("inf") and timeline.problems == ()
    text = json.dumps(timeline.to_dict(), allow_nan=False)  # strict JSON: no NaN or Infinity
    data = json.loads(text)
    assert data["schema"] == SCHEMA
    assert set(data) == {"schema", "label", "origin_s", "prebuffer_s", "summary", "sentences", "chunks"} | {
        "pacing",
        "problems",
    }
    assert data["pacing"]["rtf_per_chunk"][-1] is None
    sentence_keys = set(CSV_COLUMNS) - {"label", "chunking_s", "dispatch_s", "ttfb_s", "onset_s", "output_s"}
    assert set(data["sentences"][0]) == sentence_keys | {"steps"}
    assert data["sentences"][0]["steps"]["ttfb_s"] == pytest.approx(0.20)
    back = UtteranceTimeline.from_dict(data)
    assert back == timeline
    assert back.to_dict() == data


def test_csv_round_trip():
    timeline = build(CALLS)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS)
    writer.writeheader()
    writer.writerows(timeline.csv_rows())
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert [row["label"] for row in rows] == ["demo"] * 3
    assert float(rows[0]["ttfa_s"]) == pytest.approx(0.25)
    assert rows[1]["heard_at_s"] == ""  # None is an empty cell
    assert sentences_from_csv_rows(rows) == list(timeline.sentences)


def test_stage_list_matches_the_design():
    assert STAGES == ("fragment_in", "chunk_released", "sent", "first_byte", "first_audible", "dac")
