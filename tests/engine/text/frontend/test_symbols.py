"""Every symbol the front-end leaves is said, read by the language's G2P or heard as punctuation, or dropped on
purpose (``engine/text/frontend/symbols.py``): the check runs for every language's table, every common symbol,
wherever in a word it stands; and a table of what each symbol becomes."""

from __future__ import annotations

import string

import pytest

from voicedesk.engine.text.frontend.spoken import SPOKEN, TEXT, Unit
from voicedesk.engine.text.frontend.symbols import TABLES, say_symbols, unsaid

SYMBOLS = string.punctuation + "§°±×÷©®™€£¥¢µ¶•·←→≤≥≠≈∞√½¼¾‰′″–—…‘’“”«»¿¡†※・％℃"
PLACES = ("x{}y", "{}5", "{}", "word{}", "{}word", "5{}5")


def said(text: str, language: str, kind: str = TEXT) -> str:
    units = [Unit(word, 0, len(text), kind) for word in text.split()]
    return " ".join(u.text for u in say_symbols(units, language, []))


@pytest.mark.parametrize("language", sorted(TABLES))
def test_no_symbol_reaches_the_g2p_unsaid_in_any_language(language):
    for symbol in SYMBOLS:
        for place in PLACES:
            for kind in (TEXT, SPOKEN):
                units = say_symbols([Unit(place.format(symbol), 0, 3, kind)], language, [])
                assert not unsaid(units, language), (language, place.format(symbol), [u.text for u in units])


@pytest.mark.parametrize(
    ("language", "written", "said_as"),
    [
        ("a", "host:8080", "host colon 8080"),
        ("a", "A12/31/B7", "A12 slash 31 slash B7"),
        ("a", "on/off", "on/off"),  # misaki reads the two words
        ("a", "x<y", "x less than y"),
        ("a", "-l", "dash l"),
        ("a", "-5", "-5"),  # misaki says "minus"
        ("a", "5%", "5%"),
        ("a", "docs.example", "docs dot example"),
        ("a", "e.g.", "e.g."),
        ("a", "snake_case", "snake case"),
        ("a", "**", ""),
        ("a", "Done ...", "Done..."),
        ("a", "Lights - off", "Lights— off"),
        ("a", "5‰", "5 per mille"),
        ("e", "servidor:8080", "servidor dos puntos 8080"),
        ("e", "7:45 km/h -5 °C 1.000,5 20 €", "7:45 km/h -5 °C 1.000,5 20 €"),  # spoken_symbols says them
        ("e", "¿Qué?", "Qué?"),
        ("f", "a/b", "a barre oblique b"),
        ("f", "72 %", "72 %"),
        ("i", "x=y", "x uguale a y"),
        ("p", "R$ 20", "R$ 20"),
        ("h", "a+b", "a प्लस b"),
        ("j", "A/B", "A スラッシュ B"),
        ("j", "ジョン・スミス", "ジョン・スミス"),
        ("z", "100%", "100%"),  # cn2an reads it
        ("z", "a@b", "a 艾特 b"),
    ],
)
def test_what_each_symbol_becomes(language, written, said_as):
    assert said(written, language) == said_as


def test_a_colon_a_normalizer_left_between_words_is_a_pause():
    assert said("eleven:thirty", "a", SPOKEN) == "eleven:thirty"
    assert said("host:8080", "a", TEXT) == "host colon 8080"
