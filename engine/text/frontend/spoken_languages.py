"""Numbers and common symbols in the spoken form of a non-English voice's language, before its G2P.

Each G2P reads plain integers in its own language already (espeak-ng for es/fr/hi/it/pt, misaki's num2kana for
Japanese, cn2an for Mandarin). What they get wrong is the written conventions around them, so only those are
rewritten here, with num2words (which misaki already depends on) spelling the number:

- Spanish, Italian, Portuguese: ``1.000`` / ``1.250.000`` group thousands with periods and ``3,5`` is a decimal
  comma; espeak-ng reads "uno punto cero cero cero" and "tres, cinco". French groups with a (narrow no-break)
  space and also uses the decimal comma.
- Japanese: misaki reads ``25.5`` as "25. 5" (a sentence end) and skips ``%`` and ``°C``; decimals go to
  num2words' Japanese ("二十五点五"), and the two symbols to their Japanese words (パーセント, 度).

Before these, ``spoken_symbols`` says the signs, units, currencies and clock times around the numbers.

Mandarin and Hindi numbers are left to their G2P: cn2an reads decimals and percent ("百分之一百"), and espeak-ng's Hindi
reads digits in Hindi. A pure function of the text and the language code, like the rest of the front-end.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation

from num2words import num2words

from voicedesk.engine.text.frontend.spoken_symbols import symbols_spoken

NUM2WORDS_LANG = {"e": "es", "f": "fr", "i": "it", "p": "pt_BR", "j": "ja"}

# A number with period-grouped thousands and/or a decimal comma: "1.000", "1.250.000,5", "3,5".
_COMMA_DECIMAL = re.compile(r"(?<![\d.,])(\d{1,3}(?:\.\d{3})+(?:,\d+)?|\d+,\d+)(?![\d]|[.,]\d)")
# French: thousands grouped by a space, a no-break space or a narrow no-break space: "1 000", "12 500,75".
_SPACE_GROUPED = re.compile(r"(?<![\d,])(\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?:,\d+)?)(?![\d]|,\d)")
_POINT_DECIMAL = re.compile(r"(?<![\d.])(\d+\.\d+)(?![\d]|\.\d)")
_JA_PERCENT = re.compile(r"\s*[%％]")
_JA_DEGREES = re.compile(r"\s*(?:°C|℃|°)")


def _say(value: str, lang: str) -> str:
    try:
        number = Decimal(value)
    except InvalidOperation:
        return value
    if lang == "it" and number != number.to_integral_value():
        # num2words' Italian drops the fraction ("3,5" → "tre"): whole part, "virgola", then the digits.
        whole, _, fraction = value.partition(".")
        digits = " ".join(num2words(int(d), lang="it") for d in fraction)
        return f"{num2words(int(whole), lang='it')} virgola {digits}"
    spoken = num2words(number, lang=lang)
    # Written with a decimal comma, said with one: num2words' Spanish says "punto" whatever was written.
    return spoken.replace(" punto ", " coma ") if lang == "es" else spoken


def _comma_decimal(text: str, lang: str) -> str:
    def spell(match: re.Match[str]) -> str:
        return _say(match.group(1).replace(".", "").replace(",", "."), lang)

    return _COMMA_DECIMAL.sub(spell, text)


def _french(text: str) -> str:
    def spell(match: re.Match[str]) -> str:
        return _say(re.sub(r"[ \u00a0\u202f]", "", match.group(1)).replace(",", "."), "fr")

    return _comma_decimal(_SPACE_GROUPED.sub(spell, text), "fr")


def _japanese(text: str) -> str:
    text = _POINT_DECIMAL.sub(lambda m: _say(m.group(1), "ja"), text)
    text = _JA_PERCENT.sub("パーセント", text)
    return _JA_DEGREES.sub("度", text)


SPOKEN_FORMS: dict[str, Callable[[str], str]] = {
    "e": lambda text: _comma_decimal(text, "es"),
    "f": _french,
    "i": lambda text: _comma_decimal(text, "it"),
    "p": lambda text: _comma_decimal(text, "pt_BR"),
    "j": _japanese,
}
"""Kokoro language code → its spoken-form rewrite (languages not here need none beyond their G2P)."""


def spoken_form(text: str, language: str) -> str:
    """Signs, units, currencies and times in words (``spoken_symbols``), then the numbers' written conventions."""
    text = symbols_spoken(text, language)
    rewrite = SPOKEN_FORMS.get(language)
    return rewrite(text) if rewrite is not None else text
