"""The policy that shares one model among sessions, and the worker that applies it."""

from __future__ import annotations

import asyncio
import threading

import pytest

from voicedesk.engine.scheduler import DeadlineQueue, SchedulerClosed, SynthesisScheduler


def test_first_sentences_go_before_any_deadline_then_earliest_deadline_first():
    queue = DeadlineQueue()
    queue.push("a", "a-later", urgent=False, deadline=5.0)
    queue.push("b", "b-later", urgent=False, deadline=2.0)
    queue.push("c", "c-first", urgent=True, deadline=9.0)
    queue.push("d", "d-first", urgent=True, deadline=3.0)
    order = [queue.pop_entry()[2] for _ in range(4)]
    assert order == ["d-first", "c-first", "b-later", "a-later"]
    assert queue.pop_entry() is None


def test_among_first_sentences_a_quieter_address_goes_first():
    """Issue 34: a newcomer's first sentence is not queued behind the fourth stream of a busy address."""
    queue = DeadlineQueue()
    queue.push("busy-4th", "busy", urgent=True, deadline=1.0, share=4)
    queue.push("later", "later", urgent=False, deadline=0.5)
    queue.push("newcomer", "newcomer", urgent=True, deadline=2.0, share=1)
    assert [queue.pop_entry()[2] for _ in range(3)] == ["newcomer", "busy", "later"]


def test_equal_keys_keep_submission_order():
    queue = DeadlineQueue()
    for name in "xyz":
        queue.push(name, name, urgent=False, deadline=1.0)
    assert [queue.pop_entry()[2] for _ in range(3)] == ["x", "y", "z"]


def test_removing_a_session_drops_only_its_jobs():
    queue = DeadlineQueue()
    queue.push("a", 1, urgent=True, deadline=0.0)
    queue.push("b", 2, urgent=True, deadline=0.0)
    queue.push("a", 3, urgent=False, deadline=0.0)
    assert sorted(queue.remove_session("a")) == [1, 3]
    assert len(queue) == 1
    assert queue.sessions() == {"b"}
    assert queue.pop_entry()[2] == 2


def _blocker():
    gate = threading.Event()
    started = threading.Event()

    def call():
        started.set()
        gate.wait(10)
        return "blocker"

    return call, gate, started


async def test_scheduler_runs_jobs_one_at_a_time_in_policy_order():
    scheduler = SynthesisScheduler()
    ran: list[str] = []
    block, gate, started = _blocker()
    first = scheduler.submit("s0", block, urgent=True, deadline=0.0)
    await asyncio.to_thread(started.wait, 10)
    # Queued while the worker is busy: the urgent one must overtake the earlier-submitted deadline job.
    later = scheduler.submit("s1", lambda: ran.append("s1-later") or "l", urgent=False, deadline=1.0)
    urgent = scheduler.submit("s2", lambda: ran.append("s2-first") or "u", urgent=True, deadline=2.0)
    assert scheduler.busy
    gate.set()
    assert await first == "blocker"
    assert await urgent == "u"
    assert await later == "l"
    assert ran == ["s2-first", "s1-later"]
    assert await scheduler.wait_idle(5)
    await scheduler.aclose()


async def test_cancel_session_cancels_its_queued_futures_and_leaves_others():
    scheduler = SynthesisScheduler()
    block, gate, started = _blocker()
    running = scheduler.submit("a", block, urgent=True, deadline=0.0)
    await asyncio.to_thread(started.wait, 10)
    dropped = scheduler.submit("a", lambda: "never", urgent=False, deadline=0.0)
    kept = scheduler.submit("b", lambda: "kept", urgent=False, deadline=0.0)
    assert scheduler.cancel_session("a") == 1
    assert dropped.cancelled()
    gate.set()
    assert await running == "blocker"  # a running job cannot be interrupted; its owner ignores the result
    assert await kept == "kept"
    assert await scheduler.wait_idle(5)
    assert scheduler.pending == 0
    await scheduler.aclose()


async def test_errors_reach_the_submitter_and_the_worker_keeps_going():
    scheduler = SynthesisScheduler()

    def boom():
        raise ValueError("bad chunk")

    failing = scheduler.submit("a", boom, urgent=True, deadline=0.0)
    after = scheduler.submit("a", lambda: 42, urgent=True, deadline=0.0)
    with pytest.raises(ValueError, match="bad chunk"):
        await failing
    assert await after == 42
    await scheduler.aclose()
    with pytest.raises(SchedulerClosed):
        scheduler.submit("a", lambda: 1, urgent=True, deadline=0.0)


async def test_scheduler_does_not_look_idle_between_a_sessions_sentences():
    """A session submits its next sentence from the previous one's done-callback; idle must not flash between."""
    scheduler = SynthesisScheduler()
    seen_idle_in_callback: list[bool] = []
    chained: list[asyncio.Future] = []

    def next_sentence(_future):
        seen_idle_in_callback.append(scheduler._idle.is_set())
        chained.append(scheduler.submit("a", lambda: "second", urgent=False, deadline=1.0))

    first = scheduler.submit("a", lambda: "first", urgent=True, deadline=0.0)
    first.add_done_callback(next_sentence)
    assert await first == "first"
    await asyncio.sleep(0)
    assert await chained[0] == "second"
    assert seen_idle_in_callback == [False]
    await scheduler.aclose()


async def test_jobs_ready_together_run_as_one_batch_in_queue_order_with_first_sentences_apart():
    batches: list[list[str]] = []

    def run_batch(items, _should_stop):
        batches.append(list(items))
        return [f"{item}-done" for item in items]

    scheduler = SynthesisScheduler(batch_runner=run_batch)
    block, gate, started = _blocker()
    running = scheduler.submit("s0", block, urgent=True, deadline=0.0)
    await asyncio.to_thread(started.wait, 10)
    futures = {
        "a1": scheduler.submit("a", lambda: "alone", urgent=True, deadline=1.0, size=10, batch_item="a1"),
        "b1": scheduler.submit("b", lambda: "alone", urgent=True, deadline=2.0, size=12, batch_item="b1"),
        "c2": scheduler.submit("c", lambda: "alone", urgent=False, deadline=0.5, size=10, batch_item="c2"),
        "d2": scheduler.submit("d", lambda: "alone", urgent=False, deadline=0.7, size=40, batch_item="d2"),
        "e1": scheduler.submit("e", lambda: "alone", urgent=True, deadline=3.0, size=100, batch_item="e1"),
    }
    gate.set()
    assert await running == "blocker"
    results = {name: await future for name, future in futures.items()}
    # First sentences together (e1 is too long to ride with a1), later sentences apart from them; d2 likewise.
    assert batches == [["a1", "b1"]]
    assert results == {"a1": "a1-done", "b1": "b1-done", "c2": "alone", "d2": "alone", "e1": "alone"}
    assert (scheduler.batches_run, scheduler.jobs_run) == (1, 6)
    await scheduler.aclose()


class _Stopped(Exception):
    pass


def _stoppable(name: str, runs: list[str], interrupt: threading.Event, gate: threading.Event, started: threading.Event):
    """A call that, like the synthesizer, polls its interrupt between slices of work until ``gate`` lets it end."""

    def call():
        runs.append(f"{name} started")
        started.set()
        while not gate.wait(0.001):
            if interrupt.is_set():
                runs.append(f"{name} stopped")
                raise _Stopped(name)
        runs.append(f"{name} done")
        return name

    return call


async def test_a_first_sentence_stops_a_call_far_ahead_of_its_listener_and_that_call_runs_again_after_it():
    scheduler = SynthesisScheduler(s_per_phoneme=0.01)
    runs: list[str] = []
    interrupt, gate, started = threading.Event(), threading.Event(), threading.Event()
    ahead = scheduler.submit(
        "agent",
        _stoppable("agent", runs, interrupt, gate, started),
        urgent=False,
        deadline=100.0,
        interrupt=interrupt,
        size=300,
    )
    await asyncio.to_thread(started.wait, 10)
    first = scheduler.submit(
        "newcomer", lambda: runs.append("newcomer") or gate.set() or "hello", urgent=True, deadline=0.0, size=30
    )
    assert await first == "hello"
    assert await ahead == "agent"  # the stop is the scheduler's business: the agent's session gets its audio
    assert runs == ["agent started", "agent stopped", "newcomer", "agent started", "agent done"]
    assert scheduler.preemptions == 1
    assert await scheduler.wait_idle(5)
    await scheduler.aclose()


async def test_a_call_whose_audio_is_needed_soon_is_not_stopped_and_a_cancelled_one_is_not_queued_again():
    scheduler = SynthesisScheduler(s_per_phoneme=0.01)
    runs: list[str] = []
    interrupt, gate, started = threading.Event(), threading.Event(), threading.Event()
    needed_soon = scheduler.submit(
        "talker",
        _stoppable("talker", runs, interrupt, gate, started),
        urgent=False,
        deadline=3.5,  # it ends in time (3 s); after the newcomer, a redo would not
        interrupt=interrupt,
        size=300,
    )
    await asyncio.to_thread(started.wait, 10)
    first = scheduler.submit("newcomer", lambda: runs.append("newcomer") or "hello", urgent=True, deadline=0.0, size=30)
    assert not interrupt.is_set()  # decided when the first sentence was queued
    gate.set()
    assert await needed_soon == "talker"
    assert await first == "hello"
    assert runs == ["talker started", "talker done", "newcomer"]

    runs.clear()
    interrupt, gate, started = threading.Event(), threading.Event(), threading.Event()
    far = scheduler.submit(
        "agent",
        _stoppable("agent", runs, interrupt, gate, started),
        urgent=False,
        deadline=100.0,
        interrupt=interrupt,
        size=300,
    )
    await asyncio.to_thread(started.wait, 10)
    scheduler.cancel_session("agent")
    with pytest.raises(_Stopped):
        await far
    assert runs == ["agent started", "agent stopped"]
    assert scheduler.preemptions == 0
    await scheduler.aclose()


@pytest.mark.parametrize(("in_hand_s", "urgent"), [(0.0, True), (4.0, False)])
async def test_a_new_utterance_is_urgent_only_when_its_listener_has_nothing_left_to_hear(in_hand_s, urgent):
    """A client whose last reply is still playing has its next reply's first sentence scheduled by the time it will
    be needed, not ahead of a newcomer waiting in silence (issue 34: four speaking sessions must not keep a
    newcomer waiting behind their next replies)."""
    from voicedesk.app.lab.paced_synth import PacedSynthesizer
    from voicedesk.engine.events import SessionConfig
    from voicedesk.engine.session import SessionCore
    from voicedesk.engine.session_driver import SessionDriver
    from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker

    scheduler = SynthesisScheduler()
    block, gate, started = _blocker()
    blocking = scheduler.submit("other", block, urgent=True, deadline=0.0)
    await asyncio.to_thread(started.wait, 10)
    core = SessionCore(IncrementalSentenceChunker(), SessionConfig())
    driver = SessionDriver(
        core, PacedSynthesizer(), scheduler, "speaker", lambda events: None, in_hand=lambda _: in_hand_s
    )
    driver.apply(core.synthesize("The next reply starts here.", 0.0))
    waiting, smallest_urgent = scheduler.others_waiting("newcomer")
    assert waiting and (smallest_urgent is not None) == urgent
    gate.set()
    await blocking
    driver.stop()
    await scheduler.aclose()
