"""The conversation's pure core: word alignment, highlighting by playback position, cut marks, display runs."""

from __future__ import annotations

import pytest

from voicedesk.app.conversation import RunStyle, Turn, TurnKind, TurnState, WordRef, align_words
from voicedesk.engine.events import WordTiming as W


def two_sentence_turn() -> Turn:
    turn = Turn(1, TurnKind.SPEAK, "Hello there, friend. Don't worry now.", "local")
    first = turn.add_sentence("Hello there, friend.")
    turn.add_audio(first.index, 1.0)
    turn.finish_sentence(
        first.index, [W("Hello", 0.05, 0.3), W("there", 0.3, 0.6), W(",", 0.6, 0.6), W("friend", 0.6, 0.9)]
    )
    second = turn.add_sentence("Don't worry now.")
    turn.add_audio(second.index, 0.8)
    turn.finish_sentence(
        second.index, [W("Do", 0.0, 0.1), W("n't", 0.1, 0.2), W("worry", 0.2, 0.5), W("now", 0.5, 0.7)]
    )
    return turn


def test_align_words_maps_tokens_to_whole_words():
    spans = align_words(
        "Don't worry, “friend”.", [W("Do", 0, 0.1), W("n't", 0.1, 0.2), W("worry", 0.2, 0.4), W("friend", 0.4, 0.6)]
    )
    text = "Don't worry, “friend”."
    assert [text[s.start : s.end] for s in spans] == ["Don't", "worry", "friend"]
    assert (spans[0].start_s, spans[0].end_s) == (0, 0.2)  # both tokens of "Don't" make one word


def test_align_words_skips_tokens_it_cannot_find_rather_than_guess():
    text = "It costs $29 today."
    spans = align_words(
        text, [W("It", 0, 0.1), W("twenty-nine", 0.1, 0.5), W("dollars", 0.5, 0.7), W("today", 0.7, 0.9)]
    )
    assert [text[s.start : s.end] for s in spans] == ["It", "today"]


def test_align_words_lights_the_written_text_each_spoken_word_comes_from():
    text = "Outside it is -5°C tonight."
    said = ["Outside", "it", "is", "minus", "five", "degrees", "Celsius", "tonight"]
    source = [(0, 7), (8, 10), (11, 13), (14, 18), (14, 18), (14, 18), (14, 18), (19, 26)]
    timings = [W(w, i * 0.2, i * 0.2 + 0.2, *span) for i, (w, span) in enumerate(zip(said, source, strict=True))]
    spans = align_words(text, timings)
    assert [text[s.start : s.end] for s in spans] == ["Outside", "it", "is", "-5°C", "tonight"]
    assert (spans[3].start_s, spans[3].end_s) == pytest.approx((0.6, 1.4))  # lit from "minus" through "Celsius"


def test_sentences_sit_end_to_end_on_the_turn_timeline():
    turn = two_sentence_turn()
    assert [s.audio_start_s for s in turn.sentences] == [0.0, 1.0]
    assert turn.audio_s == 1.8
    assert turn.state is TurnState.SPEAKING


def test_word_at_follows_the_playback_position():
    turn = two_sentence_turn()
    assert turn.word_at(0.0) is None  # leading silence before "Hello"
    assert turn.word_at(0.1) == WordRef(0, 0)
    assert turn.word_at(0.65) == WordRef(0, 2)  # "friend" (the comma token has no word of its own)
    assert turn.word_at(0.95) == WordRef(0, 2)  # trailing pause: still the last word
    assert turn.word_at(1.15) == WordRef(1, 0)  # "Don't"
    assert turn.word_at(1.6) == WordRef(1, 2)
    assert turn.word_at(5.0) is None


def test_runs_highlight_the_current_word():
    turn = two_sentence_turn()
    runs = turn.runs(1.3)
    assert [(r.text, r.style) for r in runs] == [
        ("Hello there, friend. Don't ", RunStyle.SPOKEN),
        ("worry", RunStyle.CURRENT),
        (" now.", RunStyle.UPCOMING),
    ]


def test_runs_show_text_not_yet_claimed_by_a_sentence():
    turn = two_sentence_turn()
    turn.pending = " And one more"
    runs = turn.runs(0.1)
    assert runs[0] == runs[0].__class__("Hello", RunStyle.CURRENT, 0)
    assert runs[-1].text == "And one more" and runs[-1].style is RunStyle.PENDING


def test_cut_inside_a_sentence_keeps_the_heard_words():
    turn = two_sentence_turn()
    cut = turn.mark_cut(1.35)  # inside "worry"
    assert turn.state is TurnState.CUT
    assert cut.sentence == 1
    assert cut.heard_text == "Hello there, friend. Don't worry"
    assert cut.quote == "…there, friend. Don't worry"
    styles = [(r.text, r.style) for r in turn.runs(None)]
    assert styles == [("Hello there, friend. Don't worry", RunStyle.SPOKEN), (" now.", RunStyle.UNHEARD)]


def test_cut_between_sentences_marks_the_next_one_unheard():
    turn = two_sentence_turn()
    turn.add_sentence("Never synthesized.")
    turn.pending = "still in the chunker"
    cut = turn.mark_cut(1.8)
    assert cut.sentence == 2 and cut.char == 0
    assert cut.heard_text == "Hello there, friend. Don't worry now."
    runs = turn.runs(None)
    assert [r.style for r in runs] == [RunStyle.SPOKEN, RunStyle.UNHEARD]
    assert runs[1].text == "Never synthesized. still in the chunker"


def test_cut_before_any_audio_hears_nothing():
    turn = Turn(2, TurnKind.AGENT, "question", "websocket")
    turn.add_sentence("First sentence.")
    cut = turn.mark_cut(0.0)
    assert cut.heard_text == "" and cut.quote == "" and cut.sentence == 0


def test_a_finished_turn_is_all_spoken():
    turn = two_sentence_turn()
    turn.state = TurnState.DONE
    assert [(r.style) for r in turn.runs(None)] == [RunStyle.SPOKEN]
    assert turn.text == "Hello there, friend. Don't worry now."
