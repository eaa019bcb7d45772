"""The session state machine alone: ordering, flush, cancel, close, limits — no model, no threads, no clock.

Time is passed in, so release on quiet, backpressure and wind-down are checked at exact instants.
"""

from __future__ import annotations

import pytest

from voicedesk.engine.errors import ErrorCode
from voicedesk.engine.events import (
    Audio,
    Cancelled,
    Closed,
    Error,
    Flushed,
    RequestFinished,
    RequestStarted,
    SentenceFinished,
    SentenceStarted,
    SessionConfig,
)
from voicedesk.engine.session import SHUTDOWN_REASON, SessionCore, SessionLimits
from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker

PCM_100MS = b"\x00\x00" * 2400


def _core(max_buffer_delay_ms: int = 1000, **limits) -> SessionCore:
    config = SessionConfig(max_buffer_delay_ms=max_buffer_delay_ms)
    return SessionCore(IncrementalSentenceChunker(), config, SessionLimits(**limits))


def _run_all(core: SessionCore, now: float = 0.0, pcm: bytes = PCM_100MS) -> list:
    """Plays the synthesizer and an eager listener: completes every job in order, taking its audio at once."""
    events = []
    while (handed := core.next_job(now)) is not None:
        job, started = handed
        events.extend(started)
        done = core.job_done(job, pcm, len(pcm) / 48_000, now=now)
        events.extend(done)
        core.audio_consumed(sum(e.duration_s for e in done if isinstance(e, Audio)))
    return events


def _texts(events) -> list[str]:
    return [e.text for e in events if isinstance(e, SentenceStarted)]


def test_sentences_are_numbered_and_each_is_started_voiced_and_finished_in_order():
    core = _core()
    text = "The first sentence is here. The second one follows it. And a third"
    assert core.send_text(text, 0.0) == []
    events = core.flush(0.0, "u1")
    events += _run_all(core)
    kinds = [(type(e).__name__, getattr(e, "seq", None)) for e in events]
    seqs = sorted({e.seq for e in events if isinstance(e, SentenceStarted)})
    assert len(seqs) >= 3 and seqs == list(range(len(seqs)))
    expected = []
    for seq in seqs:
        expected += [("SentenceStarted", seq), ("Audio", seq), ("SentenceFinished", seq)]
    assert kinds == [*expected, ("Flushed", None)]
    assert events[-1] == Flushed(seqs[-1], "u1")
    assert " ".join(_texts(events)).split() == text.split()


def test_only_one_job_is_in_flight_and_flushed_waits_for_the_last_sentence():
    core = _core()
    core.send_text("One sentence that is long enough. Another sentence that is long enough.", 0.0)
    core.flush(0.0)
    job, _ = core.next_job(0.0)
    assert core.next_job(0.0) is None
    assert not any(isinstance(e, Flushed) for e in core.job_done(job, b"", 0.0))
    job, _ = core.next_job(0.0)
    assert isinstance(core.job_done(job, b"", 0.0)[-1], Flushed)


def test_empty_flush_answers_at_once():
    assert _core().flush(0.0, "nothing") == [Flushed(-1, "nothing")]


def test_cancel_drops_queued_text_and_ignores_the_job_in_flight():
    core = _core()
    core.send_text("A first sentence to speak. A second sentence to speak. Unfinished tail", 0.0)
    job, _ = core.next_job(0.0)
    events = core.cancel(0.0)
    assert isinstance(events[-1], Cancelled)
    assert events[-1].last_seq >= job.seq
    # The stale result arrives after the cancel: nothing of it may be emitted.
    assert core.job_done(job, b"\x01\x00", 0.1) == []
    assert core.next_job(0.0) is None
    assert core.buffered_chars == 0
    # The session keeps serving: new text gets fresh sequence numbers after the cancelled ones.
    core.send_text("Fresh words after the cancel.", 1.0)
    core.flush(1.0)
    after = _run_all(core, 1.0)
    started = [e for e in after if isinstance(e, SentenceStarted)]
    assert started and all(e.seq > events[-1].last_seq for e in started)
    assert not any(isinstance(e, Audio) and e.seq <= events[-1].last_seq for e in after)


def test_cancel_answers_every_pending_flush_and_whole_request_before_saying_cancelled():
    core = _core()
    core.send_text("A sentence that is being spoken now. ", 0.0)
    core.flush(0.0, "f1")
    core.synthesize("A whole request that will be dropped.", 0.5, request_id="r1")
    core.send_text("More streamed text", 0.6)
    core.flush(0.6, "f2")
    job, _ = core.next_job(1.0)
    events = core.cancel(2.0)
    assert [type(e) for e in events] == [Flushed, RequestStarted, RequestFinished, Flushed, Cancelled]
    assert events[0] == Flushed(job.seq, "f1", cancelled=True)
    assert events[2].request_id == "r1" and events[2].cancelled and events[2].audio_s == 0.0
    assert events[2].elapsed_s == pytest.approx(1.5)
    assert events[3].request_id == "f2" and events[3].cancelled
    assert core.cancel(3.0) == [Cancelled(job.seq)]  # nothing left to answer the second time


def test_first_sentence_of_each_utterance_is_marked_urgent_and_deadlines_accumulate():
    core = _core()
    core.send_text("Here is the first sentence of many. Here is the second sentence of many. ", 0.0)
    core.send_text("Here is the third sentence of many.", 0.0)
    core.flush(0.0)
    jobs = []
    while (handed := core.next_job(0.0)) is not None:
        job, _ = handed
        jobs.append(job)
        core.job_done(job, b"", 0.5)
    assert [j.first_of_utterance for j in jobs] == [True] + [False] * (len(jobs) - 1)
    assert [j.audio_before_s for j in jobs] == [0.5 * i for i in range(len(jobs))]
    core.send_text("A new utterance starts here.", 1.0)
    core.flush(1.0)
    job, _ = core.next_job(1.0)
    assert job.first_of_utterance and job.audio_before_s == 0.0


def test_close_finishes_what_was_asked_then_closes_and_refuses_more():
    core = _core()
    core.send_text("Please finish this sentence before closing", 0.0)
    assert core.close(0.0) == []
    events = _run_all(core)
    assert isinstance(events[-1], Closed)
    assert any(isinstance(e, SentenceFinished) for e in events)
    refused = core.send_text("more", 1.0)
    assert refused[0].code == ErrorCode.SESSION_CLOSING
    assert core.closed


def test_close_with_nothing_pending_closes_at_once():
    assert _core().close(0.0) == [Closed()]


def test_failed_sentence_reports_an_error_and_the_rest_still_plays():
    core = _core()
    core.send_text("This sentence will fail to render. This one will render fine though.", 0.0)
    core.flush(0.0)
    job, _ = core.next_job(0.0)
    events = core.job_failed(job, ErrorCode.SYNTHESIS_FAILED, "boom")
    assert events[0] == Error(ErrorCode.SYNTHESIS_FAILED, "boom", seq=job.seq)
    rest = _run_all(core)
    assert any(isinstance(e, SentenceFinished) for e in rest)
    assert isinstance(rest[-1], Flushed)


def test_oversized_message_and_full_buffer_are_refused_without_losing_accepted_text():
    core = _core(max_message_chars=50, max_buffered_chars=80)
    assert core.send_text("x" * 51, 0.0)[0].code == ErrorCode.TEXT_TOO_LONG
    assert core.send_text("Forty characters of text in this buffer ", 0.0) == []
    before = core.buffered_chars
    refused = core.send_text("y" * 45, 0.0)
    assert refused[0].code == ErrorCode.BUFFER_FULL
    assert core.buffered_chars == before
    core.flush(0.0)
    assert _texts(_run_all(core)) == ["Forty characters of text in this buffer"]


def test_compute_budget_counts_speed_per_message_and_per_session():
    core = _core(max_request_audio_s=60.0)
    text = "word " * 160  # about 53 s of audio at speed 1
    assert core.send_text(text, 0.0) == []
    core.cancel(0.0)
    refused = core.synthesize(text, 0.0, speed=0.25, request_id="slow")
    assert refused[0].code == ErrorCode.BUDGET_EXCEEDED and refused[0].request_id == "slow"
    assert "speed 0.25" in refused[0].message
    session = _core(max_session_audio_s=0.25)
    session.send_text("One sentence long enough to say. Two sentences long enough to say. Three more here.", 0.0)
    session.flush(0.0)
    events = _run_all(session)
    fatal = [e for e in events if isinstance(e, Error) and e.fatal]
    assert fatal and fatal[0].code == ErrorCode.BUDGET_EXCEEDED
    assert isinstance(events[-1], Closed) and session.closed


@pytest.mark.parametrize("speed", [0.0, 0.1, 5, float("nan"), float("inf"), "1", True, 10**400])
def test_speed_out_of_range_is_an_error_and_keeps_the_old_speed(speed):
    core = _core()
    events = core.configure(speed=speed)
    assert events[0].code == ErrorCode.BAD_SPEED
    assert len(events[0].message) < 120
    assert core.config.speed == 1.0


@pytest.mark.parametrize("delay", [-1, 30_001, float("nan"), "5", True, 10**400])
def test_buffer_delay_out_of_range_is_an_error_and_keeps_the_old_delay(delay):
    core = _core()
    assert core.configure(max_buffer_delay_ms=delay)[0].code == ErrorCode.BAD_MESSAGE
    assert core.config.max_buffer_delay_ms == 1000


def test_configure_applies_to_sentences_released_afterwards():
    core = _core()
    core.send_text("Spoken with the first voice. ", 0.0)
    core.configure(voice="am_adam", speed=1.5)
    core.send_text("Spoken with the second voice.", 0.0)
    core.flush(0.0)
    jobs = []
    while (handed := core.next_job(0.0)) is not None:
        jobs.append(handed[0])
        core.job_done(handed[0], b"", 0.0)
    assert jobs[-1].voice == "am_adam" and jobs[-1].speed == 1.5


def test_abort_closes_immediately_and_drops_work():
    core = _core()
    core.send_text("Some text that will never be spoken. More of it.", 0.0)
    job, _ = core.next_job(0.0)
    assert core.abort("peer gone", 0.0) == [Closed("peer gone")]
    assert core.job_done(job, b"\x00\x00", 0.1) == []
    assert core.next_job(0.0) is None


# ---- release on quiet ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Sure. ",
        "Okay!",
        "Really? ",
        "Wait… ",
        "我来把灯关掉。",
        "好的！",
        "Done.\n",
    ],
)
def test_a_finished_sentence_is_released_a_quarter_second_after_its_end_with_no_more_text(text):
    core = _core()
    core.send_text(text, 10.0)
    assert core.next_job(10.0) is None  # held: the chunker cannot yet be sure
    assert core.next_deadline() == pytest.approx(10.25)
    assert core.timer(10.2) == [] and core.next_job(10.2) is None
    core.timer(10.25)
    job, _events = core.next_job(10.25)
    assert job.text == text.strip() and job.first_of_utterance
    assert core.next_deadline() is None


@pytest.mark.parametrize("text", ["I will turn off the lights.", "I will turn off the lights. ", "Is it on?"])
def test_a_clear_sentence_end_is_released_with_its_token_not_the_next_one(text):
    core = _core()
    core.send_text(text, 10.0)
    job, _ = core.next_job(10.0)
    assert job.text == text.strip() and job.first_of_utterance
    assert core.next_deadline() is None


@pytest.mark.parametrize("text", ["I will turn off the lights.", "Sure. "])
def test_a_flush_after_its_sentence_went_to_the_model_still_names_it(text):
    core = _core()
    core.send_text(text, 0.0)
    core.timer(0.25)  # "Sure." goes out on quiet; the other at once
    job, _ = core.next_job(0.25)
    assert core.flush(0.3) == []
    assert core.job_done(job, PCM_100MS, 0.4)[-1] == Flushed(job.seq, None)
    assert core.flush(0.5) == [Flushed(-1, None)]  # nothing said since


def test_text_without_a_sentence_end_waits_the_buffer_delay_after_the_last_fragment():
    core = _core(max_buffer_delay_ms=800)
    core.send_text("Let me check", 0.0)
    core.send_text(" the", 0.5)
    assert core.next_deadline() == pytest.approx(1.3)
    core.timer(1.29)
    assert core.next_job(1.29) is None
    core.timer(1.3)
    job, _ = core.next_job(1.3)
    assert job.text == "Let me check the"


def test_the_rest_of_a_forced_early_cut_goes_out_at_its_end_not_glued_to_the_next_sentence():
    core = _core()
    core.send_text("Let me check the current thermostat settings in the living room for you. ", 0.0)
    first, _ = core.next_job(0.0)
    assert first.text.startswith("Let me check") and not first.text.endswith("you.")
    core.job_done(first, b"", 0.0)
    rest, _ = core.next_job(0.0)  # a clear end: it does not wait for the next token
    assert " ".join([first.text, rest.text]).split() == (
        "Let me check the current thermostat settings in the living room for you.".split()
    )


def test_a_short_sentence_is_not_kept_for_a_next_sentence_that_is_still_arriving():
    core = _core()
    core.send_text("Sure. ", 0.0)
    for i, token in enumerate("I will turn off the lights in the kitchen now".split()):
        core.send_text(token + " ", 0.05 * (i + 1))  # a steady stream: never quiet for 250 ms
        core.timer(0.05 * (i + 1))
    job, _ = core.next_job(0.5)
    assert job.text == "Sure."


def test_short_sentences_in_hand_together_still_merge():
    core = _core()
    core.synthesize("Ok. Let me look into it right away.", 0.0, request_id="r")
    events = _run_all(core)
    assert _texts(events) == ["Ok. Let me look into it right away."]


def test_zero_buffer_delay_releases_whatever_is_held_at_each_message():
    core = _core(max_buffer_delay_ms=0)
    core.send_text("Hello there", 0.0)
    job, _ = core.next_job(0.0)
    assert job.text == "Hello there"


# ---- whole requests -------------------------------------------------------------------------------------


def test_a_whole_request_is_framed_and_speaks_held_streamed_text_first_in_the_session_voice():
    core = _core()
    core.send_text("Streamed words still held", 0.0)
    events = core.synthesize("Hello there. Bye now, see you.", 1.0, voice="am_adam", speed=1.2, request_id="r1")
    assert events == []
    events = _run_all(core, 2.0)
    assert isinstance(events[0], SentenceStarted) and events[0].text == "Streamed words still held"
    start = next(i for i, e in enumerate(events) if isinstance(e, RequestStarted))
    assert events[start] == RequestStarted("r1")
    finished = events[-1]
    assert isinstance(finished, RequestFinished) and finished.request_id == "r1" and not finished.cancelled
    assert finished.audio_s == pytest.approx(0.1 * len(_texts(events[start:])))
    assert finished.elapsed_s == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [({"text": "   "}, ErrorCode.EMPTY_TEXT), ({"text": "Hi.", "speed": 9}, ErrorCode.BAD_SPEED)],
)
def test_a_bad_whole_request_is_refused_with_its_request_id(kwargs, code):
    core = _core()
    text = kwargs.pop("text")
    events = core.synthesize(text, 0.0, request_id="bad", **kwargs)
    assert events[0].code == code and events[0].request_id == "bad"
    assert not core.has_work


# ---- backpressure, fairness, shutdown -------------------------------------------------------------------


def test_synthesis_waits_while_the_listener_is_the_limit_behind_and_resumes_as_audio_is_taken():
    core = _core(max_audio_ahead_s=0.25)
    core.send_text("First sentence of this reply. Second sentence of this reply. Third sentence here. ", 0.0)
    core.send_text("And the fourth sentence waits.", 0.0)
    core.flush(0.0)
    for _ in range(3):
        job, _ = core.next_job(0.0)
        core.job_done(job, PCM_100MS, 0.1)
    assert core.audio_ahead_s == pytest.approx(0.3)
    assert core.throttled and core.next_job(0.0) is None and not core.synthesizing
    core.audio_consumed(0.1)
    assert core.next_job(0.0) is not None


def test_a_long_sentence_is_split_at_a_clause_when_others_wait_and_its_request_waits_for_both_parts():
    sentence = (
        "When the storm finally passed over the valley late in the evening, the farmers walked out to their "
        "fields, counted the broken fences, and started to plan the long repairs of the coming week."
    )
    text = "Here is the news for tonight. " + sentence
    core = _core()
    core.synthesize(text, 0.0, request_id="r")
    opening, _ = core.next_job(0.0)
    core.job_done(opening, PCM_100MS, 0.1)
    first, _ = core.next_job(0.0, split_above_phonemes=100)
    assert first.text.endswith(",") and len(first.text) < len(sentence)
    assert core.job_done(first, PCM_100MS, 0.1)[-1] == SentenceFinished(first.seq, 0.1)
    events = _run_all(core)
    assert isinstance(events[-1], RequestFinished)
    assert " ".join([opening.text, first.text, *_texts(events)]).split() == text.split()
    whole = _core()
    whole.synthesize(text, 0.0)
    opening, _ = whole.next_job(0.0)
    whole.job_done(opening, b"", 0.0)
    job, _ = whole.next_job(0.0)
    assert job.text == sentence  # nobody waiting: no seam


def test_wind_down_lets_the_sentence_in_flight_finish_then_cancels_the_rest_and_closes():
    core = _core()
    core.send_text("A sentence being spoken at shutdown. Another one queued behind it. ", 0.0)
    core.flush(0.0, "turn")
    job, _ = core.next_job(0.0)
    assert core.wind_down(1.0) == []
    assert core.next_job(1.0) is None
    events = core.job_done(job, PCM_100MS, 0.1, now=2.0)
    kinds = [type(e) for e in events]
    assert kinds == [Audio, SentenceFinished, Flushed, Cancelled, Closed]
    assert events[2].cancelled and events[-1] == Closed(SHUTDOWN_REASON)
    idle = _core()
    assert idle.wind_down(0.0) == [Closed(SHUTDOWN_REASON)]


def test_the_quiet_clock_of_a_sentence_starts_when_its_own_end_arrives():
    core = _core()
    core.send_text("Good morning to all of you. ", 0.0)
    core.send_text("The lights are off.", 0.2)  # confirms the first sentence; the second ends with no space yet
    first, _ = core.next_job(0.2)
    assert first.text == "Good morning to all of you."
    core.job_done(first, b"", 0.0)
    assert core.next_deadline() == pytest.approx(0.45)
