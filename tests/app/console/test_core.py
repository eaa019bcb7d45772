"""The console core with a fake clock (no Qt, no I/O): priorities, TTL, merging, quiet hours, every kind of stop,
resumption, the person's own announcements, the voice input's entry points, and one outcome per announcement."""

from __future__ import annotations

from datetime import time as dtime

import pytest

from voicedesk.app.console.announcement import Outcome, Priority, Request, Source
from voicedesk.app.console.core import ConsoleCore, Policy, QueueFull, QuietHours
from voicedesk.app.conversation import TurnKind

URGENT, NORMAL, LOW = Priority.URGENT, Priority.NORMAL, Priority.LOW


def core(**policy) -> ConsoleCore:
    return ConsoleCore(Policy(**policy), local_time=lambda now: dtime(int(now // 3600) % 24, int(now % 3600 // 60)))


def ask(text: str, priority: Priority = NORMAL, **kw) -> Request:
    return Request(text, priority, **kw)


def typed(text: str, **kw) -> Request:
    return Request(text, source=Source.WINDOW, origin="Typed", **kw)


def test_higher_priority_first_and_arrival_order_within_one():
    q = core()
    for text, priority in [("low one", LOW), ("normal one", NORMAL), ("urgent one", URGENT), ("normal two", NORMAL)]:
        q.offer(ask(text, priority), now=0)
    said = []
    while (item := q.next(1)[0]) is not None:
        said.append(item.text)
        assert q.spoken(item, 2).outcome is Outcome.SPOKEN
    assert said == ["urgent one", "normal one", "normal two", "low one"]


def test_only_an_urgent_one_interrupts_and_only_a_less_urgent_one():
    q = core()
    q.offer(ask("normal"), 0)
    current, _ = q.next(0)
    assert not q.offer(ask("another normal"), 1).interrupt
    assert not q.offer(ask("low", LOW), 1).interrupt
    assert q.offer(ask("leak in the basement", URGENT), 1).interrupt
    q.cut(current, "", 2)
    q.next(2)
    assert not q.offer(ask("second urgent", URGENT), 3).interrupt  # urgent does not cut urgent


def test_a_cut_one_resumes_from_what_remains_before_the_others_of_its_priority():
    q = core()
    q.offer(ask("First sentence. Second sentence. Third."), 0)
    q.offer(ask("waiting normal"), 0)
    first, _ = q.next(0)
    assert q.offer(ask("urgent!", URGENT), 1).interrupt
    assert q.cut(first, "Second sentence. Third.", 1) is None  # no outcome yet
    urgent, _ = q.next(1)
    assert urgent.text == "urgent!"
    q.spoken(urgent, 2)
    resumed, _ = q.next(2)
    assert (resumed.id, resumed.text, resumed.resumed) == (first.id, "Second sentence. Third.", True)
    assert resumed.origin == "MQTT · normal · resumed"
    assert q.spoken(resumed, 3).text == "First sentence. Second sentence. Third."  # the report names the whole


def test_one_cut_before_any_of_it_was_heard_resumes_whole_never_interrupted():
    """The runner gives all of the text as what remains when nothing was heard (a cut while it was starting)."""
    q = core()
    q.offer(ask("One sentence only."), 0)
    item, _ = q.next(0)
    q.offer(ask("urgent!", URGENT), 1)
    assert q.cut(item, "One sentence only.", 1) is None
    q.spoken(q.next(1)[0], 2)
    again, _ = q.next(2)
    assert again is item and again.text == "One sentence only."
    assert q.spoken(again, 3).outcome is Outcome.SPOKEN


def test_cut_in_its_last_sentence_or_not_resumable_ends_interrupted():
    q = core()
    q.offer(ask("Just one sentence."), 0)
    item, _ = q.next(0)
    q.offer(ask("urgent!", URGENT), 1)
    report = q.cut(item, "", 1)
    assert (report.outcome, report.reason) == (Outcome.INTERRUPTED, "cut in its last sentence")
    q.spoken(q.next(1)[0], 2)
    q.offer(Request("A question?", kind=TurnKind.AGENT, source=Source.WINDOW, fragments=lambda: None), 3)
    question, _ = q.next(3)
    q.offer(ask("urgent again", URGENT), 4)
    report = q.cut(question, "the rest of the reply", 4)  # an agent's reply: what it would say next is not known
    assert (report.outcome, report.reason) == (Outcome.INTERRUPTED, "cut by an urgent announcement")


def test_every_stop_in_one_place_the_house_carries_on_the_person_holds():
    q = core()
    for text in ("one", "two", "three"):
        q.offer(ask(text), 0)
    one, _ = q.next(0)
    assert q.stop()  # the house's stop (MQTT, HTTP, Home Assistant's button)
    report = q.cut(one, "", 1)
    assert (report.outcome, report.reason) == (Outcome.INTERRUPTED, "stopped")
    two, _ = q.next(1)
    assert two.text == "two" and not q.paused  # the queue carries on
    assert q.stop(hold=True)  # the person's Stop
    q.cut(two, "the rest", 2)
    assert q.paused and q.next(2) == (None, [])
    q.offer(typed("asked for something new"), 3)  # carries on
    assert not q.paused and q.next(3)[0].text == "three"


def test_a_stop_with_nothing_playing_cuts_nothing_and_the_person_s_still_holds_what_waits():
    q = core(quiet_hours=QuietHours.parse("00:00-23:59"))
    assert not q.stop()
    q.offer(ask("held by quiet hours"), 0)
    assert not q.stop(hold=True) and q.paused
    q.resume()
    assert not q.paused


def test_the_person_s_choices_cut_without_resuming():
    q = core()
    q.offer(ask("First. Second."), 0)
    q.offer(ask("later", LOW), 0)
    first, _ = q.next(0)
    now = q.offer(typed("Right now."), 1, first=True)
    assert now.interrupt and q.waiting[0] is now.item
    report = q.cut(first, "Second.", 1)
    assert (report.outcome, report.reason) == (Outcome.INTERRUPTED, "the person chose another announcement")
    typed_now, _ = q.next(1)
    assert typed_now.text == "Right now." and typed_now.origin == "Typed"
    assert q.speak_now(q.waiting[0].id)
    assert q.cut(typed_now, "", 2).outcome is Outcome.INTERRUPTED
    assert q.next(2)[0].text == "later"


def test_the_person_s_own_never_expire_merge_or_wait_for_quiet_hours():
    q = core(quiet_hours=QuietHours.parse("22:00-07:00"), ttl_s={URGENT: 10, NORMAL: 10, LOW: 10})
    night = 23 * 3600
    q.offer(ask("house at night"), night)
    q.offer(typed("Typed at night."), night)
    q.offer(typed("typed at night."), night)  # said twice if asked twice
    assert len(q) == 3 and q.next_deadline(night) is not None
    item, expired = q.next(night + 3600)
    assert [r.text for r in expired] == ["house at night"] and item.text == "Typed at night."


def test_speak_now_lets_a_held_one_through_quiet_hours():
    q = core(quiet_hours=QuietHours.parse("22:00-07:00"))
    night = 23 * 3600
    q.offer(ask("held"), night)
    assert q.next(night) == (None, [])
    assert q.speak_now(q.waiting[0].id) and q.next(night)[0].text == "held"


def test_removed_and_cleared_ones_end_interrupted():
    q = core()
    a, b, c = (q.offer(ask(t), 0).item for t in ("a", "b", "c"))
    assert q.remove(b.id, 1).reason == "removed from the queue" and q.remove(b.id, 1) is None
    assert [r.id for r in q.clear(2)] == [a.id, c.id] and len(q) == 0


def test_a_ttl_in_the_request_overrides_the_priority_default():
    q = core()
    q.offer(ask("short-lived", ttl_s=5), 0)
    q.offer(ask("playing"), 0)
    assert q.next_deadline(0) == 5
    assert [r.text for r in q.expire(5)] == ["short-lived"]


def test_a_cut_one_whose_ttl_passed_expires_instead_of_resuming():
    q = core()
    q.offer(ask("One. Two.", ttl_s=10), 0)
    item, _ = q.next(0)
    q.offer(ask("urgent", URGENT), 1)
    q.cut(item, "Two.", 1)
    _, expired = q.next(11)
    assert [(r.id, r.outcome) for r in expired] == [(item.id, Outcome.EXPIRED)]


def test_identical_ones_merge_into_the_waiting_or_playing_one_and_after_it_ended():
    q = core(merge_window_s=30)
    first = q.offer(ask("The washer is done.", LOW, id="w1"), 0).item
    merged = q.offer(ask("the  washer is done.", NORMAL, id="w2"), 5)  # same words, spacing and case aside
    assert merged.item is None
    assert (merged.report.outcome, merged.report.id, merged.report.into) == (Outcome.MERGED, "w2", "w1")
    assert first.priority is NORMAL and first.merged == ["w2"]  # raised to the higher one
    item, _ = q.next(100)  # it waited 100 s: still the one playing
    assert q.offer(ask("The washer is done.", id="w3"), 101).report.into == "w1"  # the one playing absorbs it
    q.spoken(item, 110)
    assert q.offer(ask("The washer is done."), 135).report.into == "w1"  # within 30 s of when it was said
    assert q.offer(ask("The washer is done."), 141).item is not None  # past the window: said again
    assert q.offer(ask("The washer is done.", voice="am_adam"), 142).item is not None  # another voice


def test_quiet_hours_hold_back_everything_below_urgent_and_lower_the_volume():
    q = core(quiet_hours=QuietHours.parse("22:00-07:00", volume=0.5))
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
    q = core(limit=2)
    q.offer(ask("one"), 0)
    q.offer(ask("two"), 0)
    with pytest.raises(QueueFull, match="holds 2"):
        q.offer(ask("three"), 0)
    assert [i.text for i in q.waiting] == ["one", "two"]


def test_the_voice_input_cuts_holds_and_is_answered_first():
    q = core()
    q.offer(ask("The doorbell rang. Someone is at the door."), 0)
    q.offer(ask("waiting"), 0)
    playing, _ = q.next(0)
    assert q.listen()  # barge-in (or push-to-talk): cut what plays
    report = q.cut(playing, "Someone is at the door.", 1)
    assert (report.outcome, report.reason) == (Outcome.INTERRUPTED, "the person spoke")  # not resumed
    assert q.next(1) == (None, []) and q.listening  # nothing starts over the person
    question = Request("Who is it?", URGENT, source=Source.VOICE, kind=TurnKind.AGENT, origin="Spoken")
    assert q.heard(question, 2).item is q.next(2)[0] and not q.listening
    assert q.listen() and q.cutting.value == "the person spoke"  # barging in on the answer cuts it too
    q.not_heard()
    assert not q.listening


def test_every_announcement_has_exactly_one_outcome_over_a_long_mixed_run():
    """An hour of one announcement every 10 s at mixed priorities, said in 4 s each: each id ends once."""
    q = core(ttl_s={URGENT: 300, NORMAL: 120, LOW: 30}, merge_window_s=5)
    outcomes: dict[str, list[Outcome]] = {}
    current, ends_at, cut = None, 0.0, False
    for second in range(3600):
        now = float(second)
        if second % 10 == 0:
            priority = (URGENT, NORMAL, NORMAL, LOW, LOW)[second // 10 % 5]
            offered = q.offer(ask(f"message {second // 10 % 7}", priority), now)
            if offered.report is not None:
                outcomes.setdefault(offered.report.id, []).append(offered.report.outcome)
            cut = cut or offered.interrupt
        if current is not None and cut:
            report = q.cut(current, "the rest.", now)
            if report is not None:
                outcomes.setdefault(report.id, []).append(report.outcome)
            current, cut = None, False
        if current is not None and now >= ends_at:
            report = q.spoken(current, now)
            outcomes.setdefault(report.id, []).append(report.outcome)
            current = None
        if current is None:
            current, expired = q.next(now)
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
    assert len(q._said) <= 7  # memory stays flat
