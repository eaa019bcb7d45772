"""Signs, units, currencies and clock times in the words of a non-English voice's language, before its G2P.

espeak-ng (es/fr/hi/it/pt) and misaki's Japanese and Mandarin G2P read a number's digits but not what stands
around it: ``-5 °C`` came out as "cinco grados C" in Spanish (no minus, the letter C), ``72 %`` as "setenta y
dos", ``3 km`` as "tres ka eme", ``20 €`` as "veinte" and ``7:45`` with a colon the model cannot say. Each is
rewritten here into the language's words, leaving the digits to the G2P (or to the number conventions of
``spoken_languages`` that run after this), so a thermostat's "-5 °C" or a train's "7:45" is said in every
language Kokoro speaks. A pure function of the text and the language code.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

Forms = tuple[str, str]
"""(singular, plural): the unit's word after one, and after any other number."""


@dataclass(frozen=True)
class LanguageSymbols:
    minus: str | None
    """The word for a sign before a number (None: the G2P reads the sign itself, as cn2an does "负")."""
    units: dict[str, Forms]
    """Written after the number: ``°C``, ``%``, ``km``... (longest first is handled by the pattern)."""
    currencies: dict[str, Forms]
    """Written before or after the number: ``€``, ``$``..."""
    clock: Callable[[int, int], str]
    """Hours and minutes of ``7:45`` in words around the digits."""
    singular_below_2: bool = False
    """French says "1,5 kilomètre" (singular below two); the others only "1 kilómetro"."""
    no_plural: bool = False
    joiner: str = " "
    """Between the number and its word: none in Japanese and Mandarin, which write no spaces."""
    hour_forms: dict[int, str] = field(default_factory=dict)
    """Hours said in the feminine where the language counts hours so ("una", "une", "uma")."""


def _hour(symbols: LanguageSymbols, hour: int) -> str:
    return symbols.hour_forms.get(hour, str(hour))


def _same(word: str) -> Forms:
    return (word, word)


SPANISH_LIKE_UNITS = {
    "km/h": ("kilómetro por hora", "kilómetros por hora"),
    "kWh": ("kilovatio hora", "kilovatios hora"),
    "km": ("kilómetro", "kilómetros"),
    "cm": ("centímetro", "centímetros"),
    "kg": ("kilogramo", "kilogramos"),
    "m": ("metro", "metros"),
    "g": ("gramo", "gramos"),
    "l": ("litro", "litros"),
    "W": ("vatio", "vatios"),
    "°C": ("grado Celsius", "grados Celsius"),
    "°F": ("grado Fahrenheit", "grados Fahrenheit"),
    "°": ("grado", "grados"),
    "%": _same("por ciento"),
}


def _spanish_clock(hour: int, minute: int) -> str:
    return f"{_hour(SYMBOLS['e'], hour)} y {minute}" if minute else _hour(SYMBOLS["e"], hour)


def _french_clock(hour: int, minute: int) -> str:
    said = f"{_hour(SYMBOLS['f'], hour)} {'heure' if hour <= 1 else 'heures'}"
    return f"{said} {minute}" if minute else said


def _italian_clock(hour: int, minute: int) -> str:
    return f"{_hour(SYMBOLS['i'], hour)} e {minute}" if minute else _hour(SYMBOLS["i"], hour)


def _portuguese_clock(hour: int, minute: int) -> str:
    said = f"{_hour(SYMBOLS['p'], hour)} {'hora' if hour == 1 else 'horas'}"
    return f"{said} e {minute}" if minute else said


SYMBOLS: dict[str, LanguageSymbols] = {
    "e": LanguageSymbols(
        minus="menos",
        units=SPANISH_LIKE_UNITS,
        currencies={"€": ("euro", "euros"), "$": ("dólar", "dólares"), "£": ("libra", "libras")},
        clock=_spanish_clock,
        hour_forms={1: "una", 21: "veintiuna"},
    ),
    "f": LanguageSymbols(
        minus="moins",
        units={
            "km/h": ("kilomètre par heure", "kilomètres par heure"),
            "kWh": ("kilowattheure", "kilowattheures"),
            "km": ("kilomètre", "kilomètres"),
            "cm": ("centimètre", "centimètres"),
            "kg": ("kilogramme", "kilogrammes"),
            "m": ("mètre", "mètres"),
            "g": ("gramme", "grammes"),
            "l": ("litre", "litres"),
            "W": ("watt", "watts"),
            "°C": ("degré Celsius", "degrés Celsius"),
            "°F": ("degré Fahrenheit", "degrés Fahrenheit"),
            "°": ("degré", "degrés"),
            "%": _same("pour cent"),
        },
        currencies={"€": ("euro", "euros"), "$": ("dollar", "dollars"), "£": ("livre", "livres")},
        clock=_french_clock,
        singular_below_2=True,
        hour_forms={1: "une", 21: "vingt et une"},
    ),
    "i": LanguageSymbols(
        minus="meno",
        units={
            "km/h": ("chilometro orario", "chilometri orari"),
            "kWh": _same("chilowattora"),
            "km": ("chilometro", "chilometri"),
            "cm": ("centimetro", "centimetri"),
            "kg": ("chilogrammo", "chilogrammi"),
            "m": ("metro", "metri"),
            "g": ("grammo", "grammi"),
            "l": ("litro", "litri"),
            "W": _same("watt"),
            "°C": ("grado Celsius", "gradi Celsius"),
            "°F": ("grado Fahrenheit", "gradi Fahrenheit"),
            "°": ("grado", "gradi"),
            "%": _same("per cento"),
        },
        currencies={"€": _same("euro"), "$": ("dollaro", "dollari"), "£": ("sterlina", "sterline")},
        clock=_italian_clock,
        hour_forms={1: "una"},
    ),
    "p": LanguageSymbols(
        minus="menos",
        units={
            "km/h": ("quilômetro por hora", "quilômetros por hora"),
            "kWh": ("quilowatt-hora", "quilowatts-hora"),
            "km": ("quilômetro", "quilômetros"),
            "cm": ("centímetro", "centímetros"),
            "kg": ("quilograma", "quilogramas"),
            "m": ("metro", "metros"),
            "g": ("grama", "gramas"),
            "l": ("litro", "litros"),
            "W": ("watt", "watts"),
            "°C": ("grau Celsius", "graus Celsius"),
            "°F": ("grau Fahrenheit", "graus Fahrenheit"),
            "°": ("grau", "graus"),
            "%": _same("por cento"),
        },
        currencies={
            "R$": ("real", "reais"),
            "€": ("euro", "euros"),
            "$": ("dólar", "dólares"),
            "£": ("libra", "libras"),
        },
        clock=_portuguese_clock,
        hour_forms={1: "uma", 2: "duas", 21: "vinte e uma", 22: "vinte e duas"},
    ),
    "h": LanguageSymbols(
        minus="माइनस",
        units={
            "km/h": _same("किलोमीटर प्रति घंटा"),
            "kWh": _same("किलोवाट घंटा"),
            "km": _same("किलोमीटर"),
            "cm": _same("सेंटीमीटर"),
            "kg": _same("किलोग्राम"),
            "m": _same("मीटर"),
            "g": _same("ग्राम"),
            "l": _same("लीटर"),
            "W": _same("वाट"),
            "°C": _same("डिग्री सेल्सियस"),
            "°F": _same("डिग्री फ़ारेनहाइट"),
            "°": _same("डिग्री"),
            "%": _same("प्रतिशत"),
        },
        currencies={"₹": ("रुपया", "रुपये"), "€": _same("यूरो"), "$": _same("डॉलर"), "£": _same("पाउंड")},
        clock=lambda hour, minute: f"{hour} बजकर {minute} मिनट" if minute else f"{hour} बजे",
    ),
    "j": LanguageSymbols(
        minus="マイナス",
        units={
            "km/h": _same("キロメートル毎時"),
            "kWh": _same("キロワット時"),
            "km": _same("キロメートル"),
            "cm": _same("センチメートル"),
            "kg": _same("キログラム"),
            "m": _same("メートル"),
            "g": _same("グラム"),
            "l": _same("リットル"),
            "W": _same("ワット"),
            "°C": _same("度"),
            "℃": _same("度"),
            "°": _same("度"),
            "%": _same("パーセント"),
            "％": _same("パーセント"),
        },
        currencies={
            "¥": _same("円"),
            "￥": _same("円"),
            "€": _same("ユーロ"),
            "$": _same("ドル"),
            "£": _same("ポンド"),
        },
        clock=lambda hour, minute: f"{hour}時{minute}分" if minute else f"{hour}時",
        no_plural=True,
        joiner="",
    ),
    "z": LanguageSymbols(
        minus=None,
        units={
            "km/h": _same("公里每小时"),
            "kWh": _same("千瓦时"),
            "km": _same("公里"),
            "cm": _same("厘米"),
            "kg": _same("公斤"),
            "m": _same("米"),
            "g": _same("克"),
            "l": _same("升"),
            "W": _same("瓦"),
            "°C": _same("摄氏度"),
            "℃": _same("摄氏度"),
            "°F": _same("华氏度"),
            "°": _same("度"),
        },
        currencies={"¥": _same("元"), "￥": _same("元"), "€": _same("欧元"), "$": _same("美元"), "£": _same("英镑")},
        clock=lambda hour, minute: f"{hour}点{minute}分" if minute else f"{hour}点",
        no_plural=True,
        joiner="",
    ),
}
"""Kokoro language code → its words for signs, units, currencies and the clock (English has its own front-end)."""

_SPACE = r"[ \u00a0\u202f]"
# A number as written in these languages: grouped thousands (space, no-break space, period or comma), a decimal
# part, a sign. Its digits stay for the G2P and the number conventions; only its sign and surroundings change.
_NUMBER = r"[-−]?(?:\d{1,3}(?:[ \u00a0\u202f.,]\d{3})+|\d+)(?:[.,]\d+)?"
_CLOCK = re.compile(r"(?<![\d:.,])([01]?\d|2[0-3]):([0-5]\d)(?![\d:]|[.,]\d)")
# French writes "7 h 45", "7h45", "18 h": the h is the clock's (a duration "3 h" reads the same).
_FRENCH_CLOCK = re.compile(rf"(?<![\d:.,])([01]?\d|2[0-3]){_SPACE}?h(?:{_SPACE}?([0-5]\d))?(?![\w])")
# Not inside a word or number of Latin script ("COVID-19", "2024-05"); Japanese and Mandarin write a number
# right after a word ("気温は-5°C"), so their letters do not count.
_NOT_AFTER = r"(?<![0-9A-Za-z\u00c0-\u024f.,])"
_NOT_BEFORE_LETTER = r"(?![A-Za-z\u00c0-\u024f])"
_HINDI_DOUBLE_BAJE = re.compile(r"(बजकर \d+ मिनट|\d+ बजे)\s+बजे")
_SIGN = re.compile(rf"{_NOT_AFTER}[-−](?=\d)")


def _alternatives(symbols: list[str]) -> str:
    return "|".join(re.escape(s) for s in sorted(symbols, key=len, reverse=True))


def _value(number: str) -> float:
    digits = re.sub(r"[ \u00a0\u202f]", "", number).replace("−", "-")
    if re.fullmatch(r"-?\d{1,3}(?:[.,]\d{3})+", digits):  # grouped thousands, no decimals
        return float(re.sub(r"[.,]", "", digits))
    return float(digits.replace(",", "."))


def _form(symbols: LanguageSymbols, number: str, forms: Forms) -> str:
    if symbols.no_plural:
        return forms[0]
    size = abs(_value(number))
    return forms[0] if size == 1 or (symbols.singular_below_2 and size < 2) else forms[1]


@dataclass(frozen=True)
class _Patterns:
    unit_after: re.Pattern[str]
    currency_before: re.Pattern[str]
    currency_after: re.Pattern[str]


def _patterns(symbols: LanguageSymbols) -> _Patterns:
    units, currencies = _alternatives(list(symbols.units)), _alternatives(list(symbols.currencies))
    # A unit must end there: "5 m" but not "5 manzanas".
    return _Patterns(
        re.compile(rf"{_NOT_AFTER}({_NUMBER}){_SPACE}?({units}){_NOT_BEFORE_LETTER}"),
        re.compile(rf"{_NOT_AFTER}({currencies}){_SPACE}?({_NUMBER})(?!\d)"),
        re.compile(rf"{_NOT_AFTER}({_NUMBER}){_SPACE}?({currencies})"),
    )


_PATTERNS = {code: _patterns(symbols) for code, symbols in SYMBOLS.items()}


_SAID_LATER = {
    code: frozenset(ch for written in (*symbols.units, *symbols.currencies) for ch in written if not ch.isalnum())
    for code, symbols in SYMBOLS.items()
}


def symbols_said_later(language: str) -> frozenset[str]:
    """The symbols (%, €, °...) ``symbols_spoken`` says in ``language``: the front-end keeps them for it."""
    return _SAID_LATER.get(language, frozenset())


def symbols_spoken(text: str, language: str) -> str:
    """``text`` with clock times, units, currencies and signs in ``language``'s words (unchanged for a language
    not in ``SYMBOLS``)."""
    symbols = SYMBOLS.get(language)
    if symbols is None:
        return text
    patterns = _PATTERNS[language]

    def clock(match: re.Match[str]) -> str:
        return symbols.clock(int(match.group(1)), int(match.group(2) or 0))

    if language == "f":
        text = _FRENCH_CLOCK.sub(clock, text)
    text = _CLOCK.sub(clock, text)
    join = symbols.joiner
    text = patterns.currency_before.sub(
        lambda m: f"{m.group(2)}{join}{_form(symbols, m.group(2), symbols.currencies[m.group(1)])}", text
    )
    text = patterns.currency_after.sub(
        lambda m: f"{m.group(1)}{join}{_form(symbols, m.group(1), symbols.currencies[m.group(2)])}", text
    )
    text = patterns.unit_after.sub(
        lambda m: f"{m.group(1)}{join}{_form(symbols, m.group(1), symbols.units[m.group(2)])}", text
    )
    if language == "h":  # "7:45 बजे" as Hindi writes it: the clock's words already say बजे/मिनट
        text = _HINDI_DOUBLE_BAJE.sub(r"\1", text)
    return text if symbols.minus is None else _SIGN.sub(f"{symbols.minus}{join}", text)
