"""Each non-English language's words for what stands around its numbers: signs, units, currencies, clock times,
dates, the decimal mark, and the speller of its numbers. Data only; ``spoken_languages`` applies it.

espeak-ng (es/fr/hi/it/pt) and misaki's Japanese and Mandarin G2P read a number's digits but not what stands around
it (``-5 °C`` was "cinco grados C" in Spanish, ``3 km`` "tres ka eme", ``20 €`` "veinte"), nor grouped thousands and
decimal commas the way each language writes them (``1.250,00 €``, ``3,000円``, ``₹1,25,000``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from voicedesk.engine.text.frontend.number_words import chinese, hindi, spelled_by_num2words


class Noun(NamedTuple):
    one: str
    """After one (in French, below two)."""
    many: str
    feminine: bool = False
    """"una libra", "une livre", "duas libras": the number before it agrees."""
    cent: str = ""
    """A currency's hundredth, said after the cents when the language names it ("50 पैसे", "50セント")."""


def _same(word: str, cent: str = "") -> Noun:
    return Noun(word, word, cent=cent)


@dataclass(frozen=True)
class LanguageSymbols:
    spell: Callable[[int], str]
    """A whole number in words (Japanese: its digits, which Open JTalk reads with their counter at the end)."""
    minus: str
    plus: str
    marks: dict[str, str]
    """What the decimal point or comma is called inside a number ("coma", "virgule", "दशमलव")."""
    decimal_comma: bool
    """``3,5`` is a decimal and ``1.000`` a thousand (es/fr/it/pt); else ``3,000`` is a thousand."""
    units: dict[str, Noun]
    currencies: dict[str, Noun]
    price: str
    """How "3,20 €" is said: ``{amount} {currency}`` then ``{cents}`` (and the hundredth's name, ``{cent}``), or
    the amount as a decimal number (``{decimal}``)."""
    clock: Callable[[int, int], str]
    date: Callable[[str, int, str], str]
    """Day (digits), month (1-12), year (digits) → the date as the language says it."""
    hour_forms: dict[int, str] = field(default_factory=dict)
    masculine: dict[str, str] = field(default_factory=dict)
    feminine: dict[str, str] = field(default_factory=dict)
    """The last word of a number before a noun of that gender ("uno" → "un kilómetro", "una libra")."""
    singular_below_2: bool = False
    joiner: str = " "
    """Between a number and its word: none in Japanese and Mandarin, which write no spaces."""
    fraction_as_number: bool = True
    """``3,25`` said "tres coma veinticinco"; else digit by digit (Hindi, Mandarin: "दशमलव दो पाँच")."""
    space_groups: bool = False
    """French groups thousands with a plain space too ("12 500")."""


def _hour(code: str, hour: int) -> str:
    return SYMBOLS[code].hour_forms.get(hour, str(hour))


def _months(names: str) -> tuple[str, ...]:
    return tuple(names.split())


MONTHS = {
    "e": _months("enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre"),
    "f": _months("janvier février mars avril mai juin juillet août septembre octobre novembre décembre"),
    "i": _months("gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre dicembre"),
    "p": _months("janeiro fevereiro março abril maio junho julho agosto setembro outubro novembro dezembro"),
    "h": _months("जनवरी फ़रवरी मार्च अप्रैल मई जून जुलाई अगस्त सितंबर अक्टूबर नवंबर दिसंबर"),
}

SPANISH_UNITS = {
    "km/h": Noun("kilómetro por hora", "kilómetros por hora"),
    "kWh": Noun("kilovatio hora", "kilovatios hora"),
    "km": Noun("kilómetro", "kilómetros"),
    "cm": Noun("centímetro", "centímetros"),
    "kg": Noun("kilogramo", "kilogramos"),
    "m": Noun("metro", "metros"),
    "g": Noun("gramo", "gramos"),
    "l": Noun("litro", "litros"),
    "W": Noun("vatio", "vatios"),
    "°C": Noun("grado Celsius", "grados Celsius"),
    "°F": Noun("grado Fahrenheit", "grados Fahrenheit"),
    "°": Noun("grado", "grados"),
    "%": _same("por ciento"),
}

SYMBOLS: dict[str, LanguageSymbols] = {
    "e": LanguageSymbols(
        spell=spelled_by_num2words("es"),
        minus="menos",
        plus="más",
        marks={",": "coma", ".": "punto"},
        decimal_comma=True,
        units=SPANISH_UNITS,
        currencies={
            "€": Noun("euro", "euros"),
            "$": Noun("dólar", "dólares"),
            "£": Noun("libra", "libras", feminine=True),
        },
        price="{amount} {currency} con {cents}",
        clock=lambda hour, minute: f"{_hour('e', hour)} y {minute}" if minute else _hour("e", hour),
        date=lambda day, month, year: f"{day} de {MONTHS['e'][month - 1]} de {year}",
        hour_forms={1: "una", 21: "veintiuna"},
        masculine={"uno": "un", "veintiuno": "veintiún"},
        feminine={"uno": "una", "veintiuno": "veintiuna"},
    ),
    "f": LanguageSymbols(
        spell=spelled_by_num2words("fr"),
        minus="moins",
        plus="plus",
        marks={",": "virgule", ".": "point"},
        decimal_comma=True,
        units={
            "km/h": Noun("kilomètre par heure", "kilomètres par heure"),
            "kWh": Noun("kilowattheure", "kilowattheures"),
            "km": Noun("kilomètre", "kilomètres"),
            "cm": Noun("centimètre", "centimètres"),
            "kg": Noun("kilogramme", "kilogrammes"),
            "m": Noun("mètre", "mètres"),
            "g": Noun("gramme", "grammes"),
            "l": Noun("litre", "litres"),
            "W": Noun("watt", "watts"),
            "°C": Noun("degré Celsius", "degrés Celsius"),
            "°F": Noun("degré Fahrenheit", "degrés Fahrenheit"),
            "°": Noun("degré", "degrés"),
            "%": _same("pour cent"),
        },
        currencies={
            "€": Noun("euro", "euros"),
            "$": Noun("dollar", "dollars"),
            "£": Noun("livre", "livres", feminine=True),
        },
        price="{amount} {currency} {cents}",
        clock=lambda hour, minute: (
            f"{_hour('f', hour)} {'heure' if hour <= 1 else 'heures'}" + (f" {minute}" if minute else "")
        ),
        date=lambda day, month, year: f"{'premier' if day == '1' else day} {MONTHS['f'][month - 1]} {year}",
        hour_forms={1: "une", 21: "vingt et une"},
        feminine={"un": "une"},
        singular_below_2=True,
        space_groups=True,
    ),
    "i": LanguageSymbols(
        spell=spelled_by_num2words("it"),
        minus="meno",
        plus="più",
        marks={",": "virgola", ".": "punto"},
        decimal_comma=True,
        units={
            "km/h": Noun("chilometro orario", "chilometri orari"),
            "kWh": _same("chilowattora"),
            "km": Noun("chilometro", "chilometri"),
            "cm": Noun("centimetro", "centimetri"),
            "kg": Noun("chilogrammo", "chilogrammi"),
            "m": Noun("metro", "metri"),
            "g": Noun("grammo", "grammi"),
            "l": Noun("litro", "litri"),
            "W": _same("watt"),
            "°C": Noun("grado Celsius", "gradi Celsius"),
            "°F": Noun("grado Fahrenheit", "gradi Fahrenheit"),
            "°": Noun("grado", "gradi"),
            "%": _same("per cento"),
        },
        currencies={
            "€": _same("euro"),
            "$": Noun("dollaro", "dollari"),
            "£": Noun("sterlina", "sterline", feminine=True),
        },
        price="{amount} {currency} e {cents}",
        clock=lambda hour, minute: f"{_hour('i', hour)} e {minute}" if minute else _hour("i", hour),
        date=lambda day, month, year: f"{'primo' if day == '1' else day} {MONTHS['i'][month - 1]} {year}",
        hour_forms={1: "una"},
        masculine={"uno": "un"},
        feminine={"uno": "una"},
    ),
    "p": LanguageSymbols(
        spell=spelled_by_num2words("pt_BR"),
        minus="menos",
        plus="mais",
        marks={",": "vírgula", ".": "ponto"},
        decimal_comma=True,
        units={
            "km/h": Noun("quilômetro por hora", "quilômetros por hora"),
            "kWh": Noun("quilowatt-hora", "quilowatts-hora"),
            "km": Noun("quilômetro", "quilômetros"),
            "cm": Noun("centímetro", "centímetros"),
            "kg": Noun("quilograma", "quilogramas"),
            "m": Noun("metro", "metros"),
            "g": Noun("grama", "gramas"),
            "l": Noun("litro", "litros"),
            "W": Noun("watt", "watts"),
            "°C": Noun("grau Celsius", "graus Celsius"),
            "°F": Noun("grau Fahrenheit", "graus Fahrenheit"),
            "°": Noun("grau", "graus"),
            "%": _same("por cento"),
        },
        currencies={
            "R$": Noun("real", "reais", cent="centavos"),
            "€": Noun("euro", "euros"),
            "$": Noun("dólar", "dólares"),
            "£": Noun("libra", "libras", feminine=True),
        },
        price="{amount} {currency} e {cents} {cent}",
        clock=lambda hour, minute: (
            f"{_hour('p', hour)} {'hora' if hour == 1 else 'horas'}" + (f" e {minute}" if minute else "")
        ),
        date=lambda day, month, year: f"{'primeiro' if day == '1' else day} de {MONTHS['p'][month - 1]} de {year}",
        hour_forms={1: "uma", 2: "duas", 21: "vinte e uma", 22: "vinte e duas"},
        feminine={"um": "uma", "dois": "duas"},
    ),
    "h": LanguageSymbols(
        spell=hindi,
        minus="माइनस",
        plus="प्लस",
        marks={".": "दशमलव", ",": "दशमलव"},
        decimal_comma=False,
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
        currencies={
            "₹": Noun("रुपया", "रुपये", cent="पैसे"),
            "€": _same("यूरो", "सेंट"),
            "$": _same("डॉलर", "सेंट"),
            "£": _same("पाउंड", "पेंस"),
        },
        price="{amount} {currency} {cents} {cent}",
        clock=lambda hour, minute: f"{hour} बजकर {minute} मिनट" if minute else f"{hour} बजे",
        date=lambda day, month, year: f"{day} {MONTHS['h'][month - 1]} {year}",
        fraction_as_number=False,
    ),
    "j": LanguageSymbols(
        spell=str,
        minus="マイナス",
        plus="プラス",
        marks={".": ".", ",": "."},
        decimal_comma=False,
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
            "€": _same("ユーロ", "セント"),
            "$": _same("ドル", "セント"),
            "£": _same("ポンド", "ペンス"),
        },
        price="{amount}{currency}{cents}{cent}",
        clock=lambda hour, minute: f"{hour}時{minute}分" if minute else f"{hour}時",
        date=lambda day, month, year: f"{year}年{month}月{day}日",
        joiner="",
        fraction_as_number=False,
    ),
    "z": LanguageSymbols(
        spell=chinese,
        minus="负",
        plus="正",
        marks={".": "点", ",": "点"},
        decimal_comma=False,
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
            "%": _same("百分之{}"),
            "％": _same("百分之{}"),
        },
        currencies={"¥": _same("元"), "￥": _same("元"), "€": _same("欧元"), "$": _same("美元"), "£": _same("英镑")},
        price="{decimal}{currency}",  # yuan: 元, 角, 分 (``spoken_languages``)
        clock=lambda hour, minute: f"{hour}点{minute}分" if minute else f"{hour}点",
        date=lambda day, month, year: f"{year}年{month}月{day}日",
        joiner="",
        fraction_as_number=False,
    ),
}
"""Kokoro language code → its words around numbers (English has its own front-end)."""

_SAID_LATER = {
    code: frozenset(ch for written in (*symbols.units, *symbols.currencies) for ch in written if not ch.isalnum())
    for code, symbols in SYMBOLS.items()
}


def symbols_said_later(language: str) -> frozenset[str]:
    """The symbols (%, €, °...) ``spoken_languages`` says in ``language``: the front-end keeps them for it."""
    return _SAID_LATER.get(language, frozenset())
