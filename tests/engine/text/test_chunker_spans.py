"""The chunker agrees with the text front-end: no cut inside an inline override, a link, an SSML tag or element,
or between a number and its unit; the ceiling counts what is spoken (fragmentation invariance still holds)."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.engine.text.chunker_corpus import chunk_all, split_at
from tests.engine.text.test_chunker_ceiling import g2p_phonemes  # noqa: F401 - the real-G2P fixture
from tests.engine.text.test_chunker_properties import OPTIONS, SOUP, check_chunks, fed_in_pieces
from voicedesk.engine.text.chunking.chunker import estimate_phonemes
from voicedesk.engine.text.chunking.protected_spans import SpanGuard, number_binds

# The cut the chunker made before it knew these constructs is in the comment.
CASES = [
    (
        "override-with-a-space",  # was cut after "(/ʃɪvˈɔn" (the 12th word)
        "one two three four five six seven eight nine ten [Siobhan Nguyen](/ʃɪvˈɔn nwˈɪn/) eleven twelve.",
        ["one two three four five six seven eight nine ten [Siobhan Nguyen](/ʃɪvˈɔn nwˈɪn/)", "eleven twelve."],
    ),
    (
        "link-text-with-a-comma",  # was cut at "guide,"
        "Read more in [the setup guide, part two](https://example.org/a,b) before you start the installation.",
        ["Read more in [the setup guide, part two](https://example.org/a,b)", "before you start the installation."],
    ),
    (
        "link-text-with-a-period",  # was cut at "v2."
        "Open [the notes for v2. They help](https://x.org) and read them.",
        ["Open [the notes for v2. They help](https://x.org)", "and read them."],
    ),
    (
        "no-eager-phrase-cut-inside-a-link",  # "the notes | for" would have been the first good phrase boundary
        "Open [the long notes for the new version](https://x.org) now and read them.",
        ["Open [the long notes for the new version](https://x.org) now", "and read them."],
    ),
    (
        "negative-temperature",  # was cut at "-5 | °C" (the 12th word)
        "one two three four five six seven eight nine ten eleven -5 °C twelve thirteen.",
        ["one two three four five six seven eight nine ten eleven -5 °C", "twelve thirteen."],
    ),
    (
        "watts",  # was cut at "1,200 | W"
        "one two three four five six seven eight nine ten eleven 1,200 W twelve thirteen.",
        ["one two three four five six seven eight nine ten eleven 1,200 W", "twelve thirteen."],
    ),
    (
        "speed",  # was cut at "20 | km/h"
        "one two three four five six seven eight nine ten eleven 20 km/h twelve thirteen.",
        ["one two three four five six seven eight nine ten eleven 20 km/h", "twelve thirteen."],
    ),
    (
        "time",  # was cut at "6:45 | AM"
        "one two three four five six seven eight nine ten eleven 6:45 AM twelve thirteen.",
        ["one two three four five six seven eight nine ten eleven 6:45 AM", "twelve thirteen."],
    ),
    (
        "a-number-before-a-clause-may-be-cut",
        "one two three four five six seven eight nine ten eleven 12 and then more words here.",
        ["one two three four five six seven eight nine ten eleven 12", "and then more words here."],
    ),
    (
        "ssml-top-level-sentences",  # was cut inside <prosody>
        '<speak>Hello there, my friend. How are you? <prosody rate="slow">Slow. Very slow.</prosody> The end.</speak>',
        [
            "<speak>Hello there, my friend.",
            'How are you? <prosody rate="slow">Slow. Very slow.</prosody> The end.</speak>',
        ],
    ),
    (
        "ssml-no-cut-inside-a-tag-or-at-a-clause",  # was cut at "on,"
        '<speak>Turn it on, then <say-as interpret-as="characters">ABC</say-as>, please, and go. Next one.</speak>',
        [
            '<speak>Turn it on, then <say-as interpret-as="characters">ABC</say-as>, please, and go.',
            "Next one.</speak>",
        ],
    ),
    (
        "ssml-newlines-are-layout",  # was cut at each newline
        "<speak>\n  Line one goes on\n  and on. Second sentence.\n</speak>",
        ["<speak>\n  Line one goes on\n  and on.", "Second sentence.\n</speak>"],
    ),
    (
        "angle-brackets-outside-ssml-are-text",
        "Is 3 < 4, you ask? Yes.",
        ["Is 3 < 4,", "you ask?", "Yes."],
    ),
    (
        "stray-bracket-gives-up-at-the-newline",
        "See [note one\nThen this, and that.",
        ["See [note one", "Then this, and that."],
    ),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_constructs_the_front_end_reads_whole_are_not_cut(text: str, expected: list[str]) -> None:
    assert chunk_all(text) == expected
    assert chunk_all(text, list(text)) == expected


def test_the_ceiling_cuts_before_a_long_override_not_inside_it() -> None:
    override = "[Llanfairpwllgwyngyll Cymru](/ɬanvairpuɬɡwɪnɡɪɬ kəmri/)"
    text = "word " * 60 + override + " and more" * 10 + "."
    chunks = chunk_all(text, max_chunk_phonemes=100, early_first_fragment=False)
    assert sum(override in chunk for chunk in chunks) == 1
    check_chunks(text, chunks, 100)


def test_the_ceiling_does_not_separate_a_number_from_its_unit() -> None:
    text = " ".join(["It was -5 °C and then 1,200 W and 20 km/h at 6:45 AM"] * 8) + "."
    chunks = chunk_all(text, max_chunk_phonemes=80, early_first_fragment=False)
    check_chunks(text, chunks, 80)
    for chunk in chunks:
        assert not chunk.startswith(("°C", "W ", "km/h", "AM")), chunks


def test_words_that_end_in_digits_are_not_numbers_and_are_never_cut_inside() -> None:
    # "w16 w17 …" once chained word to word as number and unit, so the ceiling found no boundary and cut "w|17".
    words = [f"w{i}" for i in range(80)] + ["COVID-19", "case", "B2", "unit"] * 5
    text = " ".join(words)
    chunks = chunk_all(text, max_chunk_phonemes=80, early_first_fragment=False)
    check_chunks(text, chunks, 80)
    assert " ".join(chunks).split() == words


# ---- the estimate counts what is spoken --------------------------------------------------------------------


def test_an_override_costs_its_phonemes_and_a_link_its_text_and_target() -> None:
    assert estimate_phonemes("[Siobhan](/ʃɪvˈɔn/)") < estimate_phonemes("Siobhan ʃɪvˈɔn")
    assert estimate_phonemes("[Siobhan](/ʃɪvˈɔn/)") >= len("ʃɪvˈɔn")
    url = "https://example.org/a/very/long/path/to/some/page.html?with=query&and=more"
    # Erring high: a link is read by its text, but one never closed is read whole, so its target always counts.
    assert estimate_phonemes("the docs") < estimate_phonemes(f"[the docs]({url})")
    assert estimate_phonemes(f"[the docs]({url})") <= estimate_phonemes(f"the docs {url}") + 4


SPOKEN_FORMS = [
    ("-5 °C", "minus five degrees Celsius"),
    ("-5°C", "minus five degrees Celsius"),
    ("21°C", "twenty one degrees Celsius"),
    ("1,200 W", "one thousand two hundred watts"),
    ("20 km/h", "twenty kilometers per hour"),
    ("6:45 AM", "six forty five A M"),
    ("3:07 PM", "three oh seven P M"),
    ("12/03", "December third"),
    (
        "$1,234,567.89",
        "one million two hundred thirty four thousand five hundred sixty seven dollars and eighty nine cents",
    ),
    (
        "777,777,777,777",
        "seven hundred seventy seven billion seven hundred seventy seven million seven hundred "
        "seventy seven thousand seven hundred seventy seven",
    ),
    ("3.14159", "three point one four one five nine"),
    ("+1 555 0100", "plus one five five five zero one zero zero"),
    ("42 kWh", "forty two kilowatt hours"),
    ("85 dB", "eighty five decibels"),
    ("2.5 L", "two point five liters"),
    ("400 ppm", "four hundred parts per million"),
]


@pytest.mark.slow  # real misaki G2P (imports kokoro and spaCy)
def test_the_estimate_of_a_number_covers_its_spoken_form(g2p_phonemes) -> None:  # noqa: F811
    # The chunker runs before the front-end expands "-5 °C"; its estimate must cover what G2P then reads.
    for written, spoken in SPOKEN_FORMS:
        assert sum(g2p_phonemes(spoken)) <= estimate_phonemes(written), (written, spoken)


# ---- the guard on its own ------------------------------------------------------------------------------------


def protected(text: str) -> list[int]:
    """The cut positions the guard refuses, each asked once the character after it is in (as the chunker does)."""
    guard = SpanGuard()
    inside = []
    for i, c in enumerate(text):
        guard.add(i, c)
        if i > 0 and guard.inside(i):
            inside.append(i)
    return inside


def test_the_guard_protects_exactly_the_span() -> None:
    text = "a [b c](/x y/) d"
    start, end = text.index("["), text.index(")") + 1
    assert protected(text) == list(range(start + 1, end))
    assert protected("a [b] c") == [3, 4]
    assert protected("no spans here, 3 < 4 > 2") == []
    ssml = '<speak>A b. <say-as interpret-as="digits">1 2</say-as> c.</speak>'
    in_tags = {p for m in re.finditer(r"<[^>]*>", ssml) for p in range(m.start() + 1, m.end())}
    in_element = set(range(ssml.index("<say-as") + 1, ssml.index("</say-as>") + len("</say-as>")))
    tags = (in_tags | in_element) - set(range(len("<spea")))  # known once "<speak" is complete
    assert set(protected(ssml)) == tags


def test_a_number_binds_to_its_unit_not_to_a_clause() -> None:
    free = frozenset({"and", "at", "the"})
    assert all(number_binds(t, free) for t in ["°C", "W", "km/h", "AM", "a.m.", "%", "million", "apples"])
    assert not any(number_binds(t, free) for t in ["and", "at", "The", "12", "", "..."])


# ---- fragmentation invariance with the constructs ------------------------------------------------------------

CONSTRUCTS = [
    "[Siobhan](/ʃɪvˈɔn/)",
    "[New York](/nuː jˈɔɹk/)",
    "[the guide, part 2](https://x.org/a(b)c)",
    "[a [nested] link](u)",
    "[just brackets]",
    "-5 °C",
    "1,200 W",
    "20 km/h",
    "6:45 AM",
    "12 and",
    "<speak>",
    "</speak>",
    '<prosody rate="slow">',
    "</prosody>",
    "<break time='1s'/>",
    '<say-as interpret-as="digits">',
    "</say-as>",
    "[",
    "](",
    ")",
    "<",
    ">",
]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tokens=st.lists(st.sampled_from(SOUP + CONSTRUCTS * 3), max_size=200),
    options=OPTIONS,
    seed=st.integers(0, 2**32),
    count=st.integers(0, 60),
)
def test_constructs_give_the_same_chunks_however_they_are_split(
    tokens: list[str], options: dict, seed: int, count: int
) -> None:
    text = "".join(tokens)
    whole = fed_in_pieces(text, [text], **options)
    rng = random.Random(seed)
    pieces = split_at(text, [rng.randrange(0, len(text) + 1) for _ in range(count)])
    assert fed_in_pieces(text, pieces, **options) == whole
    assert fed_in_pieces(text, list(text), **options) == whole
    check_chunks(text, whole, options["max_chunk_phonemes"])


WHOLE = [
    "[Siobhan Nguyen](/ʃɪvˈɔn nwˈɪn/)",
    "[the guide, part two. Read it](https://x.org)",
    "-5 °C",
    "1,200 W",
    "6:45 AM",
]
FILLER = ["the lights", "and", "in the living room", "for you", "please", "now", "one", "two", "three", "four"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    words=st.lists(st.sampled_from(FILLER + WHOLE), min_size=1, max_size=30),
    options=OPTIONS,
    ending=st.sampled_from([".", "", ", and done.", "\n"]),
)
def test_no_cut_falls_inside_a_construct(words: list[str], options: dict, ending: str) -> None:
    text = " ".join(words) + ending
    chunks = chunk_all(text, **{**options, "max_chunk_phonemes": 510})
    for construct in WHOLE:
        assert sum(chunk.count(construct) for chunk in chunks) == text.count(construct), (construct, chunks)
