"""The incremental sentence chunker: exact chunks for tricky texts, the rules, flush/reset and the API.

Fragmentation invariance and linear work: ``test_chunker_properties.py``; the phoneme ceiling and the estimate
against real G2P: ``test_chunker_ceiling.py``; the texts: ``chunker_corpus.py``.
"""

from __future__ import annotations

import pytest

from tests.engine.text.chunker_corpus import CASES, LONG_SENTENCE, chunk_all
from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker, estimate_phonemes
from voicedesk.engine.text.chunking.sentence_ends import period_ends_sentence, run_ends_sentence


@pytest.mark.parametrize(("text", "options", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_tricky_texts_give_exactly_these_chunks(text: str, options: dict, expected: list[str]) -> None:
    assert chunk_all(text, **options) == expected
    # The same text one character at a time gives the same chunks.
    assert chunk_all(text, list(text), **options) == expected


# ---- flush, reset, buffered_chars, the API --------------------------------------------------------------


def test_a_period_waits_for_the_next_non_space_character() -> None:
    chunker = IncrementalSentenceChunker()
    assert chunker.feed("The year was 1999.") == []
    assert chunker.feed("  ") == []
    assert chunker.feed("T") == ["The year was 1999."]
    assert chunker.buffered_chars == 1  # the "T"
    assert chunker.feed("hen Dr.") == []
    assert chunker.feed(" S") == []  # "Dr. S" is a name, not a sentence end
    assert chunker.flush() == "Then Dr. S"


def test_a_newline_or_cjk_terminal_decides_at_once() -> None:
    chunker = IncrementalSentenceChunker()
    assert chunker.feed("This is a full line") == []
    assert chunker.feed("\n") == ["This is a full line"]
    chunker = IncrementalSentenceChunker()
    assert chunker.feed("我是一个机器人。") == []  # a closing 」 could still follow
    assert chunker.feed("今") == ["我是一个机器人。"]


def test_flush_returns_the_rest_and_starts_a_new_utterance() -> None:
    chunker = IncrementalSentenceChunker()
    text = "Well, I think that we can, maybe, try again"
    assert chunker.feed(text) == ["Well, I think that we can,"]
    assert chunker.flush() == "maybe, try again"
    assert chunker.buffered_chars == 0
    assert chunker.flush() is None
    # The next utterance gets an early first fragment again.
    assert chunker.feed(text) == ["Well, I think that we can,"]


def test_flush_of_whitespace_is_none() -> None:
    chunker = IncrementalSentenceChunker()
    assert chunker.feed("   \n\t  ") == []
    assert chunker.buffered_chars == 0
    assert chunker.flush() is None


def test_reset_drops_held_text_and_pending_decisions() -> None:
    chunker = IncrementalSentenceChunker()
    chunker.feed("He said hello to Dr.")
    assert chunker.buffered_chars == len("He said hello to Dr.")
    chunker.reset()
    assert chunker.buffered_chars == 0
    assert chunker.feed(" Smith arrived today, then left again.") == ["Smith arrived today,"]
    assert chunker.flush() == "then left again."


def test_buffered_chars_counts_held_text_only() -> None:
    chunker = IncrementalSentenceChunker(early_first_fragment=False)
    assert chunker.feed("   ") == []
    assert chunker.buffered_chars == 0  # leading whitespace is not held
    chunker.feed("Hello there")
    assert chunker.buffered_chars == len("Hello there")
    chunker.feed(", my friend.  ")
    assert chunker.buffered_chars == len("Hello there, my friend.  ")
    assert chunker.feed("How") == ["Hello there, my friend."]
    assert chunker.buffered_chars == len("How")


def test_empty_fragments_are_fine_and_non_text_is_refused() -> None:
    chunker = IncrementalSentenceChunker()
    assert chunker.feed("") == []
    with pytest.raises(TypeError, match="str"):
        chunker.feed(b"bytes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "options",
    [
        {"min_first_words": 0},
        {"first_fragment_max_words": 2, "min_first_words": 3},
        {"max_chunk_phonemes": 10},
        {"min_sentence_chars": -1},
        {"max_chunk_phonemes": 510.0},
        {"min_first_words": True},
    ],
)
def test_bad_options_are_refused_with_a_clear_message(options: dict) -> None:
    name = next(iter(options))
    with pytest.raises(ValueError, match=name):
        IncrementalSentenceChunker(**options)


def test_the_session_state_machine_can_drive_it() -> None:
    from voicedesk.engine.session import SessionCore

    core = SessionCore(chunker=IncrementalSentenceChunker())
    assert core.send_text("Hello there, my good friend. How are", 0.0) == []
    job, _events = core.next_job(0.0)
    assert job.text == "Hello there, my good friend."
    assert job.first_of_utterance
    assert core.buffered_chars == len("How are")


# ---- the rules, one decision at a time ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "next_char", "at_line_start", "ends"),
    [
        ("world", "T", False, True),
        ("Dr", "S", False, False),
        ("Mrs", "J", False, False),
        ("e.g", "P", False, False),
        ("U.S", "A", False, False),
        ("etc", "T", False, True),
        ("a.m", "P", False, True),
        ("No", "5", False, False),
        ("No", "T", False, True),
        ("Jan", "1", False, False),
        ("J", "R", False, False),
        ("I", "T", False, True),
        ("1", "F", True, False),
        ("1", "F", False, True),
        ("iv", "R", True, False),
        ("Mix", "T", True, True),
        ("", "T", False, True),
    ],
)
def test_period_rules(word: str, next_char: str, at_line_start: bool, ends: bool) -> None:
    assert period_ends_sentence(word, next_char, at_line_start=at_line_start) is ends


@pytest.mark.parametrize(
    ("single_period", "word", "next_char", "ends"),
    [
        (False, "", "w", False),  # "wait... what"
        (False, "", "W", True),  # "wait... What"
        (False, "", "5", True),
        (True, "it", ",", False),
        (True, "it", "(", True),
        (True, "it", "“", True),
        (False, "Stop", "s", False),  # '"Stop!" she said'
    ],
)
def test_terminal_run_rules(single_period: bool, word: str, next_char: str, ends: bool) -> None:
    assert run_ends_sentence(single_period, word, next_char, at_line_start=False) is ends


def test_estimate_is_zero_for_nothing_and_grows_with_text() -> None:
    assert estimate_phonemes("") == 0
    assert estimate_phonemes("   ") == 3
    short, longer = "The cat sat.", "The cat sat on the mat."
    assert 0 < estimate_phonemes(short) < estimate_phonemes(longer)
    # Conservative, yet not absurd on plain prose: between 1x and 1.6x the characters.
    prose = LONG_SENTENCE
    assert len(prose) <= estimate_phonemes(prose) <= 1.6 * len(prose)
    # Things the G2P expands cost far more than their characters.
    assert estimate_phonemes("1234567") >= 74  # "one million two hundred thirty four thousand ..."
    assert estimate_phonemes("W") >= 8  # "dˈʌbᵊlju"
    assert estimate_phonemes("🎉") >= 10  # "party popper"
