"""Without NeMo's grammars (a fresh install before ``voicedesk models fetch``) numbers are still read out, by the
basic reader, and the listener is told that the full normalizer is missing; misaki alone lost ``-5°C``'s number."""

from __future__ import annotations

import re

import pytest

from voicedesk.engine.text.frontend import load_front_end
from voicedesk.engine.text.frontend.english import basic_normalize
from voicedesk.engine.text.frontend.settings import TextSettings


@pytest.fixture(scope="module")
def front_end_without_grammars(tmp_path_factory):
    return load_front_end(tmp_path_factory.mktemp("no-grammars"))


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("It is -5°C outside.", "It is minus five degrees Celsius outside."),
        ("Dinner at 7:05 PM.", "Dinner at seven oh five PM."),
        ("The alarm is set for 6:00.", "The alarm is set for six o'clock."),
        ("Humidity 75% and 21.5° inside.", "Humidity seventy five percent and twenty one point five degrees inside."),
        ("It costs $12.50 today.", "It costs twelve dollars and fifty cents today."),
        ("About 1,250 steps on the 2nd day of 2024.", None),
    ],
)
def test_numbers_are_read_out_without_the_grammars(front_end_without_grammars, written, spoken):
    said = front_end_without_grammars.to_spoken(written, "a", TextSettings())
    assert not re.search(r"\d", said.plain), said.plain
    if spoken is not None:
        assert said.plain == spoken
    else:
        assert "one thousand two hundred and fifty" in said.plain
        assert "second" in said.plain and "twenty twenty four" in said.plain


def test_the_listener_is_told_the_full_normalizer_is_missing(front_end_without_grammars):
    said = front_end_without_grammars.to_spoken("At 3:07.", "a", TextSettings())
    assert any("not built" in note and "voicedesk models fetch" in note for note in said.notes)
    assert [change.rule for change in said.changes] == ["basic reader"]  # --explain does not say NeMo did it


def test_spoken_words_still_point_at_the_written_number(front_end_without_grammars):
    text = "Outside it is -5°C tonight."
    said = front_end_without_grammars.to_spoken(text, "a", TextSettings())
    sources = {text[u.start : u.end] for u in said.units if u.text in ("minus", "five", "degrees", "Celsius")}
    assert sources == {"-5°C"}


def test_a_clock_reading_that_is_no_time_is_not_read_as_one_and_words_with_digits_are_left_alone():
    assert "o'clock" not in basic_normalize("a score of 25:00") and "oh" not in basic_normalize("ratio 30:05")
    assert basic_normalize("Room B7 and v2") == "Room B7 and v2"
