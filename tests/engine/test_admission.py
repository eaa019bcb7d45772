"""Admission by expected wait, the pure core: the wait ahead of a new first sentence and the refusal's hint."""

from __future__ import annotations

import asyncio
import threading

import pytest

from voicedesk.engine.admission import QueueLoad, judge, refusal_message
from voicedesk.engine.scheduler import SynthesisScheduler


def test_nothing_ahead_is_no_wait_even_before_anything_was_measured():
    assert QueueLoad(s_per_phoneme=None).expected_wait_s() == 0.0
    assert judge(QueueLoad(s_per_phoneme=None), target_s=0.3) is None


def test_work_ahead_with_no_measured_speed_is_admitted_unless_the_count_backstop_says_no():
    load = QueueLoad(s_per_phoneme=None, running_phonemes=40, queued_first_phonemes=400, queue_depth=10)
    assert load.expected_wait_s() is None
    assert judge(load, target_s=0.3) is None
    refused = judge(load, target_s=0.3, max_queue_depth=8)
    assert refused is not None and refused.reason == "queue_depth" and refused.retry_after_s == 5


def test_wait_is_the_running_calls_rest_plus_the_first_sentences_queued():
    load = QueueLoad(s_per_phoneme=0.01, running_phonemes=100, running_elapsed_s=0.4, queued_first_phonemes=150)
    assert load.expected_wait_s() == pytest.approx(0.6 + 1.5)
    overdue = QueueLoad(s_per_phoneme=0.01, running_phonemes=100, running_elapsed_s=3.0)
    assert overdue.expected_wait_s() == 0.0  # a call running longer than expected is not counted below zero


def test_refusal_hint_is_when_the_backlog_would_be_back_under_the_target():
    load = QueueLoad(s_per_phoneme=0.01, queued_first_phonemes=430, queue_depth=5)
    refused = judge(load, target_s=1.0)
    assert refused is not None and refused.reason == "expected_wait"
    assert refused.retry_after_s == 4  # 4.3 s of work, target 1 s: 3.3 s rounded up
    assert refusal_message(refused).startswith("queue_saturated: a new sentence would wait about 4.3 s")
    assert judge(QueueLoad(s_per_phoneme=0.01, queued_first_phonemes=101), target_s=1.0).retry_after_s == 1
    assert judge(load, target_s=5.0) is None
    assert judge(load, target_s=None) is None  # the check off


async def test_scheduler_load_counts_first_sentences_ahead_and_leaves_out_the_asking_session():
    scheduler = SynthesisScheduler()
    gate, started = threading.Event(), threading.Event()

    def held() -> str:
        started.set()
        gate.wait(10)
        return "held"

    # A measured call teaches the speed: 20 phonemes in however long a trivial call takes.
    await scheduler.submit("warm", lambda: "quick", urgent=True, deadline=0.0, size=20)
    assert scheduler.estimated_call_s(20) is not None
    stop_a = threading.Event()
    running = scheduler.submit("a", held, urgent=True, deadline=0.0, size=30, interrupt=stop_a)
    await asyncio.to_thread(started.wait, 10)
    later = scheduler.submit("b", lambda: "b", urgent=False, deadline=5.0, size=50)
    first = scheduler.submit("c", lambda: "c", urgent=True, deadline=1.0, size=70)
    mine = scheduler.submit("d", lambda: "d", urgent=True, deadline=2.0, size=90)
    load = scheduler.load(now=float("inf"))  # time passed in: the held call is long overdue
    assert (load.running_phonemes, load.running_elapsed_s) == (30, float("inf"))
    assert load.queued_first_phonemes == 70 + 90 and load.queue_depth == 3  # b's later sentence goes after
    own = scheduler.load("d", now=float("inf"))
    assert own.queued_first_phonemes == 70
    assert scheduler.load("a").running_phonemes == 0  # its own call is not load for session a
    scheduler.cancel_session("a")
    assert stop_a.is_set() and scheduler.busy
    assert scheduler.load().running_phonemes == 0  # a call being stopped is not work ahead either
    gate.set()
    assert [await f for f in (running, first, mine, later)] == ["held", "c", "d", "b"]
    await scheduler.aclose()
