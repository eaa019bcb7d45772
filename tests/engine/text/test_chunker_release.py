"""What the chunker holds and why (``held``), and the release inputs a session uses after a quiet spell.

Random interleavings of feed and release calls: ``test_chunker_properties.py``.
"""

from __future__ import annotations

import pytest

from tests.engine.text.chunker_corpus import LATER
from voicedesk.engine.text.chunking.chunker import HeldEnd, HeldText, IncrementalSentenceChunker
from voicedesk.engine.text.chunking.first_cut import FirstCutPlanner, opening_tier, phrase_word
from voicedesk.engine.text.chunking.sentence_ends import run_ends_unless_lower

# ---- held: the texts, left by an agent that went quiet without flush ------------------------------


@pytest.mark.parametrize(
    ("text", "options", "end", "sentence"),
    [
        # Sentence ends, waiting only for look-ahead, CJK closers or a sentence to merge with.
        ("I will turn off the lights. ", {}, HeldEnd.LOOK_AHEAD, "I will turn off the lights."),
        ("Sure. ", {}, HeldEnd.LOOK_AHEAD, "Sure."),
        ("Okay! ", {}, HeldEnd.LOOK_AHEAD, "Okay!"),
        ('He said "stop." ', {}, HeldEnd.LOOK_AHEAD, 'He said "stop."'),
        ("Wait... ", {}, HeldEnd.LOOK_AHEAD, "Wait..."),
        ("We bought pears etc. ", LATER, HeldEnd.LOOK_AHEAD, "We bought pears etc."),
        ("We waited for the count of 3. ", LATER, HeldEnd.LOOK_AHEAD, "We waited for the count of 3."),
        ("我是一个机器人。", {}, HeldEnd.CLOSERS, "我是一个机器人。"),
        ("「こんにちは。」", {}, HeldEnd.CLOSERS, "「こんにちは。」"),
        ("Fine\n", {}, HeldEnd.MERGING, "Fine"),
        ("Sure.\n", {}, HeldEnd.MERGING, "Sure."),
        ("That is the first long sentence here. Ok.\n", {}, HeldEnd.MERGING, "Ok."),
        # Not ended: the word before the period says it goes on, or the text simply has not ended.
        ("I met Dr. ", {}, HeldEnd.OPEN, ""),
        ("Written by J. ", {}, HeldEnd.OPEN, ""),
        ("See item No. ", {}, HeldEnd.OPEN, ""),
        ("He moved to the U.S. ", {}, HeldEnd.OPEN, ""),
        ("Pick one, e.g. ", LATER, HeldEnd.OPEN, ""),
        ("Steps follow\n1. ", LATER, HeldEnd.OPEN, "Steps follow"),
        ("The lights, ", {}, HeldEnd.OPEN, ""),
        ("Hi. How are", {}, HeldEnd.OPEN, "Hi."),
        ("... ", {}, HeldEnd.OPEN, ""),
        # Terminal punctuation with nothing after it yet: not counted, release_all releases it.
        ("The lights are off.", {}, HeldEnd.UNSPACED, ""),
        ("The value is 3.", {}, HeldEnd.UNSPACED, ""),
        ("Hi. Are you there?", {}, HeldEnd.UNSPACED, "Hi."),
        ("I met Dr.", {}, HeldEnd.OPEN, ""),
    ],
)
def test_held_says_whether_the_held_text_ends_a_sentence(text: str, options: dict, end: HeldEnd, sentence: str) -> None:
    chunker = IncrementalSentenceChunker(**options)
    released = chunker.feed(text)
    held = chunker.held
    assert held is not None
    assert held.chars == chunker.buffered_chars
    assert held.end is end
    held_text = text[len(text) - held.chars :]
    assert held_text[: held.sentence_chars].strip() == sentence
    # What release_sentences gives is exactly that; the rest stays held.
    assert chunker.release_sentences() == ([sentence] if sentence else [])
    rest = held_text[held.sentence_chars :].strip()
    assert chunker.buffered_chars == len(held_text[held.sentence_chars :].lstrip())
    assert chunker.release_all() == ([rest] if rest else [])
    assert chunker.held is None
    assert chunker.buffered_chars == 0
    assert "".join("".join([*released, sentence, rest]).split()) == "".join(text.split())


def test_nothing_held_is_none() -> None:
    chunker = IncrementalSentenceChunker()
    assert chunker.held is None
    assert chunker.feed("  \n ") == []
    assert chunker.held is None  # whitespace is never held
    assert chunker.release_sentences() == []
    assert chunker.release_all() == []


def test_held_is_a_snapshot() -> None:
    chunker = IncrementalSentenceChunker()
    chunker.feed("Sure. ")
    before = chunker.held
    chunker.feed("I will")
    assert before == HeldText(chars=6, sentence_chars=5, end=HeldEnd.LOOK_AHEAD)
    assert chunker.held == HeldText(chars=12, sentence_chars=5, end=HeldEnd.OPEN)
    with pytest.raises(AttributeError):
        before.chars = 3  # type: ignore[misc]


# ---- releasing ---------------------------------------------------------------------------------------------


def test_a_release_sends_the_finished_sentence_and_keeps_the_rest() -> None:
    chunker = IncrementalSentenceChunker()
    assert chunker.feed("Sure. I will") == []
    assert chunker.release_sentences() == ["Sure."]
    assert chunker.buffered_chars == len("I will")
    assert chunker.held == HeldText(chars=6, sentence_chars=0, end=HeldEnd.OPEN)
    assert chunker.release_sentences() == []  # no sentence end left: nothing happens
    assert chunker.buffered_chars == len("I will")
    assert chunker.feed(" turn off the lights. Then") == ["I will turn off the lights."]


def test_a_short_sentence_still_merges_with_the_next_when_it_is_in_hand() -> None:
    chunker = IncrementalSentenceChunker(**LATER)
    assert chunker.feed("That is the first long sentence here. Ok. Let me look at that for you. ") == [
        "That is the first long sentence here."
    ]
    assert chunker.flush() == "Ok. Let me look at that for you."
    chunker = IncrementalSentenceChunker()
    assert chunker.feed("Ok. Let me look into it now.") == []  # (no phrase boundary with five words before it)
    assert chunker.held == HeldText(chars=28, sentence_chars=3, end=HeldEnd.UNSPACED)
    assert chunker.flush() == "Ok. Let me look into it now."
    assert IncrementalSentenceChunker(first_cut="phrase").feed("Ok. Let me look at that for you.") == [
        "Ok. Let me look at that"
    ]


def test_a_held_short_sentence_is_visible_and_released_alone_on_request() -> None:
    chunker = IncrementalSentenceChunker(**LATER)
    assert chunker.feed("That is the first long sentence here. ") == []
    assert chunker.held == HeldText(chars=38, sentence_chars=37, end=HeldEnd.LOOK_AHEAD)
    assert chunker.feed("Ok. ") == ["That is the first long sentence here."]
    assert chunker.held == HeldText(chars=4, sentence_chars=3, end=HeldEnd.LOOK_AHEAD)
    assert chunker.feed("T") == []
    assert chunker.held == HeldText(chars=5, sentence_chars=3, end=HeldEnd.OPEN)  # "Ok." is held to merge
    assert chunker.release_sentences() == ["Ok."]
    assert chunker.flush() == "T"


def test_a_release_does_not_end_the_utterance_but_spends_the_early_first_fragment() -> None:
    chunker = IncrementalSentenceChunker()
    assert chunker.feed("Hi. ") == []
    assert chunker.release_sentences() == ["Hi."]
    # No early fragment at the comma any more: later chunks are whole sentences.
    assert chunker.feed("How are you doing today, my friend? Good") == ["How are you doing today, my friend?"]
    assert chunker.flush() == "Good"
    # flush does end it: the next utterance gets its early fragment again.
    assert chunker.feed("How are you doing today, my friend?") == ["How are you doing today,"]


def test_the_rest_of_a_sentence_released_early_goes_out_at_its_end_however_short() -> None:
    chunker = IncrementalSentenceChunker()
    assert chunker.feed("Let me check the") == []
    assert chunker.held == HeldText(chars=16, sentence_chars=0, end=HeldEnd.OPEN)
    assert chunker.release_all() == ["Let me check the"]
    assert chunker.feed(" lights. ") == []
    assert chunker.held == HeldText(chars=8, sentence_chars=7, end=HeldEnd.LOOK_AHEAD)
    assert chunker.feed("And") == ["lights."]  # a continuation: no merge floor
    # A released sentence end starts a new sentence: the floor applies again.
    assert chunker.feed(" so. ") == []
    assert chunker.release_all() == ["And so."]
    assert chunker.feed("Ok. Then") == []
    assert chunker.flush() == "Ok. Then"


def test_the_rest_of_a_forced_first_cut_is_released_at_its_end() -> None:
    chunker = IncrementalSentenceChunker(first_cut="at-max")
    text = "Let me check the current thermostat settings in the living room for you."
    assert chunker.feed(text) == ["Let me check the current thermostat settings in the living room"]
    assert chunker.held == HeldText(chars=8, sentence_chars=0, end=HeldEnd.UNSPACED)
    assert chunker.feed(" ") == []
    assert chunker.held == HeldText(chars=9, sentence_chars=8, end=HeldEnd.LOOK_AHEAD)
    assert chunker.feed("Okay? Bye.") == ["for you."]  # not glued to the next sentence


def test_a_released_line_keeps_the_next_line_a_list() -> None:
    chunker = IncrementalSentenceChunker(**LATER)
    assert chunker.feed("Here are steps\n") == []
    assert chunker.held == HeldText(chars=15, sentence_chars=14, end=HeldEnd.MERGING)
    assert chunker.release_all() == ["Here are steps"]
    # "1." starts a line, so it is a list marker, not a sentence.
    assert chunker.feed("1. Open the lid of the box. ") == []
    held = chunker.held
    assert held is not None and held.end is HeldEnd.LOOK_AHEAD and held.sentence_chars == 27


def test_a_release_at_a_cjk_terminal_keeps_every_character() -> None:
    chunker = IncrementalSentenceChunker()
    assert chunker.feed("「我是一个机器人。") == []
    assert chunker.release_sentences() == ["「我是一个机器人。"]
    assert chunker.feed("」今天天气很好。") == []
    assert chunker.flush() == "」今天天气很好。"


def test_an_empty_release_costs_nothing() -> None:
    chunker = IncrementalSentenceChunker(early_first_fragment=False)
    chunker.feed("alpha " * 60)
    before = chunker.scanned_chars
    for _ in range(100):
        assert chunker.release_sentences() == []
        assert chunker.held is not None
    assert chunker.scanned_chars == before


def test_reset_and_flush_clear_what_is_held() -> None:
    chunker = IncrementalSentenceChunker()
    chunker.feed("Sure. ")
    chunker.reset()
    assert chunker.held is None
    chunker.feed("Sure. ")
    assert chunker.flush() == "Sure."
    assert chunker.held is None


@pytest.mark.parametrize(
    ("single_period", "word", "at_line_start", "ends"),
    [
        (True, "lights", False, True),
        (True, "etc", False, True),
        (True, "3", False, True),
        (False, "", False, True),  # "?!", "..."
        (True, "Dr", False, False),
        (True, "e.g", False, False),
        (True, "J", False, False),
        (True, "No", False, False),  # "No. 5" would run on
        (True, "U.S", False, False),
        (True, "1", True, False),
        (True, "1", False, True),
    ],
)
def test_which_held_periods_end_a_sentence(single_period: bool, word: str, at_line_start: bool, ends: bool) -> None:
    assert run_ends_unless_lower(single_period, word, at_line_start=at_line_start) is ends


# ---- the phrase rule's parts ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "word", "tier"),
    [
        ("and", "and", 1),
        ("“Whether", "whether", 1),
        ("that", "that", 1),
        ("for", "for", 2),
        ("to", "to", 2),
        ("(the", "the", 3),
        ("I", "i", 3),
        ("room,", "room", 4),
        ("Don’t", "don't", 4),
        ("of", "of", 4),  # "the end | of the road" splits a noun phrase
        ("off", "off", 4),  # a particle belongs to its verb
    ],
)
def test_words_and_their_tiers(token: str, word: str, tier: int) -> None:
    assert phrase_word(token) == word
    assert opening_tier(word) == tier


def feed_words(planner: FirstCutPlanner, text: str) -> list[int | None]:
    """Feeds each word, its boundary being its index; returns the planner's answer after each."""
    return [planner.word_done(w, i, i + 1, True) for i, w in enumerate(text.split())]


def test_the_planner_waits_then_cuts_at_the_latest_best_boundary() -> None:
    answers = feed_words(
        FirstCutPlanner(3, 12, "at-max"), "Let me check the current thermostat settings in the living room for you"
    )
    assert answers[:11] == [None] * 11
    assert answers[11] == 10  # after "room" (word 11), before "for"


def test_the_eager_planner_cuts_at_the_first_good_boundary_as_soon_as_the_next_word_shows_it() -> None:
    text = "Let me check the current thermostat settings in the living room"
    assert feed_words(FirstCutPlanner(3, 12), text)[:11] == [None] * 11  # clause first: no clause opener yet
    answers = feed_words(FirstCutPlanner(3, 12, "phrase"), text)
    assert answers[:7] == [None] * 7  # "Let me check | the" is tier 3; "check" has too few words before it anyway
    assert answers[7] == 6  # "in" (word 8) ends: cut after "settings" (word 7), before "in"
    # Fewer than five words before the first preposition: no eager cut there, the next good one is taken.
    answers = feed_words(FirstCutPlanner(3, 12), "I went to the shop and bought bread")
    assert answers[:5] == [None] * 5
    assert answers[5] == 4  # before "and"


def test_past_the_bound_the_planner_never_cuts_after_a_binding_word() -> None:
    # No function word to cut before: the latest boundary not after "enough", "more" or "will".
    text = "the big red big red big red big red big red big red enough more will"
    answers = feed_words(FirstCutPlanner(3, 12), text)
    assert answers[:15] == [None] * 15
    assert answers[15] == 12  # after "red" (word 13)


def test_past_the_bound_the_planner_prefers_a_boundary_before_a_noun_phrase() -> None:
    text = "the big red big red big red big red big red big red the big red"
    answers = feed_words(FirstCutPlanner(3, 12), text)
    assert answers[15] == 12  # after "red" (word 13), before "the", not after "big" or "red" (word 16)


def test_the_planner_keeps_the_plain_rule_without_english_words() -> None:
    answers = feed_words(FirstCutPlanner(3, 12), "un deux trois quatre cinq six sept huit neuf dix onze douze treize")
    assert answers[:11] == [None] * 11
    assert answers[11] == 11


# ---- release_ended: a clear sentence end goes out with its own token, not the agent's next one -----------


@pytest.mark.parametrize(
    "text",
    [
        "Sure, it is done.",
        "Is the front door locked?",
        "Yes, it is on!",
        "Really, is it on?!",
        "Sure, it is done. ",  # a token that carries the space after the period
        "Sure, it is **done.**",
        "Set it to twenty degrees (as asked).",
    ],
)
def test_a_clear_sentence_end_is_released_at_its_last_token(text: str) -> None:
    chunker = IncrementalSentenceChunker()
    assert chunker.feed(text) == []  # feed alone waits for the next token to confirm the end
    assert chunker.release_ended() == [text.strip()]
    assert chunker.held is None


@pytest.mark.parametrize(
    "text",
    [
        "It costs about 3.",  # a decimal point may follow: "3.14"
        "Please call Dr.",  # a title: "Dr. Smith"
        "Paint the room e.g.",
        "I met George W.",  # an initial
        "Look at Fig.",  # before a number: "Fig. 3"
        "We went to the U.S.",
        "Apples, pears, etc.",  # often goes on: "etc. and"
        "I will wait...",  # an ellipsis often goes on in lower case
        "I will wait…",
        'He said "it is done.',  # the closing quote may be the next token
        '"Is it done?"',  # a quote's sentence often goes on in lower case: '"Is it done?" he asked.'
        "Sure, it is **done.",
        "Set it to twenty degrees (as asked.",
        "Open the page at x.org/a?",  # a query may follow: "?c=d"
        "ii.",  # a list marker at a line start
        "<speak>It is done now.",  # SSML: what follows may be a tag that goes with this sentence
        "Sure.",  # a first fragment under min_first_words merges with the next sentence
    ],
)
def test_an_end_the_next_token_could_still_undo_waits_for_it(text: str) -> None:
    chunker = IncrementalSentenceChunker()
    assert chunker.feed(text) == []
    assert chunker.release_ended() == []
    assert chunker.held is not None and chunker.held_text == text


def test_a_short_later_sentence_still_waits_to_merge() -> None:
    chunker = IncrementalSentenceChunker()
    chunker.feed("Sure, it is done.")
    assert chunker.release_ended() == ["Sure, it is done."]
    assert chunker.feed(" Ok.") == [] and chunker.release_ended() == []  # under min_sentence_chars
    assert chunker.feed(" The lights are off now.") == []
    assert chunker.release_ended() == ["Ok. The lights are off now."]


def test_a_lower_case_word_after_a_released_end_starts_a_new_chunk() -> None:
    # The price of not waiting: feed alone keeps "done. and" together; agents' prose rarely does this.
    chunker = IncrementalSentenceChunker()
    assert chunker.feed("Sure, it is done.") == [] and chunker.release_ended() == ["Sure, it is done."]
    assert chunker.feed(" and the lights are off.") == []
    assert chunker.flush() == "and the lights are off."
