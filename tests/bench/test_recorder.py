"""The lab's recorder on scripted events with known answers (pure: no model, no clock, no sockets)."""

from __future__ import annotations

import numpy as np
import pytest

from app.bench_lab.recorder import MirrorChunker, ReleasedChunk, UtteranceRecorder
from engine.audio import float_to_pcm16
from engine.events import (
    SAMPLE_RATE,
    Audio,
    Closed,
    Error,
    Flushed,
    SentenceFinished,
    SentenceStarted,
)
from engine.timeline import UtteranceTimeline


def pcm(silence_s: float = 0.0, loud_s: float = 0.0, trailing_silence_s: float = 0.0) -> bytes:
    """Silence, then a constant level well above −40 dBFS (every sample is audible), then silence."""
    parts = [np.zeros(round(silence_s * SAMPLE_RATE)), np.full(round(loud_s * SAMPLE_RATE), 0.25)]
    parts.append(np.zeros(round(trailing_silence_s * SAMPLE_RATE)))
    return float_to_pcm16(np.concatenate(parts).astype(np.float32))


def test_mirror_chunker_stamps_arrival_release_and_hand_over_of_each_chunk():
    mirror = MirrorChunker()
    released = []
    # "you." is only known to end a sentence when the next word arrives (the chunker's look-ahead).
    for t, token in enumerate(["Good", " morning", " to", " you.", " The", " lights", " are", " off."]):
        released += mirror.feed(token, arrived_s=float(t), sent_s=t + 0.5)
    last = mirror.flush(flushed_s=10.0, sent_s=10.25)
    assert released == [ReleasedChunk("Good morning to you.", 0.0, 4.0, 4.5)]
    # The releasing token (" The") already carried the next sentence's first word.
    assert last == ReleasedChunk("The lights are off.", 4.0, 10.0, 10.25)
    assert mirror.released == [*released, last]
    assert mirror.flush(11.0, 11.0) is None


def test_mirror_chunker_opens_the_next_sentence_at_its_own_first_fragment():
    mirror = MirrorChunker()
    mirror.feed("Good morning to you.", 1.0, 1.0)
    assert mirror.feed("\n", 2.0, 2.0) == [ReleasedChunk("Good morning to you.", 1.0, 2.0, 2.0)]
    mirror.feed("   ", 3.0, 3.0)  # whitespace does not open a sentence
    mirror.feed("Bye now, friend.", 4.0, 4.0)
    assert mirror.flush(5.0, 5.0) == ReleasedChunk("Bye now, friend.", 4.0, 5.0, 5.0)


def two_sentence_recorder(**kwargs: object) -> UtteranceRecorder:
    recorder = UtteranceRecorder("demo", **kwargs)  # type: ignore[arg-type]
    recorder.add_released(
        [ReleasedChunk("Good morning to you.", 0.0, 0.5, 0.5), ReleasedChunk("The lights are off.", 0.5, 1.2, 1.25)]
    )
    return recorder


def feed_two_sentences(recorder: UtteranceRecorder) -> list[bool]:
    first_a, first_b = pcm(silence_s=0.1, loud_s=0.2), pcm(loud_s=0.1)
    second = pcm(silence_s=0.05, loud_s=0.25)
    events = [
        (SentenceStarted(5, "Good morning to you."), 1.0),
        (Audio(5, first_a), 1.5),
        (Audio(5, first_b), 1.6),
        (SentenceFinished(5, 0.4, synthesis_s=0.45), 1.6),
        (SentenceStarted(6, "The lights are off."), 1.6),
        (Audio(6, second), 2.0),
        (SentenceFinished(6, 0.3, synthesis_s=0.0), 2.0),
        (Flushed(6, "bench-1"), 2.0),
    ]
    return [recorder.on_event(event, t) for event, t in events]


def test_events_become_a_timeline_with_onsets_seams_and_one_segment_per_sentence():
    recorder = two_sentence_recorder()
    assert feed_two_sentences(recorder) == [False] * 7 + [True]
    record = recorder.build(origin_s=0.0)
    first, second = record.timeline.sentences
    assert (first.seq, first.text, second.seq) == (5, "Good morning to you.", 6)
    assert (first.fragment_in_at_s, first.chunk_released_at_s, first.sent_at_s) == (0.0, 0.5, 0.5)
    assert (second.fragment_in_at_s, second.chunk_released_at_s, second.sent_at_s) == (0.5, 1.2, 1.25)
    assert first.first_byte_at_s == 1.5 and second.first_byte_at_s == 2.0
    assert first.leading_silence_s == pytest.approx(0.1)  # 2400 silent samples, then every sample is loud
    assert first.first_audible_at_s == pytest.approx(1.6)  # first byte + leading silence
    assert first.ttfb_s == pytest.approx(1.0) and first.ttfa_s == pytest.approx(1.1)
    assert first.synthesis_s == 0.45
    assert second.synthesis_s is None  # 0 means the engine did not say: not measured, not "instant"
    # The seam: sentence 5 ends loud; sentence 6 opens with 50 ms of silence.
    assert first.seam_gap_s is None and second.seam_gap_s == pytest.approx(0.05)
    assert record.segments == {5: 1, 6: 1}
    assert record.errors == () and record.notes == () and record.timeline.problems == ()
    assert record.timeline.summary["first_audible_at_s"] == pytest.approx(1.6)
    assert first.underruns is None  # not playing: underruns were not counted
    assert [c.at_s for c in record.timeline.chunks] == [1.5, 1.6, 2.0]


def test_interleaved_audio_counts_as_more_than_one_segment():
    recorder = UtteranceRecorder("interleaved")
    for event in (
        SentenceStarted(0, "One two three."),
        Audio(0, pcm(loud_s=0.1)),
        SentenceStarted(1, "Four five six."),
        Audio(1, pcm(loud_s=0.1)),
        Audio(0, pcm(loud_s=0.1)),
        SentenceFinished(0, 0.2),
        SentenceFinished(1, 0.1),
        Flushed(1),
    ):
        recorder.on_event(event, 1.0)
    assert recorder.build(0.0).segments == {0: 2, 1: 1}


def test_a_different_chunking_by_the_engine_is_noted_not_hidden():
    recorder = UtteranceRecorder("mismatch")
    recorder.add_released(ReleasedChunk("Good morning to you. The lights are off.", 0.0, 0.1, 0.1))
    for event in (
        SentenceStarted(0, "Good morning to you."),
        Audio(0, pcm(loud_s=0.1)),
        SentenceFinished(0, 0.1),
        SentenceStarted(1, "The lights are off."),
        Audio(1, pcm(loud_s=0.1)),
        SentenceFinished(1, 0.1),
        Flushed(1),
    ):
        recorder.on_event(event, 1.0)
    record = recorder.build(0.0)
    assert any("the engine spoke 'Good morning to you.'" in note for note in record.notes)
    assert any("released 1 chunk(s) but the engine spoke 2" in note for note in record.notes)
    assert record.timeline.sentences[1].sent_at_s is None  # no mark is invented for the unmatched sentence


def test_player_events_give_dac_times_and_underruns_of_the_sentence_playing():
    recorder = two_sentence_recorder(playing=True)
    feed_two_sentences(recorder)
    recorder.on_player("onset", 5, 1.8)
    recorder.on_player("underrun", None, 2.05)  # sentence 5 ran out before 6 reached the DAC
    recorder.on_player("onset", 6, 2.1)
    timeline = recorder.build(origin_s=0.0).timeline
    first, second = timeline.sentences
    assert (first.dac_at_s, second.dac_at_s) == (1.8, 2.1)
    assert (first.underruns, second.underruns) == (1, 0)
    assert first.steps["output_s"] == pytest.approx(0.3)
    assert first.heard_at_s == pytest.approx(1.9)  # DAC + leading silence
    assert timeline.summary["underruns"] == 1


def test_errors_and_an_early_close_end_the_utterance_with_the_reason():
    recorder = UtteranceRecorder("broken")
    assert not recorder.on_event(Error("voice_not_found", "Unknown voice 'zz'.", seq=3), 0.1)
    assert recorder.on_event(Closed("aborted"), 0.2)
    record = recorder.build()
    assert record.errors == (
        "voice_not_found (sentence 3): Unknown voice 'zz'.",
        "the session closed before the utterance ended (aborted)",
    )
    assert record.timeline.sentences == ()


def test_the_timeline_round_trips_through_its_json_schema():
    recorder = two_sentence_recorder()
    feed_two_sentences(recorder)
    timeline = recorder.build(origin_s=0.0).timeline
    data = timeline.to_dict()
    assert UtteranceTimeline.from_dict(data).to_dict() == data
