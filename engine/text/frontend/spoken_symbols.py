"""Each non-English language's words for what stands around its numbers (signs, units, currencies, times, dates, the
decimal mark) and its number spellers: espeak-ng and misaki read digits but not these (``3 km`` was "tres ka eme")."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

from num2words import num2words

MAX_SPELLED_DIGITS = 15
"""Longer digit strings (and those with a leading zero) are read digit by digit, as people read codes."""

HINDI_0_99 = """शून्य एक दो तीन चार पाँच छह सात आठ नौ दस ग्यारह बारह तेरह चौदह पंद्रह सोलह सत्रह अठारह उन्नीस बीस इक्कीस
बाईस तेईस चौबीस पच्चीस छब्बीस सत्ताईस अट्ठाईस उनतीस तीस इकतीस बत्तीस तैंतीस चौंतीस पैंतीस छत्तीस सैंतीस अड़तीस उनतालीस
चालीस इकतालीस बयालीस तैंतालीस चवालीस पैंतालीस छियालीस सैंतालीस अड़तालीस उनचास पचास इक्यावन बावन तिरपन चौवन पचपन
छप्पन सत्तावन अट्ठावन उनसठ साठ इकसठ बासठ तिरसठ चौंसठ पैंसठ छियासठ सड़सठ अड़सठ उनहत्तर सत्तर इकहत्तर बहत्तर तिहत्तर
चौहत्तर पचहत्तर छिहत्तर सतहत्तर अठहत्तर उन्यासी अस्सी इक्यासी बयासी तिरासी चौरासी पचासी छियासी सत्तासी अट्ठासी नवासी
नब्बे इक्यानवे बानवे तिरानवे चौरानवे पचानवे छियानवे सत्तानवे अट्ठानवे निन्यानवे""".split()
HINDI_SCALE = ((10**9, "अरब"), (10**7, "करोड़"), (10**5, "लाख"), (1000, "हज़ार"), (100, "सौ"))
CHINESE_DIGITS = "零一二三四五六七八九"


def hindi(number: int) -> str:
    if number < 100:
        return HINDI_0_99[number]
    for size, word in HINDI_SCALE:
        if number >= size:
            high, rest = divmod(number, size)
            said = f"{hindi(high)} {word}"
            return f"{said} {hindi(rest)}" if rest else said
    raise AssertionError(number)  # unreachable: every number of 100 or more has a scale word


def chinese(number: int) -> str:
    import cn2an

    return cn2an.an2cn(str(number))


def spelled_by_num2words(lang: str):
    # num2words' Portuguese writes "mil, duzentos": no comma (a pause) belongs there.
    return lambda number: num2words(number, lang=lang).replace(",", "")


def whole(digits: str, spell) -> str:
    """The words for a run of digits: as one number, or digit by digit (``007``, a 20-digit code)."""
    if len(digits) > MAX_SPELLED_DIGITS or (len(digits) > 1 and digits[0] == "0"):
        return " ".join(spell(int(d)) for d in digits)
    return spell(int(digits))


JAPANESE_NUMBER = re.compile(r"(?:\d+(?:\.\d+)?[\u4e00-\u9fff々ヶ]{0,2})+")
"""A Japanese number with the counters after it (up to two kanji): ``4月1日``, ``8時10分``, ``3000円``."""


@lru_cache(maxsize=1024)
def japanese_reading(written: str) -> str:
    """Open JTalk's reading of a ``JAPANESE_NUMBER`` in katakana (``20日`` ハツカ)."""
    import pyopenjtalk

    return pyopenjtalk.g2p(written, kana=True)


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


UNITS = ("km/h", "kWh", "km", "cm", "kg", "m", "g", "l", "W", "°C", "°F", "°", "%")


def units(words: str, extra: dict[str, Noun] | None = None) -> dict[str, Noun]:
    """``"one|many; …"`` for ``UNITS`` in order (one word: the same after any number; none: not said so)."""
    nouns = {unit: Noun(*(said.strip().split("|") * 2)[:2]) for unit, said in zip(UNITS, words.split(";"), strict=True)}
    return {unit: noun for unit, noun in nouns.items() if noun.one} | (extra or {})


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

SPANISH_UNITS = units(
    "kilómetro por hora|kilómetros por hora; kilovatio hora|kilovatios hora; kilómetro|kilómetros; "
    "centímetro|centímetros; kilogramo|kilogramos; metro|metros; gramo|gramos; litro|litros; vatio|vatios; "
    "grado Celsius|grados Celsius; grado Fahrenheit|grados Fahrenheit; grado|grados; por ciento"
)

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
        units=units(
            "kilomètre par heure|kilomètres par heure; kilowattheure|kilowattheures; kilomètre|kilomètres; "
            "centimètre|centimètres; kilogramme|kilogrammes; mètre|mètres; gramme|grammes; litre|litres; watt|watts; "
            "degré Celsius|degrés Celsius; degré Fahrenheit|degrés Fahrenheit; degré|degrés; pour cent"
        ),
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
        units=units(
            "chilometro orario|chilometri orari; chilowattora; chilometro|chilometri; centimetro|centimetri; "
            "chilogrammo|chilogrammi; metro|metri; grammo|grammi; litro|litri; watt; grado Celsius|gradi Celsius; "
            "grado Fahrenheit|gradi Fahrenheit; grado|gradi; per cento"
        ),
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
        units=units(
            "quilômetro por hora|quilômetros por hora; quilowatt-hora|quilowatts-hora; quilômetro|quilômetros; "
            "centímetro|centímetros; quilograma|quilogramas; metro|metros; grama|gramas; litro|litros; watt|watts; "
            "grau Celsius|graus Celsius; grau Fahrenheit|graus Fahrenheit; grau|graus; por cento"
        ),
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
        units=units(
            "किलोमीटर प्रति घंटा; किलोवाट घंटा; किलोमीटर; सेंटीमीटर; किलोग्राम; मीटर; ग्राम; लीटर; वाट; "
            "डिग्री सेल्सियस; डिग्री फ़ारेनहाइट; डिग्री; प्रतिशत"
        ),
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
        units=units(
            "キロメートル毎時; キロワット時; キロメートル; センチメートル; キログラム; メートル; グラム; リットル; "
            "ワット; 度; 華氏度; 度; パーセント",
            {"℃": _same("度"), "％": _same("パーセント")},
        ),
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
        units=units(
            "公里每小时; 千瓦时; 公里; 厘米; 公斤; 米; 克; 升; 瓦; 摄氏度; 华氏度; 度; 百分之{}",
            {"℃": _same("摄氏度"), "％": _same("百分之{}")},
        ),
        currencies={"¥": _same("元"), "￥": _same("元"), "€": _same("欧元"), "$": _same("美元"), "£": _same("英镑")},
        price="{decimal}{currency}",  # yuan: 元, 角, 分 (``spoken_languages``)
        clock=lambda hour, minute: f"{hour}点{minute}分" if minute else f"{hour}点",
        date=lambda day, month, year: f"{year}年{month}月{day}日",
        joiner="",
        fraction_as_number=False,
    ),
}
"""Kokoro language code → its words around numbers (English has its own front-end)."""
