"""The reply ledger: what was sent, what was spoken, and what a replacement engine must still say."""

from __future__ import annotations

from voicedesk.app.failover import ReplyLedger, engine_failure, match_ignoring_space, plan_failover
from voicedesk.engine.events import Closed, Error


def test_match_ignores_whitespace_and_case_only():
    text = "Hi there.  How   are\nyou? Fine."
    assert match_ignoring_space(text, 0, "Hi there.") == (0, 9)
    assert match_ignoring_space(text, 9, "how are you?") == (11, 25)
    assert match_ignoring_space(text, 9, "How are we?") is None
    assert match_ignoring_space(text, 0, "   ") is None


def test_ledger_resumes_after_the_last_delivered_sentence():
    ledger = ReplyLedger()
    for t, fragment in enumerate(["One. Two", " words. Three is", " long. Four", " is not yet"]):
        ledger.add(fragment, float(t))
    assert ledger.sentence_started(0, "One.") == (0, 4)
    assert ledger.sentence_started(1, "Two words.") == (5, 15)
    assert ledger.sentence_started(2, "Three is long.") is not None
    ledger.sentence_delivered(0)
    ledger.sentence_delivered(1)
    # Sentence 2 was started (being synthesized remotely) but its audio never came: it must be said again,
    # and so must the text the remote chunker still held.
    plan = plan_failover(ledger, "gone")
    assert plan.resume_text == " Three is long. Four is not yet"
    assert ledger.unclaimed == " Four is not yet"


def test_ledger_never_drops_text_when_a_sentence_does_not_match():
    ledger = ReplyLedger()
    ledger.add("It costs $29. Next.", 0.0)
    assert ledger.sentence_started(0, "It costs twenty-nine dollars.") is None
    ledger.sentence_delivered(0)
    assert ledger.undelivered == "It costs $29. Next."  # repeats rather than loses


def test_ledger_knows_when_each_character_was_sent():
    ledger = ReplyLedger()
    ledger.add("Hello ", 1.0)
    ledger.add("world.", 2.5)
    assert ledger.time_of_char(0) == 1.0
    assert ledger.time_of_char(5) == 1.0
    assert ledger.time_of_char(6) == 2.5
    assert ledger.time_of_char(12) is None


def test_which_events_mean_the_engine_is_gone():
    assert engine_failure(Error("internal", "boom", fatal=True), closing=False) == "boom"
    assert engine_failure(Error("unknown_voice", "no such voice"), closing=False) is None
    assert engine_failure(Closed("connection lost"), closing=False) == "the connection closed: connection lost"
    assert engine_failure(Closed("closed"), closing=True) is None
