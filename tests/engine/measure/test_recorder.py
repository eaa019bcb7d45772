"""The one utterance recorder on scripted events with known answers (pure: no model, no clock, no sockets):
the mirror chunker's marks, rows keyed by position, the underrun rule, a failover's second leg, the JSON round trip."""

from __future__ import annotations

import numpy as np
import pytest

from voicedesk.engine.audio import float_to_pcm16
from voicedesk.engine.events import (
    SAMPLE_RATE,
    Audio,
    Closed,
    Error,
    Flushed,
    SentenceFinished,
    SentenceStarted,
)
from voicedesk.engine.measure.recorder import Leg, MirrorChunker, ReleasedChunk, UtteranceRecorder, underrun_row
from voicedesk.engine.measure.timeline import UtteranceTimeline
from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker


def pcm(silence_s: float = 0.0, loud_s: float = 0.0, trailing_silence_s: float = 0.0) -> bytes:
    """Silence, then a constant level well above −40 dBFS (every sample is audible), then silence."""
    parts = [np.zeros(round(silence_s * SAMPLE_RATE)), np.full(round(loud_s * SAMPLE_RATE), 0.25)]
    parts.append(np.zeros(round(trailing_silence_s * SAMPLE_RATE)))
    return float_to_pcm16(np.concatenate(parts).astype(np.float32))


def test_mirror_chunker_stamps_arrival_release_and_hand_over_of_each_chunk():
    mirror = MirrorChunker()
    # "you." ends clearly: released with its own token. "off." too, but the sentence is under the floor, so it waits.
    # Tokens 50 ms apart: never quiet long enough for release on quiet.
    for t, token in enumerate(["Good", " morning", " to", " you.", " The", " lights", " are", " off."]):
        mirror.sent(mirror.feed(token, arrived_s=t / 20), sent_s=t / 20)
    assert mirror.flush(flushed_s=0.5) == 1
    assert mirror.released[-1].sent_s is None  # not handed over yet
    mirror.sent(1, 0.52)
    assert mirror.released == [
        ReleasedChunk("Good morning to you.", 0.0, 0.15, 0.15),
        ReleasedChunk("The lights are off.", 0.2, 0.5, 0.52),
    ]
    assert mirror.flush(1.0) == 0


def test_mirror_chunker_replays_release_on_quiet_at_the_sessions_own_deadlines():
    mirror = MirrorChunker(max_buffer_delay_ms=800)
    mirror.sent(mirror.feed("I will set the heat to 21.", 1.0), 1.01)  # the agent calls a tool for 5 s
    mirror.sent(mirror.feed(" Let me check", 6.0), 6.01)  # ... then pauses again
    mirror.sent(mirror.feed(" the thermostat", 9.0), 9.01)
    mirror.flush(9.1)
    assert [(c.text, c.released_s, c.sent_s) for c in mirror.released] == [
        ("I will set the heat to 21.", 1.25, 1.25),  # "21.5"? 250 ms after its end: what the session did
        ("Let me check", 6.8, 6.8),  # the buffer delay after the last fragment
        ("the thermostat", 9.1, None),
    ]


def test_mirror_chunker_opens_the_next_sentence_at_its_own_first_fragment():
    mirror = MirrorChunker()
    mirror.feed("Good morning, it is 21.", 1.0)  # "21.5"? held for the next character
    assert mirror.feed("\n", 1.1) == 1
    mirror.feed("   ", 1.15)  # whitespace does not open a sentence
    mirror.feed("Bye now, friend.", 1.2)
    mirror.flush(1.3)
    assert [(c.fragment_in_s, c.released_s) for c in mirror.released] == [(1.0, 1.1), (1.2, 1.3)]


def two_sentence_recorder(**kwargs: object) -> UtteranceRecorder:
    recorder = UtteranceRecorder("demo", engine="local", **kwargs)  # type: ignore[arg-type]
    leg = recorder.leg
    leg.sent(leg.fragment("Good morning to you", 0.0), 0.05)  # released by its period's arrival below
    leg.sent(leg.fragment(". The lights are off.", 0.2), 0.25)
    leg.sent(leg.flush(0.4), 0.45)
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


def test_events_become_a_timeline_keyed_by_position_with_onsets_seams_and_one_segment_per_sentence():
    recorder = two_sentence_recorder()
    assert feed_two_sentences(recorder) == [False] * 7 + [True]
    recorder.measure_seams()
    record = recorder.build(origin_s=0.0)
    first, second = record.timeline.sentences
    # Rows are the sentences' positions; the engine's own numbers (a persistent session's 5, 6) are kept beside.
    assert (first.seq, first.engine_seq, second.seq, second.engine_seq) == (0, 5, 1, 6)
    assert first.engine == second.engine == "local" and first.text == "Good morning to you."
    assert (first.fragment_in_at_s, first.chunk_released_at_s, first.sent_at_s) == (0.0, 0.2, 0.25)
    assert (second.fragment_in_at_s, second.chunk_released_at_s, second.sent_at_s) == (0.2, 0.4, 0.45)
    assert first.first_byte_at_s == 1.5 and second.first_byte_at_s == 2.0
    assert first.leading_silence_s == pytest.approx(0.1)  # 2400 silent samples, then every sample is loud
    assert first.first_audible_at_s == pytest.approx(1.6)  # first byte + leading silence
    assert first.ttfb_s == pytest.approx(1.25) and first.ttfa_s == pytest.approx(1.35)
    assert first.synthesis_s == 0.45
    assert second.synthesis_s is None  # 0 means the engine did not say: not measured, not "instant"
    # The seam: sentence 5 ends loud; sentence 6 opens with 50 ms of silence.
    assert first.seam_gap_s is None and second.seam_gap_s == pytest.approx(0.05)
    assert record.segments == {0: 1, 1: 1}
    assert record.errors == () and record.notes == () and record.timeline.problems == ()
    assert record.timeline.summary["first_audible_at_s"] == pytest.approx(1.6)
    assert first.underruns is None  # not playing: underruns were not counted
    assert [c.at_s for c in record.timeline.chunks] == [1.5, 1.6, 2.0]


def test_a_mark_that_comes_after_the_sentence_started_still_lands_on_its_row():
    """The sent stamp is taken after ``send_text`` returns; the engine may announce the sentence before that."""
    recorder = UtteranceRecorder("race")
    leg = recorder.leg
    released = leg.fragment("Hello there. ", 1.0) + leg.flush(1.0)
    recorder.sentence_started(0, "Hello there.")
    assert recorder.build().timeline.sentences[0].sent_at_s is None
    leg.sent(released, 1.1)
    assert recorder.build().timeline.sentences[0].sent_at_s == pytest.approx(0.1)


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
    # A client whose chunker merges short sentences, speaking to an engine that does not.
    chunker = IncrementalSentenceChunker(early_first_fragment=False, min_sentence_chars=100)
    merging = Leg("local", MirrorChunker(chunker))
    recorder.leg = merging
    merging.fragment("Good morning to you. The lights are off.", 0.0)
    merging.sent(merging.flush(0.1), 0.1)
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


def test_audio_of_a_sentence_never_announced_is_not_recorded_and_says_so():
    recorder = UtteranceRecorder("orphan", engine="websocket")
    assert recorder.audio(3, pcm(loud_s=0.1), 1.0) is None
    record = recorder.build(0.0)
    assert record.timeline.sentences == ()
    assert record.notes == ("audio for sentence 3 of websocket, never announced",)


# ---- the underrun rule ----------------------------------------------------------------------------


def test_the_rule_charges_the_first_sentence_with_audio_still_to_come():
    rows = [([1.0, 1.5], True), ([3.0], True), ([], False)]
    assert underrun_row(rows, 1.2) == 0  # a later chunk of the sentence playing was late: its own fault
    assert underrun_row(rows, 2.0) == 1  # everything of 0 was in; 1's audio came at 3.0
    assert underrun_row(rows, 4.0) == 2  # all audio in hand: waiting for the sentence with none yet
    assert underrun_row(rows[:2], 4.0) is None  # nothing more came: charged to none (yet)
    assert underrun_row([([1.0], True), ([], True), ([5.0], True)], 2.0) == 2  # a failed sentence keeps none waiting


def test_underruns_go_to_the_sentence_the_listener_waited_for_in_app_and_lab_alike():
    recorder = two_sentence_recorder(playing=True)
    feed_two_sentences(recorder)
    recorder.on_player("onset", 0, 1.8)
    recorder.on_player("underrun", None, 1.9)  # sentence 6 arrived at 2.0: the listener waited for it
    recorder.on_player("onset", 1, 2.1)
    recorder.on_player("underrun", None, 2.05)  # all audio was in: nothing came after, charged to none
    timeline = recorder.build(origin_s=0.0).timeline
    first, second = timeline.sentences
    assert (first.dac_at_s, second.dac_at_s) == (1.8, 2.1)
    assert (first.underruns, second.underruns) == (0, 1)
    assert first.steps["output_s"] == pytest.approx(0.3)
    assert first.heard_at_s == pytest.approx(1.9)  # DAC + leading silence
    assert timeline.summary["underruns"] == 1


def test_an_underrun_before_the_next_sentence_started_waits_for_it():
    recorder = UtteranceRecorder("waiting", playing=True)
    recorder.on_event(SentenceStarted(0, "One."), 0.5)
    recorder.on_event(Audio(0, pcm(loud_s=0.5)), 1.0)
    recorder.underrun(2.0)  # the agent had not written the next sentence yet
    assert [s.underruns for s in recorder.build().timeline.sentences] == [0]
    recorder.on_event(SentenceStarted(1, "Two."), 2.5)
    assert [s.underruns for s in recorder.build().timeline.sentences] == [0, 1]


# ---- more than one engine: a failover --------------------------------------------------------------


def test_a_second_leg_takes_over_the_rows_never_delivered_and_labels_its_own():
    recorder = UtteranceRecorder("turn 1")
    remote = Leg("WebSocket")
    remote.sent(remote.fragment("One two. Three four. ", 0.0), 0.01)
    assert recorder.sentence_started(10, "One two.", remote) == 0
    recorder.audio(10, pcm(loud_s=0.1), 0.5, remote)
    assert recorder.sentence_started(11, "Three four.", remote) == 1  # started, but its audio never came
    local = Leg("Local")  # the reply continues here from the first sentence not delivered
    local.sent(local.fragment("Three four. ", 1.0), 1.0)
    local.sent(local.flush(1.0), 1.0)
    assert recorder.sentence_started(0, "Three four.", local, index=1) == 1  # the local engine's numbers restart
    assert recorder.audio(11, pcm(loud_s=0.1), 1.2, remote) is None  # the dead leg's late audio has no row
    recorder.audio(0, pcm(loud_s=0.1), 1.5, local)
    timeline = recorder.build(origin_s=0.0).timeline
    assert [(s.seq, s.engine, s.engine_seq) for s in timeline.sentences] == [(0, "WebSocket", 10), (1, "Local", 0)]
    assert timeline.sentences[1].first_byte_at_s == 1.5 and timeline.sentences[1].sent_at_s == 1.0


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


def test_the_timeline_round_trips_through_its_json_schema_and_old_documents_still_read():
    recorder = two_sentence_recorder()
    feed_two_sentences(recorder)
    timeline = recorder.build(origin_s=0.0).timeline
    data = timeline.to_dict()
    assert UtteranceTimeline.from_dict(data).to_dict() == data
    for sentence in data["sentences"]:  # a voicedesk.timeline/1 document from before engine/engine_seq existed
        del sentence["engine"], sentence["engine_seq"]
    old = UtteranceTimeline.from_dict(data)
    assert [(s.engine, s.engine_seq) for s in old.sentences] == [(None, None), (None, None)]
    assert old.sentences[0].first_audible_at_s == timeline.sentences[0].first_audible_at_s
