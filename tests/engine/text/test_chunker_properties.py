"""The chunker gives the same chunks however its text is split, keeps every character (releases interleaved
included), says consistently what it holds, and works in linear time."""

from __future__ import annotations

import itertools
import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.engine.text.chunker_corpus import LONG_TEXTS, REALISTIC, chunk_all, split_at
from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker, estimate_phonemes
from voicedesk.engine.text.chunking.sentence_ends import NEWLINES, HeldEnd

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


LLM_TOKEN = re.compile(r"[^\r\n\w]?[^\W\d_]+|\d{1,3}| ?[^\s\w]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
"""GPT-4-style pre-tokenization: a period that goes on without a space is in the next token (".pdf", ".S")."""


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    # Prose whose sentences start in upper case: a lower-case word or more dots after "done." is the case that
    # release_ended gives up.
    picks=st.lists(
        st.sampled_from([t for t in REALISTIC if not t[0].islower() and t[0] != "."]), min_size=1, max_size=4
    ),
    separators=st.lists(st.sampled_from([" ", "\n", "\n\n", "  "]), min_size=4, max_size=4),
    options=OPTIONS,
)
def test_releasing_clear_ends_at_their_token_gives_the_same_chunks(
    picks: list[str], separators: list[str], options: dict
) -> None:
    text = "".join(p + s for p, s in zip(picks, separators, strict=False))
    tokens = LLM_TOKEN.findall(text)
    assert "".join(tokens) == text
    chunker = IncrementalSentenceChunker(**options)
    chunks = [chunk for token in tokens for chunk in chunker.feed(token) + chunker.release_ended()]
    rest = chunker.flush()
    assert chunks + ([rest] if rest else []) == fed_in_pieces(text, [text], **options)


# ---- held and releases, interleaved with feeding ----------------------------------------------------------


def check_held(chunker: IncrementalSentenceChunker, fed: str) -> None:
    """``held`` agrees with ``buffered_chars`` and with the text: the held text is the last ``chars`` fed."""
    held = chunker.held
    assert (held is None) == (chunker.buffered_chars == 0)
    if held is None:
        return
    assert held.chars == chunker.buffered_chars
    text = fed[len(fed) - held.chars :]
    assert text[:1].strip(), "held text starts at a non-space character"
    assert 0 <= held.sentence_chars <= held.chars
    if held.sentence_chars:
        # The end is a punctuation mark or closer, or the character before a newline.
        assert text[held.sentence_chars - 1].strip() or text[held.sentence_chars] in NEWLINES
    if held.end in (HeldEnd.LOOK_AHEAD, HeldEnd.CLOSERS, HeldEnd.MERGING):  # a sentence end, as far as one can tell
        assert held.sentence_chars > 0
        assert not text[held.sentence_chars :].strip(), "only whitespace after the end of an ended sentence"


ACTIONS = ["feed", "feed", "held", "release_sentences", "release_all"]


def fed_with_releases(pieces: list[str], actions: list[str], **options: object) -> list[str]:
    """Feeds the pieces, after each doing the next action; checks every release against ``held``."""
    chunker = IncrementalSentenceChunker(**options)
    out: list[str] = []
    fed = ""
    for piece, action in zip(pieces, itertools.cycle(actions or ["feed"]), strict=False):
        out.extend(chunker.feed(piece))
        fed += piece
        check_held(chunker, fed)
        held = chunker.held
        held_text = "" if held is None else fed[len(fed) - held.chars :]
        if action == "release_sentences":
            chunks = chunker.release_sentences()
            if held is None or not held.sentence_chars:
                assert chunks == []
                assert chunker.held == held
            else:
                assert chunks == [held_text[: held.sentence_chars].strip()]
                after = chunker.held
                assert after is None or after.sentence_chars == 0, "release_sentences left a sentence end"
                assert chunker.buffered_chars == len(held_text[held.sentence_chars :].lstrip())
            out.extend(chunks)
        elif action == "release_all":
            chunks = chunker.release_all()
            assert chunks == ([held_text.strip()] if held_text else [])
            assert chunker.held is None
            out.extend(chunks)
        check_held(chunker, fed)
    rest = chunker.flush()
    if rest is not None:
        out.append(rest)
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tokens=st.lists(st.sampled_from(SOUP), max_size=200),
    options=OPTIONS,
    seed=st.integers(0, 2**32),
    count=st.integers(0, 60),
    actions=st.lists(st.sampled_from(ACTIONS), max_size=20),
)
def test_releases_between_feeds_keep_every_character_once(
    tokens: list[str], options: dict, seed: int, count: int, actions: list[str]
) -> None:
    text = "".join(tokens)
    check_chunks(
        text, fed_with_releases(random_pieces(text, seed, count), actions, **options), options["max_chunk_phonemes"]
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    picks=st.lists(st.sampled_from(REALISTIC), min_size=1, max_size=3),
    options=OPTIONS,
    seed=st.integers(0, 2**32),
    count=st.integers(1, 80),
    actions=st.lists(st.sampled_from(ACTIONS), max_size=20),
)
def test_releases_in_realistic_replies_keep_every_character_once(
    picks: list[str], options: dict, seed: int, count: int, actions: list[str]
) -> None:
    text = " ".join(picks)
    check_chunks(
        text, fed_with_releases(random_pieces(text, seed, count), actions, **options), options["max_chunk_phonemes"]
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tokens=st.lists(st.sampled_from(SOUP), max_size=120), options=OPTIONS, seed=st.integers(0, 2**32))
def test_held_does_not_depend_on_how_the_text_was_split(tokens: list[str], options: dict, seed: int) -> None:
    text = "".join(tokens)
    chunker = IncrementalSentenceChunker(**options)
    fed = ""
    for piece in random_pieces(text, seed, 12):
        chunker.feed(piece)
        fed += piece
        whole = IncrementalSentenceChunker(**options)
        whole.feed(fed)
        assert chunker.held == whole.held


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
