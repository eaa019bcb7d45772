"""Numbers, and what stands around them, in the words of a non-English voice's language, so no digit or symbol reaches
its G2P (Japanese numbers stay digits for Open JTalk). Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass

from voicedesk.engine.text.frontend.spoken_symbols import CHINESE_DIGITS, SYMBOLS, LanguageSymbols, Noun, whole

_DIGITS = str.maketrans({**{chr(0xFF10 + i): str(i) for i in range(10)}, **{chr(0x966 + i): str(i) for i in range(10)}})
_SPACE = r"[ \u00a0\u202f]"
# Not inside a Latin word or a number ("COVID-19", "v1.2"); Japanese and Mandarin write a number right after a word
# ("気温は-5°C"), so their letters do not count.
_NOT_AFTER = r"(?<![0-9A-Za-z\u00c0-\u024f.,])"
_NOT_BEFORE_LETTER = r"(?![A-Za-z\u00c0-\u024f])"
_SIGN = rf"(?:{_NOT_AFTER}([-−+]))?"
_CLOCK = re.compile(r"(?<![\d:.,])([01]?\d|2[0-3]):([0-5]\d)(?![\d:]|[.,]\d)")
# French writes "7 h 45", "7h45", "18 h": the h is the clock's (a duration "3 h" reads the same).
_FRENCH_CLOCK = re.compile(rf"(?<![\d:.,])([01]?\d|2[0-3]){_SPACE}?h(?:{_SPACE}?([0-5]\d))?(?![\w])")
_DAY_FIRST = re.compile(r"(?<![\d/.-])(\d{1,2})([/.-])(\d{1,2})\2(\d{4})(?![\d/-]|\.\d)")
_YEAR_FIRST = re.compile(r"(?<![\d/.-])(\d{4})([/-])(\d{1,2})\2(\d{1,2})(?![\d/-]|\.\d)")
_CHINESE_YEAR = re.compile(r"(\d{4})(?=年)")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")
_HINDI_DOUBLE_BAJE = re.compile(r"(बजकर \d+ मिनट|\d+ बजे)\s+बजे")


@dataclass(frozen=True)
class _Patterns:
    number: re.Pattern[str]
    unit_after: re.Pattern[str]
    currency_before: re.Pattern[str]
    currency_after: re.Pattern[str]
    lone_symbol: re.Pattern[str]


def _alternatives(symbols) -> str:
    return "|".join(re.escape(s) for s in sorted(symbols, key=len, reverse=True))


def _patterns(symbols: LanguageSymbols) -> _Patterns:
    groups = r"\u00a0\u202f " if symbols.space_groups else r"\u00a0\u202f"
    number = rf"\d+(?:(?:[.,]|[{groups}](?=\d{{3}}(?!\d)))\d+)*"
    units, currencies = _alternatives(symbols.units), _alternatives(symbols.currencies)
    lone = _alternatives(s for s in (*symbols.units, *symbols.currencies) if not s.isalnum())
    return _Patterns(
        re.compile(rf"{_SIGN}(?<![\d.,])({number})"),
        # A unit must end there: "5 m" but not "5 manzanas".
        re.compile(rf"{_SIGN}({number}){_SPACE}?({units}){_NOT_BEFORE_LETTER}"),
        re.compile(rf"{_SIGN}({currencies}){_SPACE}?([-−+])?({number})"),
        re.compile(rf"{_SIGN}({number}){_SPACE}?({currencies})"),
        re.compile(lone),
    )


_PATTERNS = {code: _patterns(symbols) for code, symbols in SYMBOLS.items()}


def parse_number(written: str, decimal_comma: bool) -> tuple[str, str, str] | None:
    """``(whole digits, decimal mark, fraction digits)`` of a number as written; None when no language writes it so
    (``1.2.3``). With both marks the last is decimal; with one, a mark before exactly three digits may be a thousands
    separator."""
    plain = re.sub(_SPACE, "", written)
    marks = re.findall(r"[.,]", plain)
    if not marks:
        return plain, "", ""
    last = marks[-1]
    head, _, tail = plain.rpartition(last)
    thousands = len(tail) == 3 and last != ("," if decimal_comma else ".") and head.strip("0")
    if (len(set(marks)) == 1 and len(marks) > 1) or (len(marks) == 1 and thousands):
        digits = _grouped(plain)
        return None if digits is None else (digits, "", "")
    if marks.count(last) != 1:
        return None
    digits = _grouped(head)
    return None if digits is None else (digits, last, tail)


def _grouped(written: str) -> str | None:
    """The digits of a whole number grouped by one mark, in threes or the Indian way (``1,25,000``); None if not."""
    groups = re.split(r"[.,]", written)
    if len(groups) == 1:
        return written
    inner = {len(g) for g in groups[1:-1]}
    one_mark = len(set(re.findall(r"[.,]", written))) == 1
    if one_mark and 1 <= len(groups[0]) <= 3 and len(groups[-1]) == 3 and (inner <= {3} or inner == {2}):
        return "".join(groups)
    return None


class _Speaker:
    """One language's rewrite of one text."""

    def __init__(self, code: str) -> None:
        self.code = code
        self.symbols = SYMBOLS[code]
        self.patterns = _PATTERNS[code]

    def signed(self, sign: str | None, words: str) -> str:
        if not sign:
            return words
        said = self.symbols.minus if sign in "-−" else self.symbols.plus
        return f"{said}{self.symbols.joiner}{words}"

    def number(self, written: str, noun: Noun | None = None) -> str:
        symbols = self.symbols
        parsed = parse_number(written, symbols.decimal_comma)
        join = symbols.joiner
        if parsed is None:  # "1.2.3": each run, with the mark between
            parts = re.findall(r"\d+|[.,]", written)
            return join.join(symbols.marks.get(p) or whole(p, symbols.spell) for p in parts)
        digits, mark, fraction = parsed
        words = whole(digits, symbols.spell)
        if not fraction and noun is not None:
            forms = symbols.feminine if noun.feminine else symbols.masculine
            head, _, last = words.rpartition(" ")
            words = f"{head} {forms[last]}".strip() if last in forms else words
        if not fraction:
            return words
        if symbols.fraction_as_number and len(fraction) <= 2 and fraction[0] != "0":
            said = whole(fraction, symbols.spell)
        else:
            said = join.join(symbols.spell(int(d)) for d in fraction)
        return f"{words}{join}{symbols.marks[mark]}{join}{said}"

    def counted(self, sign: str | None, written: str, noun: Noun) -> str:
        """A number and the noun it counts, in the noun's number ("1 kilómetro", "1,5 kilomètre", "2 metros")."""
        parsed = parse_number(written, self.symbols.decimal_comma)
        value = float(f"{parsed[0]}.{parsed[2] or 0}") if parsed else 2.0
        one = value == 1 or (self.symbols.singular_below_2 and value < 2)
        said = self.signed(sign, self.number(written, noun))
        word = noun.one if one else noun.many
        if "{}" in word:  # Mandarin says the percent first: 百分之七十二
            return word.format(said)
        return f"{said}{self.symbols.joiner}{word}"

    def price(self, sign: str | None, written: str, currency: Noun) -> str:
        parsed = parse_number(written, self.symbols.decimal_comma)
        if parsed is None or len(parsed[2]) != 2:
            return self.counted(sign, written, currency)
        digits, _mark, cents = parsed
        if cents == "00":
            return self.counted(sign, digits, currency)
        amount = self.signed(sign, self.number(digits, currency))
        if self.code == "z" and currency.one == "元":  # 八元六角, 八元零五分
            jiao, fen = (self.symbols.spell(int(d)) for d in cents)
            said = f"{amount}元" + (f"{jiao}角" if cents[0] != "0" else "")
            return said + (("零" if cents[0] == "0" else "") + f"{fen}分" if cents[1] != "0" else "")
        word = currency.one if digits == "1" else currency.many
        return self.symbols.price.format(
            amount=amount,
            currency=word,
            cents=self.number(cents.lstrip("0")),
            cent=currency.cent,
            decimal=self.signed(sign, self.number(written)),
        ).strip()

    def loose_number(self, match: re.Match[str]) -> str:
        """A number on its own, apart from a Latin word it is written against ("A4", "3x")."""
        text, start, end = match.string, match.start(), match.end()
        said = self.signed(match.group(1), self.number(match.group(2)))
        return (
            (" " if _LATIN.match(text, start - 1) and start else "") + said + (" " if _LATIN.match(text, end) else "")
        )

    def date(self, day: str, month: str, year: str) -> str | None:
        if not (1 <= int(month) <= 12 and 1 <= int(day) <= 31):
            return None
        return self.symbols.date(str(int(day)), int(month), year)

    def __call__(self, text: str) -> str:
        symbols, patterns = self.symbols, self.patterns
        text = text.translate(_DIGITS)

        def day_first(m: re.Match[str]) -> str:
            first, second = m.group(1), m.group(3)
            day, month = (second, first) if int(second) > 12 >= int(first) else (first, second)  # 03/15/2025
            return self.date(day, month, m.group(4)) or m.group()

        text = _DAY_FIRST.sub(day_first, text)
        text = _YEAR_FIRST.sub(lambda m: self.date(m.group(4), m.group(3), m.group(1)) or m.group(), text)

        def clock(m: re.Match[str]) -> str:
            return symbols.clock(int(m.group(1)), int(m.group(2) or 0))

        if self.code == "f":
            text = _FRENCH_CLOCK.sub(clock, text)
        text = _CLOCK.sub(clock, text)
        if self.code == "h":  # "7:45 बजे" as Hindi writes it: the clock's words already say बजे/मिनट
            text = _HINDI_DOUBLE_BAJE.sub(r"\1", text)
        currencies = symbols.currencies
        text = patterns.currency_before.sub(
            lambda m: self.price(m.group(1) or m.group(3), m.group(4), currencies[m.group(2)]), text
        )
        text = patterns.currency_after.sub(lambda m: self.price(m.group(1), m.group(2), currencies[m.group(3)]), text)
        text = patterns.unit_after.sub(lambda m: self.counted(m.group(1), m.group(2), symbols.units[m.group(3)]), text)
        if self.code == "z":  # years digit by digit: 二零二五年
            text = _CHINESE_YEAR.sub(lambda m: "".join(CHINESE_DIGITS[int(d)] for d in m.group(1)), text)
        text = patterns.number.sub(self.loose_number, text)
        nouns = {**symbols.units, **currencies}
        text = patterns.lone_symbol.sub(lambda m: nouns[m.group()].many.replace("{}", ""), text)
        return text


def spoken_form(text: str, language: str) -> str:
    """``text`` with every number, and the signs, units, currencies, dates and times around them, in the words
    of ``language`` (unchanged for a language without a table: English has its own front-end)."""
    if language not in SYMBOLS:
        return text
    return _Speaker(language)(text)
