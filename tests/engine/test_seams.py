"""Sentence seams on synthetic signals whose right answer is known to the sample."""

from __future__ import annotations

import numpy as np
import pytest

from voicedesk.engine.events import SAMPLE_RATE, WordTiming
from voicedesk.engine.seams import (
    CLAUSE_PAUSE_S,
    FADE_S,
    LEAD_IN_S,
    OPEN_PAUSE_S,
    SENTENCE_PAUSE_S,
    loud_span,
    shape_sentence,
    trailing_pause_s,
)

SR = SAMPLE_RATE


def tone(seconds: float, amplitude: float = 0.5, hz: float = 220.0) -> np.ndarray:
    t = np.arange(round(seconds * SR)) / SR
    return (amplitude * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def silence(seconds: float) -> np.ndarray:
    return np.zeros(round(seconds * SR), dtype=np.float32)


def samples(seconds: float) -> int:
    return round(seconds * SR)


@pytest.mark.parametrize(
    ("text", "pause"),
    [
        ("Hello there.", SENTENCE_PAUSE_S),
        ("Really?", SENTENCE_PAUSE_S),
        ("Stop!", SENTENCE_PAUSE_S),
        ("Well…", SENTENCE_PAUSE_S),
        ('He said "go."', SENTENCE_PAUSE_S),
        ("(As planned.)", SENTENCE_PAUSE_S),
        ("完了。", SENTENCE_PAUSE_S),
        ("मैं ठीक हूँ।", SENTENCE_PAUSE_S),  # Hindi's danda
        ("« Oui ! »", SENTENCE_PAUSE_S),
        ("First of all,", CLAUSE_PAUSE_S),
        ("as follows:", CLAUSE_PAUSE_S),
        ("one; ", CLAUSE_PAUSE_S),
        ("and then", OPEN_PAUSE_S),
        ("", OPEN_PAUSE_S),
    ],
)
def test_pause_follows_the_closing_punctuation(text, pause):
    assert trailing_pause_s(text) == pause


def test_silence_tone_silence_is_trimmed_to_lead_in_and_sentence_pause():
    audio = np.concatenate([silence(0.5), tone(1.0), silence(0.5)])
    shaped = shape_sentence(audio, "A full sentence.")
    expected = samples(LEAD_IN_S) + samples(1.0) + samples(SENTENCE_PAUSE_S)
    assert len(shaped.audio) == expected
    assert shaped.duration_s == expected / SR
    assert shaped.audio.dtype == np.float32
    # The tone itself is untouched between the fades: the cut is exactly 0.5 s - 40 ms into the input.
    lead = samples(0.5 - LEAD_IN_S)
    middle = slice(samples(LEAD_IN_S) + 500, samples(LEAD_IN_S) + samples(1.0) - 500)
    np.testing.assert_array_equal(shaped.audio[middle], audio[lead:][middle])


def test_clause_and_open_endings_keep_shorter_pauses():
    audio = np.concatenate([silence(0.2), tone(0.5), silence(0.5)])
    clause = shape_sentence(audio, "First,")
    open_end = shape_sentence(audio, "and so")
    assert len(clause.audio) == samples(LEAD_IN_S) + samples(0.5) + samples(CLAUSE_PAUSE_S)
    assert len(open_end.audio) == samples(LEAD_IN_S) + samples(0.5) + samples(OPEN_PAUSE_S)


def test_too_short_a_tail_is_padded_with_zeros():
    audio = np.concatenate([silence(0.1), tone(0.5), silence(0.05)])
    shaped = shape_sentence(audio, "Done.")
    assert len(shaped.audio) == samples(LEAD_IN_S) + samples(0.5) + samples(SENTENCE_PAUSE_S)
    tail_start = samples(LEAD_IN_S) + samples(0.5) + samples(0.05)
    assert not shaped.audio[tail_start:].any()


def test_a_short_lead_in_is_kept_as_is_not_padded():
    audio = np.concatenate([silence(0.01), tone(0.5), silence(0.4)])
    shaped = shape_sentence(audio, "Go.")
    assert len(shaped.audio) == samples(0.01) + samples(0.5) + samples(SENTENCE_PAUSE_S)


def test_fades_bring_both_ends_to_zero_without_clicks():
    # Loud from the first to the last sample: nothing to trim, so only the fades act on the edges.
    audio = np.full(samples(0.3), 0.8, dtype=np.float32)
    shaped = shape_sentence(audio, "and")
    fade = samples(FADE_S)
    assert shaped.audio[0] == 0.0
    assert shaped.audio[-1] == 0.0
    # Raised cosine: rises monotonically over the fade, full level right after it.
    assert np.all(np.diff(shaped.audio[:fade]) > 0)
    assert shaped.audio[fade] == pytest.approx(0.8)
    model_end = samples(0.3)
    assert np.all(np.diff(shaped.audio[model_end - fade : model_end]) < 0)
    assert abs(shaped.audio[model_end - 1]) < 1e-3
    assert not shaped.audio[model_end:].any()


def test_word_timings_shift_by_the_trimmed_lead_and_clip_to_the_audio():
    audio = np.concatenate([silence(0.5), tone(1.0), silence(0.5)])
    words = (
        WordTiming("early", 0.3, 0.6),
        WordTiming("middle", 0.7, 1.1),
        WordTiming("late", 1.3, 2.0),
    )
    shaped = shape_sentence(audio, "Early middle late.", words)
    trimmed = 0.5 - LEAD_IN_S
    assert shaped.words[0] == WordTiming("early", 0.0, pytest.approx(0.6 - trimmed))
    assert shaped.words[1] == WordTiming("middle", pytest.approx(0.7 - trimmed), pytest.approx(1.1 - trimmed))
    assert shaped.words[2].start_s == pytest.approx(1.3 - trimmed)
    assert shaped.words[2].end_s == pytest.approx(shaped.duration_s)


def test_quiet_noise_counts_as_silence():
    rng = np.random.default_rng(0)
    floor = (10 ** (-60 / 20)) * rng.standard_normal(samples(0.3)).astype(np.float32)
    audio = np.concatenate([floor, tone(0.4), floor])
    shaped = shape_sentence(audio, "Quiet.")
    assert len(shaped.audio) == samples(LEAD_IN_S) + samples(0.4) + samples(SENTENCE_PAUSE_S)


def test_loud_span_marks_whole_windows_around_the_sound():
    audio = np.concatenate([silence(0.105), tone(0.2), silence(0.1)])
    start, end = loud_span(audio)
    window = samples(0.01)
    assert start == 10 * window  # the window holding 0.100–0.110 s has 5 ms of tone in it
    assert end == 31 * window


def test_all_silence_becomes_the_pause_alone():
    shaped = shape_sentence(silence(0.8), "Hmm.", (WordTiming("Hmm", 0.1, 0.4),))
    assert len(shaped.audio) == samples(SENTENCE_PAUSE_S)
    assert not shaped.audio.any()
    assert shaped.words == ()
    assert shaped.duration_s == SENTENCE_PAUSE_S


def test_empty_input_stays_empty():
    shaped = shape_sentence(np.zeros(0, dtype=np.float32), "", ())
    assert len(shaped.audio) == 0
    assert shaped.duration_s == 0.0
    assert shaped.words == ()


def test_non_finite_samples_do_not_poison_the_output():
    audio = np.concatenate([silence(0.1), tone(0.2), silence(0.1)])
    audio[samples(0.15)] = np.nan
    shaped = shape_sentence(audio, "Odd.")
    assert np.isfinite(shaped.audio).all()
