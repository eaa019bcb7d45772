"""The incremental sentence chunker: exact chunks for tricky texts, fragmentation invariance, bounded work."""

from __future__ import annotations

import itertools
import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.chunker import IncrementalSentenceChunker, estimate_phonemes
from engine.chunker_rules import period_ends_sentence, run_ends_sentence


def chunk_all(text: str, pieces: list[str] | None = None, **options: object) -> list[str]:
    """Feeds ``pieces`` (default: the whole text) then flushes; returns every chunk in order."""
    chunker = IncrementalSentenceChunker(**options)
    out: list[str] = []
    for piece in [text] if pieces is None else pieces:
        out.extend(chunker.feed(piece))
    rest = chunker.flush()
    if rest is not None:
        out.append(rest)
    return out


def split_at(text: str, cuts: list[int]) -> list[str]:
    bounds = [0, *sorted(set(cuts)), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


LATER = {"early_first_fragment": False}
"""Sentence rules without the early first fragment, so a case shows one rule at a time."""

# (id, text, options, expected chunks)
CASES: list[tuple[str, str, dict, list[str]]] = [
    # ---- the early first fragment -------------------------------------------------------------------
    (
        "first-fragment-at-comma",
        "Well, I think that the best approach here, given your constraints, would be to wait.",
        {},
        ["Well, I think that the best approach here,", "given your constraints, would be to wait."],
    ),
    (
        "first-fragment-is-a-whole-short-sentence",
        "Sure, I can help with that. The weather is sunny today, with highs near seventy.",
        {},
        ["Sure, I can help with that.", "The weather is sunny today, with highs near seventy."],
    ),
    (
        "first-fragment-forced-after-12-words",
        "one two three four five six seven eight nine ten eleven twelve thirteen fourteen.",
        {},
        ["one two three four five six seven eight nine ten eleven twelve", "thirteen fourteen."],
    ),
    (
        "first-fragment-waits-for-3-words",
        "Hi. How are you doing today, my friend?",
        {},
        ["Hi. How are you doing today,", "my friend?"],
    ),
    (
        "first-fragment-at-colon",
        "Here is the plan: we leave at noon and drive north.",
        {},
        ["Here is the plan:", "we leave at noon and drive north."],
    ),
    (
        "first-fragment-at-em-dash",
        "I went to the store—no, I ran there.",
        {},
        ["I went to the store—", "no, I ran there."],
    ),
    (
        "first-fragment-at-spaced-hyphen",
        "The answer is simple - we wait for it.",
        {},
        ["The answer is simple -", "we wait for it."],
    ),
    (
        "first-fragment-at-double-hyphen",
        "I was going to go--but then it rained on everyone.",
        {},
        ["I was going to go--", "but then it rained on everyone."],
    ),
    (
        "forced-cut-never-after-a-title",
        "one two three four five six seven eight nine ten eleven Dr. Smith arrived late today.",
        {},
        ["one two three four five six seven eight nine ten eleven Dr. Smith", "arrived late today."],
    ),
    (
        "no-early-fragment-when-disabled",
        "Well, I think that the best approach here, given your constraints, would be to wait. Then go.",
        LATER,
        ["Well, I think that the best approach here, given your constraints, would be to wait.", "Then go."],
    ),
    # ---- sentence ends ------------------------------------------------------------------------------
    (
        "period-bang-question",
        "This is the first sentence. This is the second sentence! Is this the third one? Yes it is.",
        {},
        ["This is the first sentence.", "This is the second sentence!", "Is this the third one?", "Yes it is."],
    ),
    (
        "ellipsis-ends-before-a-capital",
        "I was thinking about it... And then I decided to go home.",
        {},
        ["I was thinking about it...", "And then I decided to go home."],
    ),
    (
        "ellipsis-inside-a-sentence",
        "I was thinking... maybe we should go home now.",
        {},
        ["I was thinking... maybe we should go home now."],
    ),
    (
        "unicode-ellipsis-inside",
        "Well… that is a surprise to everyone here. Nobody expected it.",
        LATER,
        ["Well… that is a surprise to everyone here.", "Nobody expected it."],
    ),
    (
        "spaced-ellipsis-inside",
        "I wonder . . . what happens next in the story.",
        {},
        ["I wonder . . . what happens next in the story."],
    ),
    (
        "interrobang-run",
        "You did what?! That is completely unbelievable, honestly.",
        {},
        ["You did what?!", "That is completely unbelievable, honestly."],
    ),
    (
        "closing-quote-stays",
        'She looked at me and said "Stop right there!" Then she left the room.',
        {},
        ['She looked at me and said "Stop right there!"', "Then she left the room."],
    ),
    (
        "quoted-question-then-lowercase-runs-on",
        '"Are you sure about this?" he asked me quietly. I nodded slowly in reply.',
        {},
        ['"Are you sure about this?" he asked me quietly.', "I nodded slowly in reply."],
    ),
    (
        "closing-bracket-stays",
        "The results were clear (see the appendix.) We moved on to the next topic.",
        {},
        ["The results were clear (see the appendix.)", "We moved on to the next topic."],
    ),
    (
        "curly-quotes-stay",
        "He said “we are done here.” Then everyone went home for the night.",
        {},
        ["He said “we are done here.”", "Then everyone went home for the night."],
    ),
    (
        "markdown-emphasis-stays",
        "The service restarts at **midnight.** Save your work first, please.",
        LATER,
        ["The service restarts at **midnight.**", "Save your work first, please."],
    ),
    (
        "sentence-ending-in-a-number",
        "The answer is 42. Everything else is just noise.",
        {},
        ["The answer is 42.", "Everything else is just noise."],
    ),
    (
        "emoji-after-a-sentence",
        "Great job on the release! 🎉 Keep going, you are close.",
        {},
        ["Great job on the release!", "🎉 Keep going, you are close."],
    ),
    # ---- abbreviations, titles, initials --------------------------------------------------------------
    (
        "titles",
        "I met Dr. Smith and Mrs. Jones at the clinic yesterday. They were very kind to me.",
        {},
        ["I met Dr. Smith and Mrs. Jones at the clinic yesterday.", "They were very kind to me."],
    ),
    (
        "more-titles-and-vs",
        "Prof. Brown and St. Louis fans vs. Cubs fans argued all day. Mr. Lee and Ms. Park left early.",
        LATER,
        ["Prof. Brown and St. Louis fans vs. Cubs fans argued all day.", "Mr. Lee and Ms. Park left early."],
    ),
    (
        "eg-and-ie-never-end",
        "Pick a fruit, e.g. Apples or pears, i.e. Something sweet and fresh. Then eat it.",
        LATER,
        ["Pick a fruit, e.g. Apples or pears, i.e. Something sweet and fresh.", "Then eat it."],
    ),
    (
        "etc-ends-before-a-capital",
        "We bought apples, pears, plums, etc. Then we went home together.",
        LATER,
        ["We bought apples, pears, plums, etc.", "Then we went home together."],
    ),
    (
        "etc-runs-on-before-lowercase",
        "We bought apples, pears, etc. and then we went home. It was late.",
        LATER,
        ["We bought apples, pears, etc. and then we went home.", "It was late."],
    ),
    (
        "dotted-abbreviation-runs-on",
        "He moved to the U.S. Army base in Texas last year. It was very hot there.",
        LATER,
        ["He moved to the U.S. Army base in Texas last year.", "It was very hot there."],
    ),
    (
        "am-ends-before-a-capital",
        "The meeting starts at 9 a.m. Please arrive ten minutes early for it.",
        LATER,
        ["The meeting starts at 9 a.m.", "Please arrive ten minutes early for it."],
    ),
    (
        "pm-runs-on-before-lowercase",
        "We close at 5 p.m. sharp every single day of the week.",
        LATER,
        ["We close at 5 p.m. sharp every single day of the week."],
    ),
    (
        "initials",
        "J. R. R. Tolkien wrote The Lord of the Rings. It is a long book indeed.",
        LATER,
        ["J. R. R. Tolkien wrote The Lord of the Rings.", "It is a long book indeed."],
    ),
    (
        "the-pronoun-i-is-not-an-initial",
        "Nobody else wanted to go there, but so did I. Then we left together.",
        LATER,
        ["Nobody else wanted to go there, but so did I.", "Then we left together."],
    ),
    (
        "no-before-a-number",
        "Please see item No. 5 in the list below. It explains everything.",
        LATER,
        ["Please see item No. 5 in the list below.", "It explains everything."],
    ),
    (
        "no-as-a-word-ends",
        "I asked if he agreed, and he said No. Then he walked away from me.",
        LATER,
        ["I asked if he agreed, and he said No.", "Then he walked away from me."],
    ),
    (
        "month-before-a-day",
        "The launch is set for Jan. 15 next year, weather permitting. Stay tuned for news.",
        LATER,
        ["The launch is set for Jan. 15 next year, weather permitting.", "Stay tuned for news."],
    ),
    (
        "figure-before-a-number",
        "As shown in Fig. 3 the curve rises sharply. Table 2 shows the rest of it.",
        LATER,
        ["As shown in Fig. 3 the curve rises sharply.", "Table 2 shows the rest of it."],
    ),
    (
        "inc-before-lowercase",
        "She works for Acme Inc. and lives in London with her family. Nice to meet her.",
        LATER,
        ["She works for Acme Inc. and lives in London with her family.", "Nice to meet her."],
    ),
    # ---- numbers, versions, times, addresses ----------------------------------------------------------
    (
        "decimals",
        "Pi is about 3.14159 and e is about 2.71828 in value. Both are irrational numbers.",
        LATER,
        ["Pi is about 3.14159 and e is about 2.71828 in value.", "Both are irrational numbers."],
    ),
    (
        "versions",
        "Upgrade from v1.2.3 to version 2.0.1 before Friday. It fixes the crash on start.",
        LATER,
        ["Upgrade from v1.2.3 to version 2.0.1 before Friday.", "It fixes the crash on start."],
    ),
    (
        "money",
        "The price is $12.50 today, down from $15.99 last week. That is a good deal.",
        LATER,
        ["The price is $12.50 today, down from $15.99 last week.", "That is a good deal."],
    ),
    (
        "times",
        "We meet at 10:30 or at 14:45:30 sharp. Do not be late, please.",
        LATER,
        ["We meet at 10:30 or at 14:45:30 sharp.", "Do not be late, please."],
    ),
    (
        "thousands-separators",
        "The population grew to 1,234,567 people by 2020. Growth slowed after that.",
        LATER,
        ["The population grew to 1,234,567 people by 2020.", "Growth slowed after that."],
    ),
    (
        "url-and-email",
        "Visit https://example.com/a.b?c=d for details. Then email support@example.co.uk with questions.",
        LATER,
        ["Visit https://example.com/a.b?c=d for details.", "Then email support@example.co.uk with questions."],
    ),
    (
        "www-and-file-names",
        "Open www.example.org/docs/index.html in a browser. Then read report.pdf carefully.",
        LATER,
        ["Open www.example.org/docs/index.html in a browser.", "Then read report.pdf carefully."],
    ),
    (
        "url-ending-a-sentence",
        "The docs live at https://docs.example.com/guide. Read them first, please.",
        LATER,
        ["The docs live at https://docs.example.com/guide.", "Read them first, please."],
    ),
    (
        "ranges-hyphens-and-negatives-do-not-cut",
        "A well-known 10–12 year-old saw -5 degrees and ran --quickly home today.",
        {},
        ["A well-known 10–12 year-old saw -5 degrees and ran --quickly home today."],
    ),
    # ---- lines and lists ------------------------------------------------------------------------------
    (
        "numbered-list-markers-are-not-sentences",
        "Here are the steps:\n1. Open the box\n2. Remove the cover\n3. Plug it in and wait",
        {},
        ["Here are the steps:", "1. Open the box\n2. Remove the cover", "3. Plug it in and wait"],
    ),
    (
        "numbered-list-with-periods",
        "Steps follow.\n\n1. Open the lid of the box.\n2. Take out the cable.\n",
        LATER,
        ["Steps follow.\n\n1. Open the lid of the box.", "2. Take out the cable."],
    ),
    (
        "a-number-mid-line-may-end-a-sentence",
        "We waited for the count of 3. Then we all jumped into the lake.",
        LATER,
        ["We waited for the count of 3.", "Then we all jumped into the lake."],
    ),
    (
        "newlines-end-sentences",
        "First line without punctuation\nSecond line also without any\n",
        LATER,
        ["First line without punctuation", "Second line also without any"],
    ),
    (
        "crlf-and-blank-lines",
        "Paragraph one is right here.\r\n\r\nParagraph two follows it now.",
        {},
        ["Paragraph one is right here.", "Paragraph two follows it now."],
    ),
    (
        "bullets",
        "Options:\n- red apples\n- green pears and more",
        LATER,
        ["Options:\n- red apples", "- green pears and more"],
    ),
    (
        "tabs-and-runs-of-spaces",
        "  \t Leading   whitespace\tand   tabs are   kept inside.  Next sentence here.",
        {},
        ["Leading   whitespace\tand   tabs are   kept inside.", "Next sentence here."],
    ),
    # ---- CJK ------------------------------------------------------------------------------------------
    (
        "chinese",
        "你好，我是一个机器人。今天天气很好！我们去公园吧？",
        {},
        ["你好，我是一个机器人。", "今天天气很好！我们去公园吧？"],
    ),
    (
        "japanese-quote-closer-stays",
        "「こんにちは。」と彼は言った。それから帰った。",
        {},
        ["「こんにちは。」", "と彼は言った。それから帰った。"],
    ),
    (
        "cjk-with-ascii-punctuation",
        "你好,我是一个机器人!今天天气很好,我们去公园吧.",
        {},
        ["你好,我是一个机器人!", "今天天气很好,我们去公园吧."],
    ),
    (
        "cjk-long-enough-sentences",
        "我们明天早上八点在学校门口见面。请不要迟到，谢谢大家的配合。",
        LATER,
        ["我们明天早上八点在学校门口见面。", "请不要迟到，谢谢大家的配合。"],
    ),
    # ---- the floor: short sentences merge -------------------------------------------------------------
    (
        "short-sentences-merge-into-the-next",
        "Okay, let me see what I can do. Hi. Ok. Sure. Let me check that for you right now.",
        {},
        ["Okay, let me see what I can do.", "Hi. Ok. Sure. Let me check that for you right now."],
    ),
    (
        "short-last-sentence-comes-out-at-flush",
        "That is the first long sentence here. Ok.",
        {},
        ["That is the first long sentence here.", "Ok."],
    ),
    (
        "no-punctuation-at-all",
        "just some words with no punctuation at all",
        {},
        ["just some words with no punctuation at all"],
    ),
    (
        "punctuation-only",
        "... !!! ???",
        {},
        ["... !!! ???"],
    ),
]


@pytest.mark.parametrize(("text", "options", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_tricky_texts_give_exactly_these_chunks(text: str, options: dict, expected: list[str]) -> None:
    assert chunk_all(text, **options) == expected
    # The same text one character at a time gives the same chunks.
    assert chunk_all(text, list(text), **options) == expected


# ---- the ceiling: long sentences ------------------------------------------------------------------------

CLAUSES = [
    "the committee reviewed the proposal in great detail",
    "considering every possible objection raised by the members",
    "including those who had written lengthy letters of complaint",
    "and after many hours of deliberation",
    "which stretched well into the night",
    "they finally reached a decision that satisfied almost everyone",
    "although a few people remained unconvinced",
    "and promised to raise the matter again at the next meeting",
]
LONG_SENTENCE = "In the end, " + ", ".join(CLAUSES * 3) + "."
NO_PUNCTUATION = " ".join(f"word{i}" if i % 7 == 0 else "alpha" for i in range(400))
LONG_TEXTS = {
    "long-sentence": LONG_SENTENCE,
    "no-punctuation": NO_PUNCTUATION,
    "giant-token": "x" * 2000,
    "big-numbers": " ".join(str(7_777_777 + i) for i in range(150)),
    "money": "$777,777.77 " * 150,
    "acronyms": "WWW " * 300,
    "emoji": "🎉 " * 300,
    "chinese-without-punctuation": "我们明天早上八点在学校门口见面请不要迟到谢谢大家的配合" * 10,
}


def test_a_long_sentence_is_cut_at_clause_boundaries_under_the_limit() -> None:
    chunks = chunk_all("Okay. Now listen carefully to this. " + LONG_SENTENCE, early_first_fragment=False)
    assert chunks[0] == "Okay. Now listen carefully to this."
    body = chunks[1:]
    assert len(body) >= 3
    assert all(chunk.endswith(",") for chunk in body[:-1]), body
    assert " ".join(body) == LONG_SENTENCE
    assert all(estimate_phonemes(chunk) <= 510 for chunk in body)
    # Cut at the *last* clause that fits: each chunk but the last is close to the limit, not a sliver.
    assert all(estimate_phonemes(chunk) > 400 for chunk in body[:-1])


@pytest.mark.parametrize("name", sorted(LONG_TEXTS))
def test_long_texts_without_sentence_ends_are_cut_under_the_limit(name: str) -> None:
    text = LONG_TEXTS[name]
    chunks = chunk_all(text)
    assert len(chunks) >= 2
    assert all(estimate_phonemes(chunk) <= 510 for chunk in chunks)
    assert "".join(chunks).replace(" ", "") == text.replace(" ", "")
    if " " in text.strip():
        # Words are never split when there are spaces to cut at.
        assert [w for chunk in chunks for w in chunk.split()] == text.split()


def test_a_smaller_ceiling_is_respected() -> None:
    chunks = chunk_all(LONG_SENTENCE, max_chunk_phonemes=100, early_first_fragment=False)
    assert all(estimate_phonemes(chunk) <= 100 for chunk in chunks)
    assert " ".join(chunks) == LONG_SENTENCE
    # At this ceiling a clause may not fit: then the cut falls between words.
    assert all(w in LONG_SENTENCE.split() for chunk in chunks for w in chunk.split())


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
    from engine.session import SessionCore

    core = SessionCore(chunker=IncrementalSentenceChunker())
    assert core.send_text("Hello there, my good friend. How are") == []
    job, _events = core.next_job()
    assert job.text == "Hello there, my good friend."
    assert job.first_of_utterance
    assert core.buffered_chars == len("How are")


# ---- fragmentation invariance (property tests) ----------------------------------------------------------


def visible(text: str) -> str:
    return "".join(text.split())


def check_chunks(text: str, chunks: list[str], max_phonemes: int = 510) -> None:
    for chunk in chunks:
        assert chunk, chunks
        assert chunk == chunk.strip(), chunks
        assert estimate_phonemes(chunk) <= max_phonemes, chunk
    assert visible("".join(chunks)) == visible(text), "chunks must keep every non-space character, in order"


def fed_in_pieces(text: str, pieces: list[str], **options: object) -> list[str]:
    """Like chunk_all, and checks what buffered_chars says after every feed."""
    chunker = IncrementalSentenceChunker(**options)
    limit = options.get("max_chunk_phonemes", 510)
    out: list[str] = []
    for piece in pieces:
        out.extend(chunker.feed(piece))
        assert 0 <= chunker.buffered_chars <= 4 * limit  # held text is bounded by the ceiling
    held = chunker.buffered_chars
    rest = chunker.flush()
    assert (rest is None) == (held == 0)
    if rest is not None:
        out.append(rest)
    return out


SOUP = [
    *". , ; : ! ? … 。 ！ ？ ， 、 ； — – - -- ... ?! \" ' ” ’ ) ] » 」 ( [ « 「 “ ‘".split(),
    " ",
    " ",
    " ",
    "  ",
    "\n",
    "\n\n",
    "\r\n",
    "\t",
    *"a I the word Hello world Dr Mr etc e.g i.e U.S a.m No Fig Jan J R ok W xkcd".split(),
    *"1 2 12 3.14 10:30 v1.2.3 $12.50 1,234 https://x.org/a.b?c=d me@x.org report.pdf".split(),
    *"中文 机器人 こんにちは 🎉 👍🏽 é ñ Привет".split(),
]

OPTIONS = st.fixed_dictionaries(
    {
        "early_first_fragment": st.booleans(),
        "min_first_words": st.integers(1, 5),
        "first_fragment_max_words": st.integers(5, 15),
        "min_sentence_chars": st.integers(0, 40),
        "max_chunk_phonemes": st.integers(64, 600),
    }
)


def random_pieces(text: str, seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    cuts = [rng.randrange(0, len(text) + 1) for _ in range(count)]
    return split_at(text, cuts)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=300), seed=st.integers(0, 2**32), count=st.integers(0, 40))
def test_any_text_gives_the_same_chunks_however_it_is_split(text: str, seed: int, count: int) -> None:
    whole = fed_in_pieces(text, [text])
    assert fed_in_pieces(text, random_pieces(text, seed, count)) == whole
    assert fed_in_pieces(text, list(text)) == whole
    check_chunks(text, whole)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tokens=st.lists(st.sampled_from(SOUP), max_size=250),
    options=OPTIONS,
    seed=st.integers(0, 2**32),
    count=st.integers(0, 60),
)
def test_punctuation_soup_gives_the_same_chunks_however_it_is_split(
    tokens: list[str], options: dict, seed: int, count: int
) -> None:
    text = "".join(tokens)
    whole = fed_in_pieces(text, [text], **options)
    assert fed_in_pieces(text, random_pieces(text, seed, count), **options) == whole
    assert fed_in_pieces(text, list(text), **options) == whole
    check_chunks(text, whole, options["max_chunk_phonemes"])


REALISTIC = [case[1] for case in CASES] + [
    LONG_SENTENCE,
    "Sure! Here's a quick summary of the report. Revenue grew 12.5% to $3.2 billion in Q3, driven by "
    "cloud services (up 28%) and advertising. Operating costs rose 4%, mainly due to hiring; margins "
    'improved anyway. Dr. Chen, the CFO, said: "We\'re on track." Next steps:\n1. Review the budget.\n'
    "2. Meet the U.S. team at 9:30 a.m. on Jan. 5.\n3. Send the deck to cfo@example.com by Friday.",
    "I'm not sure... let me think. Okay—so the short answer is yes, but there are caveats: the API "
    "(v2.1.0) only supports UTF-8, the rate limit is 1,000 requests/minute, and timeouts default to 30s. "
    "See https://docs.example.com/api/v2.1/limits?lang=en for details, e.g. burst handling, retries, etc. "
    "Does that help? Let me know!",
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    picks=st.lists(st.sampled_from(REALISTIC), min_size=1, max_size=4),
    separators=st.lists(st.sampled_from([" ", "\n", "\n\n", "  "]), min_size=4, max_size=4),
    options=OPTIONS,
    seed=st.integers(0, 2**32),
    count=st.integers(1, 80),
)
def test_realistic_texts_give_the_same_chunks_however_they_are_split(
    picks: list[str], separators: list[str], options: dict, seed: int, count: int
) -> None:
    text = "".join(p + s for p, s in zip(picks, separators, strict=False))
    whole = fed_in_pieces(text, [text], **options)
    assert fed_in_pieces(text, random_pieces(text, seed, count), **options) == whole
    check_chunks(text, whole, options["max_chunk_phonemes"])


def test_token_sized_pieces_of_a_realistic_reply() -> None:
    # LLM tokens: a word with its leading space, punctuation on its own.
    text = REALISTIC[-2] + "\n\n" + REALISTIC[-1]
    tokens = re.findall(r"\s*\w+|\s*\W", text)
    assert "".join(tokens) == text
    chunks = chunk_all(text, tokens)
    assert chunks == chunk_all(text)
    assert chunks[:3] == [
        "Sure! Here's a quick summary of the report.",
        "Revenue grew 12.5% to $3.2 billion in Q3, driven by cloud services (up 28%) and advertising.",
        "Operating costs rose 4%, mainly due to hiring; margins improved anyway.",
    ]
    assert 'Dr. Chen, the CFO, said: "We\'re on track."' in chunks
    assert "2. Meet the U.S. team at 9:30 a.m. on Jan. 5." in chunks


# ---- linear cost -----------------------------------------------------------------------------------------


def scanned_feeding_char_by_char(text: str) -> tuple[int, int]:
    """(characters the chunker examined, most characters it ever held) when fed one character at a time."""
    chunker = IncrementalSentenceChunker()
    most_held = 0
    for c in text:
        chunker.feed(c)
        most_held = max(most_held, chunker.buffered_chars)
    chunker.flush()
    return chunker.scanned_chars, most_held


@pytest.mark.parametrize("name", ["no-punctuation", "giant-token", "chinese-without-punctuation"])
def test_work_is_linear_in_the_text_without_sentence_ends(name: str) -> None:
    unit = LONG_TEXTS[name]
    small = (unit * 20)[:2_000]
    large = (unit * 200)[:20_000]
    small_work, _ = scanned_feeding_char_by_char(small)
    large_work, most_held = scanned_feeding_char_by_char(large)
    # Each character is examined once, plus once more when a cut just before it makes it start the next chunk.
    assert len(large) <= large_work <= 2 * len(large)
    assert 9 * small_work <= large_work <= 11 * small_work
    assert most_held <= 4 * 510  # the held text never grows with the input


def test_a_character_fed_after_a_long_held_text_is_examined_once() -> None:
    chunker = IncrementalSentenceChunker(early_first_fragment=False)
    chunker.feed("alpha " * 60)
    assert chunker.buffered_chars == len("alpha " * 60)
    before = chunker.scanned_chars
    assert chunker.feed("b") == []
    assert chunker.scanned_chars - before == 1


# ---- the phoneme estimate against real G2P ----------------------------------------------------------------

ESTIMATOR_PROBES = [
    "The quick brown fox jumps over the lazy dog while the cat watches, unimpressed by the whole affair.",
    "Extraordinarily, the unconstitutional representatives characterized it as incomprehensible.",
    "music uvula unique euro menu cute huge use union unit ukulele",
    "I I I a a a to to be or or on on it it is is ok ok ok",
    "NASA FBI CIA HTML CSS JSON XML WWW IEEE ACM SQL GPU CPU API SDK AWS WWDC WWF",
    "W W W W W w w w xx yy zz ww vv wWwWwW Wwwwwww xkcd qwrtp brrr",
    "JSONParser XMLHttpRequest getElementById iOS macOS McDonald",
    "777,777,777,777 777777777 123456789012345 0.000001 3.14159265358979 777th",
    "$1,234,567.89 £99.99 €5 ¥1000 $777,777.77 100% & 50% @ # + = / \\ *",
    "1/2 3/4 12/25/2024 2024-01-15 10:30 10:30:15 5:00pm 1st 2nd 3rd 101st",
    "Ph.D. U.S.A. e.g. i.e. etc. vs. Mr. Mrs. Dr. Prof. St. Jr. a.m. p.m.",
    "https://www.example.com/path/to/file.html?query=1&b=2#frag john.doe@example.com",
    "café naïve résumé über Zürich São Paulo Kraków jalapeño crème brûlée ü ö ä ß ñ",
    "😆 😀 🤷 👍 🎉 ❤️ 🏳️‍🌈 👨‍👩‍👧‍👦 🧑🏽‍🦽‍➡️ ™ © ® ° ± × ÷ § ¶ → ∞ ≈ ≠ ≤ ≥ √ π µ ½ ①",
    "你好世界，我是一个机器人。こんにちは世界 カタカナ 한국어",
    "Привет мир Γειά σου مرحبا नमस्ते สวัสดี שלום",
]


@pytest.fixture(scope="module")
def g2p_phonemes():
    """Real misaki English G2P through kokoro's KPipeline (no model): text → phoneme count."""
    pytest.importorskip(
        "en_core_web_sm", reason="spaCy's en_core_web_sm is not installed (tests/support/install_spacy_model.sh)"
    )
    from kokoro import KPipeline

    pipeline = KPipeline(lang_code="a", repo_id="hexgrad/Kokoro-82M", model=False)

    def count(text: str) -> list[int]:
        return [len(result.phonemes) for result in pipeline(text)]

    return count


@pytest.mark.slow  # imports kokoro, spaCy and transformers: seconds of start-up
def test_the_estimate_is_never_below_real_g2p(g2p_phonemes) -> None:
    for text in ESTIMATOR_PROBES:
        assert sum(g2p_phonemes(text)) <= estimate_phonemes(text), text


@pytest.mark.slow
def test_the_longest_chunks_stay_under_kokoros_limit_in_real_g2p(g2p_phonemes) -> None:
    chunks = [chunk for text in [*LONG_TEXTS.values(), *REALISTIC] for chunk in chunk_all(text)]
    longest = sorted(chunks, key=estimate_phonemes)[-25:]
    assert estimate_phonemes(longest[-1]) > 490  # the ceiling really was reached
    for chunk in longest:
        counts = g2p_phonemes(chunk)
        assert len(counts) == 1, chunk  # KPipeline did not have to split it
        assert counts[0] <= min(510, estimate_phonemes(chunk)), chunk
    # Not absurdly conservative on prose: a cut long sentence still carries >= 300 real phonemes per chunk.
    prose = chunk_all(LONG_SENTENCE, early_first_fragment=False)
    assert all(sum(g2p_phonemes(chunk)) >= 300 for chunk in prose[:-1])


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
