"""Admission by expected wait, the pure core: the wait behind a session's own backlog, and the refusal's hint."""

from __future__ import annotations

import pytest

from voicedesk.engine.events import SessionConfig
from voicedesk.engine.limits import QueueLoad, judge, refusal_message
from voicedesk.engine.session import SessionCore
from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker


def test_no_backlog_is_no_wait_whatever_else_waits():
    load = QueueLoad(s_per_phoneme=0.5, own_phonemes=0, queue_depth=400)
    assert load.expected_wait_s() == 0.0
    assert judge(load, target_s=0.3) is None  # a client holding no backlog is never refused by the wait
    refused = judge(load, target_s=0.3, max_queue_depth=8)  # only the count backstop, when asked for
    assert refused is not None and refused.reason == "queue_depth" and refused.retry_after_s == 5


def test_own_backlog_with_no_measured_speed_is_admitted():
    load = QueueLoad(s_per_phoneme=None, own_phonemes=400)
    assert load.expected_wait_s() is None
    assert judge(load, target_s=0.3) is None


def test_the_listeners_audio_in_hand_covers_part_of_the_wait():
    load = QueueLoad(s_per_phoneme=0.01, own_phonemes=430)
    assert load.expected_wait_s() == pytest.approx(4.3)
    refused = judge(load, target_s=1.0)
    assert refused is not None and refused.reason == "expected_wait"
    assert refused.retry_after_s == 4  # 4.3 s of its own work, target 1 s: 3.3 s rounded up
    assert refusal_message(refused).startswith("queue_saturated: this session's own requests ahead of this one")
    assert judge(QueueLoad(0.01, own_phonemes=430, in_hand_s=3.5), target_s=1.0) is None
    assert judge(QueueLoad(0.01, own_phonemes=430, in_hand_s=3.0), target_s=1.0).retry_after_s == 1  # type: ignore[union-attr]
    assert judge(load, target_s=5.0) is None
    assert judge(load, target_s=None) is None  # the check off


def test_a_sessions_backlog_counts_its_queued_in_flight_and_held_text():
    core = SessionCore(IncrementalSentenceChunker(), SessionConfig(max_buffer_delay_ms=200))
    assert core.backlog_phonemes == 0
    core.synthesize("The cat sat on the mat. The dog ran off fast.", 0.0)
    queued = core.backlog_phonemes
    assert queued > 20
    handed = core.next_job(0.0)
    assert handed is not None and core.backlog_phonemes == queued  # in flight still counts
    core.send_text("and some text still held", 0.0)
    assert core.backlog_phonemes == queued + len("and some text still held")
    core.cancel(0.0)
    assert core.backlog_phonemes == 0
