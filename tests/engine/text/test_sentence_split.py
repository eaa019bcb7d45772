"""Splitting a long sentence while others wait: clause boundaries first, then phrase boundaries, never mid-phrase."""

from __future__ import annotations

import pytest

from voicedesk.engine.session_driver import (
    FIRST_FRAGMENT_PHONEMES,
    MIN_SPLIT_PHONEMES,
    SPLIT_ABOVE_PHONEMES,
    split_threshold,
)
from voicedesk.engine.text.chunking.phoneme_estimate import estimate_phonemes
from voicedesk.engine.text.sentence_split import split_at_clause

LONG = (
    "When the storm finally passed over the valley late in the evening, the farmers walked out to their "
    "fields, counted the broken fences, and started to plan the long repairs of the coming week."
)


def test_a_clause_boundary_that_fits_comes_first():
    head, tail = split_at_clause(LONG, 100)
    assert head.endswith("evening,") and estimate_phonemes(head) <= 100
    assert f"{head} {tail}" == LONG


def test_without_a_fitting_clause_a_phrase_boundary_before_a_preposition_or_conjunction_is_used():
    head, tail = split_at_clause(LONG, 45)
    assert estimate_phonemes(head) <= 45
    assert tail.split()[0] in {"over", "late", "in"}  # a phrase opens there
    assert not head.endswith(("the", "over", "in"))  # never inside a phrase
    assert f"{head} {tail}" == LONG


@pytest.mark.parametrize("text", ["Short and sweet.", "One two three four five six seven eight nine ten"])
def test_nothing_to_cut_gives_none(text):
    assert split_at_clause(text, 10) is None


def test_the_threshold_follows_the_smallest_first_sentence_waiting():
    assert split_threshold(False, 40) is None  # nobody waits: no seam
    assert split_threshold(True, None) == FIRST_FRAGMENT_PHONEMES  # others busy: a newcomer may come any moment
    assert split_threshold(True, 55) == 55
    assert split_threshold(True, 5) == MIN_SPLIT_PHONEMES
    assert split_threshold(True, 500) == SPLIT_ABOVE_PHONEMES
    # A model fast enough that a long call takes under QUICK_CALL_S (a GPU): never a seam.
    assert split_threshold(True, 40, lambda phonemes: phonemes * 0.0005) is None
    assert split_threshold(True, 40, lambda phonemes: phonemes * 0.01) == 40
