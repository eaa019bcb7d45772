"""English numbers and the commonest symbols read out with num2words, when NeMo's grammars are not built or not
installed: misaki alone would read ``-5°C`` as "C". Signs, decimals, thousands, ordinals, years, times, degrees,
percent and currency only; NeMo remains the real normalizer."""

from __future__ import annotations

import re

from num2words import num2words

_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_MINUS = "-−"
_TIME = re.compile(r"(?<![\d:])(\d{1,2}):(\d{2})(?![\d:])")
_CURRENCY = re.compile(rf"([$€£])\s?({_NUMBER})")
_CURRENCY_NAMES = {"$": ("dollar", "dollars", "cent", "cents"), "€": ("euro", "euros", "cent", "cents")}
_CURRENCY_NAMES["£"] = ("pound", "pounds", "penny", "pence")
_DEGREES = re.compile(rf"(?<![\w.])([{_MINUS}]?)({_NUMBER})\s?°\s?([CF])?(?![A-Za-z])")
_PERCENT = re.compile(rf"(?<![\w.])([{_MINUS}]?)({_NUMBER})\s?%")
_ORDINAL = re.compile(r"(?<![\w.])(\d+)(?:st|nd|rd|th)\b")
_SIGNED = re.compile(rf"(?<![\w.])[{_MINUS}]({_NUMBER})(?![\w])")
_PLAIN = re.compile(rf"(?<![\w.])({_NUMBER})(?![\d])")
_SYMBOLS = {"&": " and ", "+": " plus ", "=": " equals ", "×": " times "}


def _words(value: str, **options: str) -> str:
    """num2words' spelling as words misaki reads one by one ("twenty-four" → "twenty four", no commas)."""
    return num2words(value, lang="en", **options).replace("-", " ").replace(",", "")


def _number(written: str) -> str:
    digits = written.replace(",", "")
    if "." in digits:
        whole, fraction = digits.split(".", 1)
        return f"{_words(whole)} point {' '.join(_words(d) for d in fraction)}"
    if "," not in written and len(digits) == 4 and 1100 <= int(digits) <= 2099 and not digits.endswith("00"):
        return _words(digits, to="year")
    return _words(digits)


def _signed(sign: str, written: str) -> str:
    return ("minus " if sign else "") + _number(written)


def _time(match: re.Match[str]) -> str:
    hour, minute = int(match.group(1)), int(match.group(2))
    if hour > 24 or minute > 59:
        return match.group(0)
    if minute == 0:
        return f"{_words(str(hour))} o'clock"
    return f"{_words(str(hour))} {'oh ' if minute < 10 else ''}{_words(str(minute))}"


def _currency(match: re.Match[str]) -> str:
    one, many, small_one, small_many = _CURRENCY_NAMES[match.group(1)]
    whole, _, fraction = match.group(2).replace(",", "").partition(".")
    said = f"{_words(whole)} {one if whole == '1' else many}"
    if fraction and int(fraction[:2].ljust(2, "0")):
        cents = int(fraction[:2].ljust(2, "0"))
        said += f" and {_words(str(cents))} {small_one if cents == 1 else small_many}"
    return said


def _degrees(match: re.Match[str]) -> str:
    scale = {"C": " Celsius", "F": " Fahrenheit"}.get(match.group(3) or "", "")
    unit = "degree" if match.group(2) == "1" and not match.group(1) else "degrees"
    return f"{_signed(match.group(1), match.group(2))} {unit}{scale}"


def basic_normalize(text: str) -> str:
    text = _TIME.sub(_time, text)
    text = _CURRENCY.sub(_currency, text)
    text = _DEGREES.sub(_degrees, text)
    text = _PERCENT.sub(lambda m: f"{_signed(m.group(1), m.group(2))} percent", text)
    text = _ORDINAL.sub(lambda m: _words(m.group(1), to="ordinal"), text)
    text = _SIGNED.sub(lambda m: _signed("-", m.group(1)), text)
    text = _PLAIN.sub(lambda m: _number(m.group(1)), text)
    for symbol, said in _SYMBOLS.items():
        text = text.replace(symbol, said)
    return " ".join(text.split())
