"""The session state machine alone: ordering, flush, cancel, close, limits — no model, no threads."""

from __future__ import annotations

import pytest

from engine.chunker import IncrementalSentenceChunker
from engine.errors import ErrorCode
from engine.events import Audio, Cancelled, Closed, Error, Flushed, SentenceFinished, SentenceStarted
from engine.session import SessionCore, SessionLimits


def _core(**limits) -> SessionCore:
    return SessionCore(IncrementalSentenceChunker(), limits=SessionLimits(**limits))


def _run_all(core: SessionCore) -> list:
    """Plays the synthesizer: completes every job in order with 0.1 s of fake PCM bytes per sentence."""
    events = []
    while (handed := core.next_job()) is not None:
        job, started = handed
        events.extend(started)
        events.extend(core.job_done(job, b"\x00\x00" * 2400, 0.1))
    return events


def test_sentences_are_numbered_and_each_is_started_voiced_and_finished_in_order():
    core = _core()
    assert core.send_text("The first sentence is here. The second one follows it. And a third") == []
    events = core.flush("u1")
    events += _run_all(core)
    kinds = [(type(e).__name__, getattr(e, "seq", None)) for e in events]
    seqs = sorted({e.seq for e in events if isinstance(e, SentenceStarted)})
    assert len(seqs) >= 3 and seqs == list(range(len(seqs)))
    expected = []
    for seq in seqs:
        expected += [("SentenceStarted", seq), ("Audio", seq), ("SentenceFinished", seq)]
    assert kinds == [*expected, ("Flushed", None)]
    assert events[-1] == Flushed(seqs[-1], "u1")
    spoken = " ".join(e.text for e in events if isinstance(e, SentenceStarted))
    assert spoken.split() == "The first sentence is here. The second one follows it. And a third".split()


def test_only_one_job_is_in_flight_and_flushed_waits_for_the_last_sentence():
    core = _core()
    core.send_text("One sentence that is long enough. Another sentence that is long enough.")
    core.flush()
    job, _ = core.next_job()
    assert core.next_job() is None
    assert not any(isinstance(e, Flushed) for e in core.job_done(job, b"", 0.0))
    job, _ = core.next_job()
    assert isinstance(core.job_done(job, b"", 0.0)[-1], Flushed)


def test_empty_flush_answers_at_once():
    core = _core()
    assert core.flush("nothing") == [Flushed(-1, "nothing")]


def test_cancel_drops_queued_text_and_ignores_the_job_in_flight():
    core = _core()
    core.send_text("A first sentence to speak. A second sentence to speak. Unfinished tail")
    job, _ = core.next_job()
    events = core.cancel()
    assert isinstance(events[0], Cancelled)
    assert events[0].last_seq >= job.seq
    # The stale result arrives after the cancel: nothing of it may be emitted.
    assert core.job_done(job, b"\x01\x00", 0.1) == []
    assert core.next_job() is None
    assert core.buffered_chars == 0
    # The session keeps serving: new text gets fresh sequence numbers after the cancelled ones.
    core.send_text("Fresh words after the cancel.")
    core.flush()
    after = _run_all(core)
    started = [e for e in after if isinstance(e, SentenceStarted)]
    assert started and all(e.seq > events[0].last_seq for e in started)
    assert not any(isinstance(e, Audio) and e.seq <= events[0].last_seq for e in after)


def test_first_sentence_of_each_utterance_is_marked_urgent_and_deadlines_accumulate():
    core = _core()
    core.send_text("Here is the first sentence of many. Here is the second sentence of many. ")
    core.send_text("Here is the third sentence of many.")
    core.flush()
    jobs = []
    while (handed := core.next_job()) is not None:
        job, _ = handed
        jobs.append(job)
        core.job_done(job, b"", 0.5)
    assert [j.first_of_utterance for j in jobs] == [True] + [False] * (len(jobs) - 1)
    assert [j.audio_before_s for j in jobs] == [0.5 * i for i in range(len(jobs))]
    core.send_text("A new utterance starts here.")
    core.flush()
    job, _ = core.next_job()
    assert job.first_of_utterance and job.audio_before_s == 0.0


def test_close_finishes_what_was_asked_then_closes_and_refuses_more():
    core = _core()
    core.send_text("Please finish this sentence before closing")
    assert core.close() == []
    events = _run_all(core)
    assert isinstance(events[-1], Closed)
    assert any(isinstance(e, SentenceFinished) for e in events)
    refused = core.send_text("more")
    assert refused[0].code == ErrorCode.SESSION_CLOSING
    assert core.closed


def test_close_with_nothing_pending_closes_at_once():
    assert _core().close() == [Closed()]


def test_failed_sentence_reports_an_error_and_the_rest_still_plays():
    core = _core()
    core.send_text("This sentence will fail to render. This one will render fine though.")
    core.flush()
    job, _ = core.next_job()
    events = core.job_failed(job, ErrorCode.SYNTHESIS_FAILED, "boom")
    assert events[0] == Error(ErrorCode.SYNTHESIS_FAILED, "boom", seq=job.seq)
    rest = _run_all(core)
    assert any(isinstance(e, SentenceFinished) for e in rest)
    assert isinstance(rest[-1], Flushed)


def test_oversized_message_and_full_buffer_are_refused_without_losing_accepted_text():
    core = _core(max_message_chars=50, max_buffered_chars=80)
    assert core.send_text("x" * 51)[0].code == ErrorCode.TEXT_TOO_LONG
    assert core.send_text("Forty characters of text in this buffer ") == []
    before = core.buffered_chars
    refused = core.send_text("y" * 45)
    assert refused[0].code == ErrorCode.BUFFER_FULL
    assert core.buffered_chars == before
    core.flush()
    spoken = " ".join(e.text for e in _run_all(core) if isinstance(e, SentenceStarted))
    assert spoken == "Forty characters of text in this buffer"


@pytest.mark.parametrize("speed", [0.0, 0.1, 5, float("nan"), float("inf"), "1", True])
def test_speed_out_of_range_is_an_error_and_keeps_the_old_speed(speed):
    core = _core()
    events = core.configure(speed=speed)
    assert events[0].code == ErrorCode.BAD_SPEED
    assert core.config.speed == 1.0


def test_configure_applies_to_sentences_released_afterwards():
    core = _core()
    core.send_text("Spoken with the first voice. ")
    core.configure(voice="am_adam", speed=1.5)
    core.send_text("Spoken with the second voice.")
    core.flush()
    jobs = []
    while (handed := core.next_job()) is not None:
        jobs.append(handed[0])
        core.job_done(handed[0], b"", 0.0)
    assert jobs[-1].voice == "am_adam" and jobs[-1].speed == 1.5


def test_abort_closes_immediately_and_drops_work():
    core = _core()
    core.send_text("Some text that will never be spoken. More of it.")
    job, _ = core.next_job()
    assert core.abort("peer gone") == [Closed("peer gone")]
    assert core.job_done(job, b"\x00\x00", 0.1) == []
    assert core.next_job() is None
