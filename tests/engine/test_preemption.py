"""When a first sentence may stop a call already on the model (the pure policy)."""

from __future__ import annotations

from voicedesk.engine.scheduler import MAX_WASTE_FRACTION, SLACK_MARGIN_S, WORTH_FRACTION, RunningCall, should_preempt

SPEED = 0.001
"""Seconds of model time per phoneme (a fast model)."""


def _far_ahead(**changes: object) -> RunningCall:
    """A 500-phoneme call (0.5 s) of a session whose audio is needed 60 s from now, just started."""
    values: dict[str, object] = {"urgent": False, "deadline": 60.0, "size": 500, "elapsed_s": 0.01}
    values.update(changes)
    return RunningCall(**values)  # type: ignore[arg-type]


def test_a_call_far_ahead_of_its_listener_is_stopped_for_a_first_sentence():
    assert should_preempt(_far_ahead(), arrival=0.0, first_size=40, s_per_phoneme=SPEED)


def test_a_first_sentence_on_the_model_is_stopped_only_for_a_much_shorter_one():
    """Both listeners wait in silence: the shorter wait goes first (what is left of the running one against the
    newcomer's call plus the work thrown away)."""
    long_first = _far_ahead(urgent=True, elapsed_s=0.1)  # 0.4 s left
    assert should_preempt(long_first, arrival=0.0, first_size=40, s_per_phoneme=SPEED)  # 0.4 > 0.04 + 0.1
    short_first = _far_ahead(urgent=True, size=100, elapsed_s=0.05)  # 0.05 s left
    assert not should_preempt(short_first, arrival=0.0, first_size=40, s_per_phoneme=SPEED)


def test_not_when_the_session_would_hear_a_gap():
    # Needed at: the newcomer's call (0.04 s) + the first sentences ahead (0.1 s) + the redo (0.5 s) + margin.
    needed = 0.04 + 0.1 + 0.5 + SLACK_MARGIN_S
    running = _far_ahead(deadline=10.0 + needed)
    assert should_preempt(running, arrival=10.0, first_size=40, s_per_phoneme=SPEED, first_work_ahead=100)
    late = _far_ahead(deadline=10.0 + needed - 0.01)
    assert not should_preempt(late, arrival=10.0, first_size=40, s_per_phoneme=SPEED, first_work_ahead=100)


def test_not_when_what_is_left_is_short_next_to_the_newcomers_call():
    first_s = 40 * SPEED
    nearly_done = _far_ahead(elapsed_s=0.5 - WORTH_FRACTION * first_s + 0.001)
    assert not should_preempt(nearly_done, arrival=0.0, first_size=40, s_per_phoneme=SPEED)
    assert should_preempt(_far_ahead(elapsed_s=0.45), arrival=0.0, first_size=40, s_per_phoneme=SPEED)


def test_the_work_thrown_away_stays_bounded_by_the_calls_own_cost():
    budget = MAX_WASTE_FRACTION * 0.5
    assert should_preempt(_far_ahead(wasted_s=budget - 0.02), arrival=0.0, first_size=40, s_per_phoneme=SPEED)
    assert not should_preempt(_far_ahead(wasted_s=budget), arrival=0.0, first_size=40, s_per_phoneme=SPEED)


def test_not_before_the_models_speed_is_known():
    assert not should_preempt(_far_ahead(), arrival=0.0, first_size=40, s_per_phoneme=None)


def test_a_call_already_late_for_its_listener_is_stopped_when_what_is_left_is_the_longer_wait():
    """A model slower than a session's speech (a flood on a CPU): its listener waits anyway, so the shorter of the
    two waits goes first; the newcomer does not wait behind a whole long call."""
    slow = 0.02  # seconds per phoneme: a 500-phoneme call takes 10 s
    late = _far_ahead(deadline=5.0, elapsed_s=2.0)  # 8 s left
    assert should_preempt(late, arrival=10.0, first_size=40, s_per_phoneme=slow)  # 8 s > 0.8 s + 2 s lost
    nearly = _far_ahead(deadline=5.0, elapsed_s=7.5)  # 2.5 s left < 0.8 s + 7.5 s lost
    assert not should_preempt(nearly, arrival=10.0, first_size=40, s_per_phoneme=slow)
    # Not late yet, but it will be: its audio is needed in 6 s and 8 s of it are left.
    assert should_preempt(_far_ahead(deadline=16.0, elapsed_s=2.0), arrival=10.0, first_size=40, s_per_phoneme=slow)


def test_a_busier_addresses_first_sentence_makes_way_for_a_quieter_ones():
    """Both wait in silence; the newcomer's address holds one session, the running one's four (fair share)."""
    running = _far_ahead(urgent=True, size=70, elapsed_s=0.02)  # 0.05 s left: not the longer wait
    assert not should_preempt(running, arrival=0.0, first_size=40, s_per_phoneme=SPEED, share=1)
    busy = _far_ahead(urgent=True, size=70, elapsed_s=0.02, share=4)
    assert should_preempt(busy, arrival=0.0, first_size=40, s_per_phoneme=SPEED, share=1)
    assert not should_preempt(busy, arrival=0.0, first_size=40, s_per_phoneme=SPEED, share=4)
