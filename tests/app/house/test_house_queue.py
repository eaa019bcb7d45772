"""The house queue's pure core with a fake clock: priorities, TTL, merging, quiet hours, interruption and resumption,
and one outcome per announcement."""

from __future__ import annotations

from datetime import time as dtime

import pytest

from voicedesk.app.house.queue import (
    HouseQueue,
    Outcome,
    Policy,
    Priority,
    QueueFull,
    QuietHours,
    Request,
    Source,
)

URGENT, NORMAL, LOW = Priority.URGENT, Priority.NORMAL, Priority.LOW


def queue(**policy) -> HouseQueue:
    return HouseQueue(Policy(**policy), local_time=lambda now: dtime(int(now // 3600) % 24, int(now % 3600 // 60)))


def ask(text: str, priority: Priority = NORMAL, **kw) -> Request:
    return Request(text, priority, **kw)


def test_higher_priority_first_and_arrival_order_within_one():
    q = queue()
    for text, priority in [("low one", LOW), ("normal one", NORMAL), ("urgent one", URGENT), ("normal two", NORMAL)]:
        q.offer(ask(text, priority), now=0)
    said = []
    while (item := q.next(1)[0]) is not None:
        said.append(item.text)
        assert q.spoken(item, 2).outcome is Outcome.SPOKEN
    assert said == ["urgent one", "normal one", "normal two", "low one"]


def test_only_an_urgent_one_interrupts_and_only_a_less_urgent_one():
    q = queue()
    q.offer(ask("normal"), 0)
    current, _ = q.next(0)
    assert not q.offer(ask("another normal"), 1).interrupt
    assert not q.offer(ask("low", LOW), 1).interrupt
    assert q.offer(ask("leak in the basement", URGENT), 1).interrupt
    q.interrupted(current, "", 2, resume=True)
    q.next(2)
    assert not q.offer(ask("second urgent", URGENT), 3).interrupt  # urgent does not cut urgent


def test_an_interrupted_one_resumes_from_what_remains_before_the_others_of_its_priority():
    q = queue()
    q.offer(ask("First sentence. Second sentence. Third."), 0)
    q.offer(ask("waiting normal"), 0)
    first, _ = q.next(0)
    q.offer(ask("urgent!", URGENT), 1)
    assert q.interrupted(first, "Second sentence. Third.", 1, resume=True) is None  # no outcome yet
    urgent, _ = q.next(1)
    assert urgent.text == "urgent!"
    q.spoken(urgent, 2)
    resumed, _ = q.next(2)
    assert (resumed.id, resumed.text, resumed.resumed) == (first.id, "Second sentence. Third.", True)
    assert q.spoken(resumed, 3).text == "First sentence. Second sentence. Third."  # the report names the whole


def test_an_interrupted_one_whose_ttl_passed_expires_instead_of_resuming():
    q = queue()
    q.offer(ask("One. Two.", ttl_s=10), 0)
    item, _ = q.next(0)
    q.interrupted(item, "Two.", 1, resume=True)
    _, expired = q.next(11)
    assert [(r.id, r.outcome) for r in expired] == [(item.id, Outcome.EXPIRED)]
    assert len(q) == 0


def test_stopped_or_cut_in_the_last_sentence_ends_as_interrupted():
    q = queue()
    q.offer(ask("Just one sentence."), 0)
    item, _ = q.next(0)
    assert q.interrupted(item, "", 1, resume=True).outcome is Outcome.INTERRUPTED
    q.offer(ask("Another. Two."), 2)
    item, _ = q.next(2)
    report = q.interrupted(item, "Two.", 3, resume=False)
    assert (report.outcome, report.reason) == (Outcome.INTERRUPTED, "stopped")
    assert q.next(4) == (None, [])


def test_low_waits_and_expires_after_its_ttl_while_something_else_plays():
    q = queue(ttl_s={URGENT: 300, NORMAL: 900, LOW: 60})
    q.offer(ask("a long normal one"), 0)
    q.offer(ask("low", LOW), 0)
    q.next(0)
    assert q.next(30) == (None, [])  # still playing: nothing else starts
    _, expired = q.next(61)
    assert [r.outcome for r in expired] == [Outcome.EXPIRED] and expired[0].priority is LOW
    assert q.next_deadline(61) is None


def test_a_ttl_in_the_request_overrides_the_priority_default():
    q = queue()
    q.offer(ask("short-lived", ttl_s=5), 0)
    q.offer(ask("playing"), 0)
    assert q.next_deadline(0) == 5
    assert [r.text for r in q.expire(5)] == ["short-lived"]


def test_identical_announcements_within_the_window_are_merged_into_the_first():
    q = queue(merge_window_s=30)
    first = q.offer(ask("The washer is done.", LOW, id="w1"), 0).item
    merged = q.offer(ask("the  washer is done.", NORMAL, id="w2"), 5)  # same words, spacing and case aside
    assert merged.item is None
    assert (merged.report.outcome, merged.report.id, merged.report.into) == (Outcome.MERGED, "w2", "w1")
    assert first.priority is NORMAL and first.merged == ["w2"]  # raised to the higher one
    assert len(q) == 1
    item, _ = q.next(6)
    q.spoken(item, 7)
    assert q.offer(ask("The washer is done."), 20).report.into == "w1"  # just said: still merged
    assert q.offer(ask("The washer is done."), 40).item is not None  # outside the window: said again
    assert q.offer(ask("The washer is done.", voice="am_adam"), 41).item is not None  # another voice: not identical


def test_quiet_hours_hold_back_everything_below_urgent_and_lower_the_volume():
    q = queue(quiet_hours=QuietHours.parse("22:00-07:00", volume=0.5))
    night, morning = 23 * 3600, 7 * 3600 + 60 + 24 * 3600
    q.offer(ask("normal at night", ttl_s=10 * 3600), night)
    q.offer(ask("low at night", LOW, ttl_s=10 * 3600), night)
    assert q.next(night) == (None, [])
    assert q.volume(URGENT, night) == pytest.approx(0.5)
    q.offer(ask("smoke alarm", URGENT), night)
    urgent, _ = q.next(night)
    assert urgent.text == "smoke alarm"
    q.spoken(urgent, night + 1)
    assert q.next(night + 2)[0] is None
    assert q.next_deadline(night + 2) == night + 62  # rechecked within a minute
    assert q.next(morning)[0].text == "normal at night"
    assert q.volume(NORMAL, morning) == pytest.approx(0.8)


def test_quiet_hours_parse_and_span_midnight():
    hours = QuietHours.parse("22:30-06:15")
    assert hours.contains(dtime(23, 0)) and hours.contains(dtime(6, 0)) and not hours.contains(dtime(12, 0))
    day = QuietHours.parse("13:00-14:00")
    assert day.contains(dtime(13, 30)) and not day.contains(dtime(14, 0))
    for bad in ("22-7", "22:00", "07:00-07:00"):
        with pytest.raises(ValueError, match="quiet hours"):
            QuietHours.parse(bad)


def test_a_full_queue_refuses_without_disturbing_what_waits():
    q = queue(limit=2)
    q.offer(ask("one"), 0)
    q.offer(ask("two"), 0)
    with pytest.raises(QueueFull, match="holds 2"):
        q.offer(ask("three"), 0)
    assert [i.text for i in q.waiting] == ["one", "two"]


def test_every_announcement_has_exactly_one_outcome_over_a_long_mixed_run():
    """An hour of one announcement every 10 s at mixed priorities, said in 4 s each: each id ends once."""
    q = queue(ttl_s={URGENT: 300, NORMAL: 120, LOW: 30}, merge_window_s=5)
    outcomes: dict[str, list[Outcome]] = {}
    current, ends_at, cut_at = None, 0.0, None
    for second in range(3600):
        now = float(second)
        if second % 10 == 0:
            priority = (URGENT, NORMAL, NORMAL, LOW, LOW)[second // 10 % 5]
            offered = q.offer(ask(f"message {second // 10 % 7}", priority, source=Source.MQTT), now)
            if offered.report is not None:
                outcomes.setdefault(offered.report.id, []).append(offered.report.outcome)
            if offered.interrupt:
                cut_at = now
        if current is not None and cut_at is not None:
            report = q.interrupted(current, "the rest.", now, resume=True)
            if report is not None:
                outcomes.setdefault(report.id, []).append(report.outcome)
            current, cut_at = None, None
        if current is not None and now >= ends_at:
            report = q.spoken(current, now)
            outcomes.setdefault(report.id, []).append(report.outcome)
            current = None
        if current is None:
            current, expired = q.next(now)
            cut_at = None
            for report in expired:
                outcomes.setdefault(report.id, []).append(report.outcome)
            ends_at = now + 4
    if current is not None:
        outcomes.setdefault(current.id, []).append(q.spoken(current, 3600).outcome)
    for item in q.waiting:
        outcomes.setdefault(item.id, []).append(Outcome.EXPIRED)
    assert len(outcomes) == 360
    assert all(len(ended) == 1 for ended in outcomes.values())
    assert {ended[0] for ended in outcomes.values()} <= {Outcome.SPOKEN, Outcome.MERGED, Outcome.EXPIRED}
    assert len(q._recent) <= 7  # memory stays flat
