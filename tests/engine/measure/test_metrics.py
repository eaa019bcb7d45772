"""Latency metrics on synthetic signals and hand-computed streams whose answers are known exactly."""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voicedesk.engine.audio import float_to_pcm16
from voicedesk.engine.measure.metrics import (
    OnsetDetector,
    as_float_audio,
    audible_time_s,
    first_audible_sample,
    floor_ratio,
    latency_floor_s,
    percentile,
    playback_pacing,
    seam_gaps,
    summarize,
    transport_cost,
)

RATE = 24_000
WINDOW = 240  # 10 ms
HOLD = 1200  # 50 ms


def tone(level_dbfs: float, n: int, seed: int = 0) -> np.ndarray:
    """Random-sign samples of constant magnitude: every sample and every window sits exactly at ``level_dbfs``."""
    signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=n)
    return signs * 10.0 ** (level_dbfs / 20.0)


def burst(at: int, length: int, level: float = -20.0, total: int = 12_000) -> np.ndarray:
    signal = np.zeros(total)
    signal[at : at + length] = tone(level, length)
    return signal


# ---- onset: known answers ---------------------------------------------------------------------------


@pytest.mark.parametrize("at", [0, 960, 1000, 1190, 5000 + 7])
def test_onset_is_the_first_sample_of_a_burst_from_silence(at):
    assert first_audible_sample(burst(at, 3000)) == at


def test_onset_in_noise_burst_after_silence():
    signal = np.zeros(RATE)
    rng = np.random.default_rng(7)
    signal[7_777:12_000] = rng.normal(0.0, 0.1, 12_000 - 7_777)
    signal[7_777] = 0.2  # the burst's first sample is unambiguously above the threshold
    assert first_audible_sample(signal) == 7_777


@pytest.mark.parametrize("at", [0, 1000, 1190])
def test_burst_shorter_than_hold_is_not_an_onset_at_any_alignment(at):
    assert first_audible_sample(burst(at, HOLD - 1)) is None
    assert first_audible_sample(burst(at, HOLD)) == at


def test_click_then_speech_finds_the_speech():
    signal = burst(500, 480)  # a 20 ms click
    signal[6000:9000] = tone(-20.0, 3000, seed=1)
    assert first_audible_sample(signal) == 6000


def test_threshold_is_between_minus_41_and_minus_39_dbfs():
    assert first_audible_sample(burst(2400, 4800, level=-41.0)) is None
    assert first_audible_sample(burst(2400, 4800, level=-39.0)) == 2400
    assert first_audible_sample(burst(2400, 4800, level=-41.0), threshold_dbfs=-42.0) == 2400


def test_sound_starting_late_in_a_quiet_window_is_found_at_the_next_window():
    # 10 samples at -30 dBFS in window 4 give it a level of about -43.8 dBFS: quiet, so the run starts at 1200.
    assert first_audible_sample(burst(1190, 3000, level=-30.0)) == 1200


def test_onset_accepts_pcm16_bytes_and_int16_arrays():
    signal = burst(1234, 3000)
    pcm = float_to_pcm16(signal)
    assert first_audible_sample(pcm) == 1234
    assert first_audible_sample(np.frombuffer(pcm, dtype="<i2")) == 1234


def test_silence_and_trailing_partial_window_give_no_onset():
    assert first_audible_sample(np.zeros(RATE)) is None
    assert first_audible_sample(np.zeros(0)) is None
    # Sound from 730 to the end (2019); the complete windows end at 1919, so the judged extent is 1190 samples.
    cut_short = burst(730, 1290, total=2020)
    assert first_audible_sample(cut_short) is None
    assert first_audible_sample(np.concatenate([cut_short, np.zeros(140)])) == 730  # the last window completes


def test_bad_audio_is_refused_with_a_clear_error():
    with pytest.raises(ValueError, match="mono"):
        as_float_audio(np.zeros((2, 10)))
    with pytest.raises(TypeError, match="int16"):
        as_float_audio(np.zeros(10, dtype=np.int32))
    with pytest.raises(ValueError, match="even number of bytes"):
        first_audible_sample(b"\x00\x01\x02")


# ---- onset: streaming ---------------------------------------------------------------------------


def test_detector_reports_the_onset_as_soon_as_50_ms_are_confirmed():
    detector = OnsetDetector()
    signal = burst(1000, 3000)
    assert detector.push(signal[:2399]) is None  # complete windows end at 2159: extent 1000..2159 (1160)
    assert detector.push(signal[2399:2400]) == 1000  # completes window 2160..2399: extent reaches 1400
    assert detector.push(signal[2400:]) == 1000
    assert detector.onset == 1000


def test_detector_carries_half_samples_across_byte_chunks():
    pcm = float_to_pcm16(burst(3333, 3000))
    detector = OnsetDetector()
    results = [detector.push(pcm[i : i + 777]) for i in range(0, len(pcm), 777)]
    assert results[-1] == 3333
    with pytest.raises(ValueError, match="mid-sample"):
        odd = OnsetDetector()
        odd.push(b"\x00")
        odd.push(np.zeros(4))


segments = st.lists(
    st.tuples(st.integers(1, 2500), st.sampled_from([None, -60.0, -41.0, -39.0, -30.0, -10.0])),
    min_size=1,
    max_size=8,
)


@settings(max_examples=150, deadline=None)
@given(segments=segments, cuts=st.lists(st.integers(0, 20_000), max_size=12), as_bytes=st.booleans())
def test_streaming_onset_equals_whole_signal_onset_for_any_chunking(segments, cuts, as_bytes):
    parts = [np.zeros(n) if level is None else tone(level, n, seed=n) for n, level in segments]
    signal = np.concatenate(parts)
    data = float_to_pcm16(signal) if as_bytes else signal
    expected = first_audible_sample(data)
    bounds = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    detector = OnsetDetector()
    answers = [detector.push(data[a:b]) for a, b in pairwise(bounds)]
    assert detector.onset == expected
    # Once known, the answer is returned for every later chunk.
    known = [a for a in answers if a is not None]
    assert all(a == expected for a in known)


def test_audible_time_is_first_byte_plus_leading_silence_but_not_before_arrival():
    assert audible_time_s(0.5, 2400) == pytest.approx(0.6)
    # The onset sample (2400) travels in the second chunk, which arrived at 0.9 s: heard no earlier.
    assert audible_time_s(0.5, 2400, chunk_arrivals=[(0, 0.5), (1200, 0.9), (4800, 1.5)]) == 0.9
    assert audible_time_s(0.5, 2400, chunk_arrivals=[(0, 0.5), (1200, 0.52)]) == pytest.approx(0.6)


# ---- pacing -------------------------------------------------------------------------------------


def test_stream_falling_behind_once_by_300_ms_stalls_once_for_300_ms():
    pacing = playback_pacing([0.5, 1.0, 2.8], [1.0, 1.0, 1.0])
    assert pacing.rtf_per_chunk == pytest.approx((2.0, 2.0, 1.0 / 1.8))
    assert pacing.cumulative_rtf[0] is None
    assert pacing.cumulative_rtf[1:] == pytest.approx((2.0, 2.0 / 2.3))
    assert pacing.min_cumulative_rtf == pytest.approx(2.0 / 2.3)
    assert pacing.fell_behind
    assert pacing.stall_count == 1
    assert pacing.stalls[0].chunk == 2
    assert pacing.stalls[0].start_s == pytest.approx(2.5)
    assert pacing.stall_s == pytest.approx(0.3)
    assert pacing.overall_rtf == pytest.approx(3.0 / 2.8)


def test_prebuffer_absorbs_a_late_chunk():
    # The player waits for 1.5 s of audio: it starts at 1.0 s with 2 s banked, runs dry at 3.0 s, before 2.8 s.
    pacing = playback_pacing([0.5, 1.0, 2.8], [1.0, 1.0, 1.0], prebuffer_s=1.5)
    assert pacing.playback_start_s == 1.0
    assert pacing.stall_count == 0
    assert pacing.fell_behind  # still reported: it is a property of the stream, not of the player
    # Exactly the prebuffer banked: playback starts with the first chunk and stalls as with no prebuffer.
    exact = playback_pacing([0.5, 1.0, 2.8], [1.0, 1.0, 1.0], prebuffer_s=1.0)
    assert exact.playback_start_s == 0.5 and exact.stall_s == pytest.approx(0.3)
    # A prebuffer the stream never reaches: playback starts with the last chunk.
    assert playback_pacing([0.5, 1.0, 2.8], [1.0, 1.0, 1.0], prebuffer_s=10.0).playback_start_s == 2.8


def test_stream_that_keeps_up_and_one_that_stalls_twice():
    steady = playback_pacing([0.2, 0.4, 0.6, 0.8], [0.5, 0.5, 0.5, 0.5])
    assert not steady.fell_behind and steady.stall_count == 0
    assert steady.min_cumulative_rtf == pytest.approx(1.5 / 0.6)  # at the last chunk: 1.5 s banked over 0.6 s
    slow = playback_pacing([0.2, 0.5, 0.9], [0.1, 0.1, 0.1])
    assert [s.duration_s for s in slow.stalls] == pytest.approx([0.2, 0.3])
    assert slow.stall_s == pytest.approx(0.5)


def test_empty_chunks_are_ignored_and_short_streams_are_handled():
    pacing = playback_pacing([0.1, 0.3, 0.4], [0.0, 1.0, 0.0])
    assert pacing.first_audio_s == 0.3
    assert pacing.cumulative_rtf == (None, None, None)
    assert pacing.min_cumulative_rtf is None and not pacing.fell_behind
    assert pacing.rtf_per_chunk[0] == 0.0
    assert playback_pacing([], []).overall_rtf is None
    assert playback_pacing([0.2, 0.2], [0.5, 0.5]).rtf_per_chunk[1] == math.inf


def test_pacing_refuses_inconsistent_input():
    with pytest.raises(ValueError, match="one duration per arrival"):
        playback_pacing([0.1], [])
    with pytest.raises(ValueError, match="non-decreasing"):
        playback_pacing([0.3, 0.2], [0.1, 0.1])
    with pytest.raises(ValueError, match=">= 0"):
        playback_pacing([0.1], [-0.1])


gaps = st.lists(st.integers(0, 400), min_size=1, max_size=15)


@settings(max_examples=200, deadline=None)
@given(gaps_ms=gaps, sizes_ms=st.lists(st.integers(0, 400), min_size=15, max_size=15))
def test_with_no_prebuffer_a_stall_happens_iff_the_stream_fell_behind(gaps_ms, sizes_ms):
    times = list(np.cumsum(gaps_ms) / 1000.0)
    durations = [s / 1000.0 for s in sizes_ms[: len(times)]]
    pacing = playback_pacing(times, durations)
    assert pacing.fell_behind == (pacing.stall_count > 0)
    if pacing.min_cumulative_rtf is not None and not math.isclose(pacing.min_cumulative_rtf, 1.0):
        assert pacing.fell_behind == (pacing.min_cumulative_rtf < 1.0)
    # Waiting for all the audio before playing can never stall.
    assert playback_pacing(times, durations, prebuffer_s=sum(durations) + 1).stall_count == 0


# ---- percentiles --------------------------------------------------------------------------------


def type7(values: list[float], p: float) -> float:
    """Hyndman & Fan type 7, written out: rank (n-1)·p/100, linear between neighbours."""
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (rank - low) * (ordered[high] - ordered[low])


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=50), p=st.floats(0, 100))
def test_percentile_is_type_7_like_numpy_default(values, p):
    assert percentile(values, p) == pytest.approx(type7(values, p), rel=1e-9, abs=1e-6)
    assert percentile(values, p) == pytest.approx(float(np.percentile(values, p)), rel=1e-12, abs=1e-9)


def test_percentile_edge_cases():
    assert percentile([], 50) is None
    assert percentile([None, None], 95) is None
    assert percentile([0.25], 95) == 0.25
    assert percentile([1.0, None, 3.0], 50) == 2.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 95) == pytest.approx(3.85)
    with pytest.raises(ValueError, match="NaN"):
        percentile([1.0, math.nan], 50)
    with pytest.raises(ValueError, match=r"\[0, 100\]"):
        percentile([1.0], 101)
    empty = {"n": 0, "p50": None, "p90": None, "p95": None, "p99": None, "min": None, "max": None, "mean": None}
    assert summarize([]) == empty
    summary = summarize([3.0, None, 1.0, 2.0])
    # rank (n-1)·p/100 = 2·p/100 between sorted 1, 2, 3: p90 at rank 1.8, p95 at 1.9, p99 at 1.98
    assert (summary["p90"], summary["p95"], summary["p99"]) == pytest.approx((2.8, 2.9, 2.98))
    rest = {k: v for k, v in summary.items() if k not in ("p90", "p95", "p99")}
    assert rest == {"n": 3, "p50": 2.0, "min": 1.0, "max": 3.0, "mean": 2.0}


# ---- seams, transport, floor --------------------------------------------------------------------


def test_seam_gap_counts_silence_on_both_sides():
    a = tone(-20.0, 1000)
    b = tone(-20.0, 1000, seed=3)
    hum = np.full(50, 10 ** (-50 / 20))  # -50 dBFS: still silent
    # Sentence one ends in 300 silent samples; sentence two starts with 50 of hum and 200 of digital silence.
    joined = np.concatenate([a, np.zeros(300), hum, np.zeros(200), b])
    (gap,) = seam_gaps(joined, [1300])
    assert (gap.silent_before, gap.silent_after) == (300, 250)
    assert gap.gap_s == pytest.approx(550 / RATE)


def test_seam_gap_at_the_edges_and_without_silence():
    audio = np.concatenate([np.zeros(100), tone(-20.0, 500), np.zeros(40)])
    first, middle, last = seam_gaps(audio, [0, 300, 640])
    assert (first.silent_before, first.silent_after) == (0, 100)
    assert middle.gap_samples == 0
    assert (last.silent_before, last.silent_after) == (40, 0)
    with pytest.raises(ValueError, match="within the audio"):
        seam_gaps(audio, [641])


def test_transport_cost_of_binary_and_base64_audio():
    raw = transport_cost(48_000, 1.0)
    assert raw.bytes_per_audio_s == 48_000 and raw.overhead == 1.0
    framed = transport_cost([9600 + 4] * 10, 2.0)
    assert framed.wire_bytes == 96_040 and framed.overhead == pytest.approx(96_040 / 96_000)
    with pytest.raises(ValueError, match="audio_s must be positive"):
        transport_cost(10, 0.0)


def test_floor_ratio():
    assert latency_floor_s(0.40, 0.10, 0.05) == pytest.approx(0.55)
    assert floor_ratio(0.5775, 0.40, 0.10, 0.05) == pytest.approx(1.05)
    with pytest.raises(ValueError, match="bare_forward_s"):
        floor_ratio(0.5, 0.4, -0.1)
    with pytest.raises(ValueError, match="undefined"):
        floor_ratio(0.5, 0.0, 0.0)
