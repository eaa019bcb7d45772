"""Property: any number a console may write, in any of the non-English languages, is said in words.

Random shapes (thousands grouped by a period, comma, space, no-break or narrow no-break space, or the Indian way;
a decimal point or comma; a sign; a currency before or after; a unit after or before) inside a sentence of the
language: the front-end and the language's G2P wrapper never raise, and what they hand to the language's G2P holds
no digit and no symbol (Japanese numbers go, with their counters, to Open JTalk's reading instead).
"""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from voicedesk.engine.model import weights
from voicedesk.engine.model.g2p_pipelines import G2PPipelines
from voicedesk.engine.text.frontend import FrontEnd
from voicedesk.engine.text.frontend.spoken_symbols import JAPANESE_NUMBER, SYMBOLS

WORDS = {"e": "Son", "f": "Il y a", "h": "कुल", "i": "Sono", "j": "合計", "p": "São", "z": "共"}
GROUPS = [".", ",", " ", "\u00a0", "\u202f", "indian"]


def grouped(number: int, mark: str) -> str:
    digits = str(number)
    if mark == "indian" and len(digits) > 3:
        head, tail = digits[:-3], digits[-3:]
        pairs = [head[max(0, i - 2) : i] for i in range(len(head), 0, -2)][::-1]
        return ",".join([*pairs, tail])
    mark = "," if mark == "indian" else mark
    return f"{number:,}".replace(",", mark)


@st.composite
def shapes(draw: st.DrawFn, code: str) -> str:
    symbols = SYMBOLS[code]
    number = draw(st.integers(0, 10**12))
    written = grouped(number, draw(st.sampled_from(GROUPS))) if draw(st.booleans()) else str(number)
    if draw(st.booleans()):
        written += draw(st.sampled_from(".,")) + draw(st.from_regex(r"\d{1,3}", fullmatch=True))
    written = draw(st.sampled_from(["", "-", "−", "+"])) + written
    space = draw(st.sampled_from(["", " ", "\u00a0"]))
    where = draw(st.sampled_from(["alone", "currency before", "currency after", "unit after", "unit before"]))
    if where.startswith("currency"):
        symbol = draw(st.sampled_from(sorted(symbols.currencies)))
    else:
        symbol = draw(st.sampled_from(sorted(symbols.units)))
    return {
        "alone": written,
        "currency before": f"{symbol}{space}{written}",
        "currency after": f"{written}{space}{symbol}",
        "unit after": f"{written}{space}{symbol}",
        "unit before": f"{symbol} {written}",
    }[where]


def leftovers(text: str) -> list[str]:
    """Digits and symbols (a hyphen is a symbol unless it joins two words: "vingt-cinq")."""
    return [
        c
        for i, c in enumerate(text)
        if unicodedata.category(c)[0] in "NS"
        or c in "%‰#/\\@&"
        or (c in "-−+" and not (text[i - 1 : i].isalpha() and text[i + 1 : i + 2].isalpha()))
    ]


@pytest.fixture(scope="module")
def pipelines() -> G2PPipelines:
    return G2PPipelines(weights.REPO_ID, False, weights.cached_vocab())


@pytest.mark.parametrize("code", sorted(WORDS))
def test_no_number_shape_raises_or_reaches_the_g2p_as_digits_or_symbols(pipelines, code):
    g2p = pipelines.get(code).g2p
    front_end = FrontEnd()

    @settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(shape=shapes(code), end=st.sampled_from([".", "", "。" if code in "jz" else "?"]))
    def check(shape: str, end: str) -> None:
        text = f"{WORDS[code]} {shape}{end}"
        units = front_end.to_spoken(text, code).units
        said = " ".join(unit.g2p_text for unit in units)
        for reader, piece in g2p.pieces(g2p.spoken(said)):
            if reader == "reading":
                assert JAPANESE_NUMBER.fullmatch(piece), (text, piece)
            else:
                assert leftovers(piece) == [], (text, piece)
        assert g2p(said)[0], text  # the whole G2P runs, and says something

    check()
