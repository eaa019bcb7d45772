"""Our English rules around NeMo: ``PRE_RULES`` rewrite what NeMo reads wrong into what it reads right, on the same
stretch; ``WORDS`` respells words misaki misreads."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from voicedesk.engine.text.frontend.settings import TextSettings

Replace = Callable[[re.Match[str], str, TextSettings], str]
"""``(match, language, settings)`` → replacement (the match itself when the rule does not apply after all)."""


@dataclass(frozen=True, slots=True)
class PreRule:
    name: str
    pattern: re.Pattern[str]
    replace: Replace


URL_END = r"[^\s<>\"]*[^\s<>\".,;:!?)\]}'’”]"
URL = re.compile(
    rf"(?:https?://|www\.){URL_END}"
    # a host without scheme is a link when a path follows it (``github.com/user/repo``)
    rf"|(?<![\w@/.-])[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)*\.[a-z]{{2,}}(?::\d+)?/{URL_END}",
    re.IGNORECASE,
)
HOST = re.compile(r"[A-Za-z0-9][\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}")
"""A bare host or file name (``docs.example.org``, ``notes.txt``): NeMo reads it with "dot"."""
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
URL_PATH_SEGMENTS = 2
URL_WORD = re.compile(r"[A-Za-z][A-Za-z-]{0,19}")
"""A path segment a person reads out: a short word (hyphens allowed, NeMo says "dash")."""
MONTHS = "January February March April May June July August September October November December".split()
NUMBER = r"\d(?:[\d,]*\d)?(?:\.\d+)?"


def _url(match: re.Match[str], _language: str, settings: TextSettings) -> str:
    """The way a person reads a link out: the host without scheme, ``www.`` or port, then at most
    ``URL_PATH_SEGMENTS`` short-word path segments; never the query or the fragment."""
    if settings.urls == "skip":
        return ""
    written = match.group(0)
    parts = urlsplit(written if "://" in written else "//" + written)
    host = (parts.hostname or "").removeprefix("www.")
    said = [host]
    for segment in [s for s in parts.path.split("/") if s][:URL_PATH_SEGMENTS]:
        if not URL_WORD.fullmatch(segment):
            break
        said.append(segment.lower())
    return "/".join(said) if host else written


def _phone(match: re.Match[str], _language: str, _settings: TextSettings) -> str:
    """Digit by digit, a pause between groups (NeMo reads ``555-0123`` as a number with a dash)."""
    groups = [g for g in re.split(r"[^\d+]+", match.group(0)) if g.strip("+")]
    return ", ".join(("plus " if g.startswith("+") else "") + " ".join(g.lstrip("+")) for g in groups)


def _slash_date(match: re.Match[str], language: str, _settings: TextSettings) -> str:
    """What NeMo misses of ``12/03``: month and day without a year (``1/2`` stays a fraction) and British
    day-first dates; an American date with a year is NeMo's."""
    first, second, year = match.group(1), match.group(2), match.group(3)
    if (year is None and not (len(first) == len(second) == 2)) or (year is not None and language != "b"):
        return match.group(0)
    month, day = (int(first), int(second)) if language == "a" else (int(second), int(first))
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return match.group(0)
    said = f"{MONTHS[month - 1]} {day}" if language == "a" else f"{day} {MONTHS[month - 1]}"
    return f"{said} {year}" if year else said


UNIT_WORDS = re.compile(r"[a-z]{3,}")
"""After a range, a word NeMo does not take for a unit (``5-7 days``); ``kg`` and ``°C`` ranges are NeMo's."""


def _range(match: re.Match[str], _language: str, _settings: TextSettings) -> str:
    """``10-20`` is "ten to twenty" when it reads like a range: rising, numbers of like size, and nothing NeMo
    reads better after it (a unit, an ``=``). Codes (``978-0``, ``1-8090``) and arithmetic stay NeMo's."""
    low, high, after = match.group(1), match.group(2), match.group(3)
    whole_low, whole_high = low.split(".")[0].replace(",", ""), high.split(".")[0].replace(",", "")
    rising = float(low.replace(",", "")) < float(high.replace(",", ""))
    if not rising or abs(len(whole_low) - len(whole_high)) > 1:
        return match.group(0)
    if after and not (after[0] in ".,;:!?)" or UNIT_WORDS.fullmatch(after.strip().rstrip(".,;:!?)"))):
        return match.group(0)
    return f"{low} to {high}{after}"


UNITS = {
    "km/h": ("kilometer per hour", "kilometers per hour"),
    "kph": ("kilometer per hour", "kilometers per hour"),
    "kWh": ("kilowatt hour", "kilowatt hours"),
    "Wh": ("watt hour", "watt hours"),
    "W": ("watt", "watts"),
    "dB": ("decibel", "decibels"),
    "ppm": ("part per million", "parts per million"),
    "L": ("liter", "liters"),
    "mins": ("minute", "minutes"),
    "hrs": ("hour", "hours"),
    "secs": ("second", "seconds"),
    "m": ("meter", "meters"),
    "h": ("hour", "hours"),
    "V": ("volt", "volts"),
}
"""Units NeMo leaves as letters (``20 km/h`` is "kilometers per H", ``60 dB`` "D B")."""


def _said(number: str, forms: tuple[str, str]) -> str:
    return f"{number} {forms[0] if number == '1' else forms[1]}"


def _unit(match: re.Match[str], _language: str, _settings: TextSettings) -> str:
    return _said(match.group(1), UNITS[match.group(2)])


def _duration(match: re.Match[str], _language: str, _settings: TextSettings) -> str:
    """``1h 20m`` and ``2h30``: the m after hours is minutes, never meters."""
    hours, minutes, unit = match.group(1), match.group(2), match.group(3)
    said = _said(hours, UNITS["h"])
    return f"{said} {_said(minutes, ('minute', 'minutes')) if unit else minutes}"


def _version(match: re.Match[str], _language: str, _settings: TextSettings) -> str:
    """``v2.3.1``, ``version 1.12``, ``2.3.1``: numbers joined by "point", each said whole ("one point twelve")."""
    cue, number = match.group("cue") or "", match.group("number") or match.group("bare")
    if not cue and any(len(p) > 3 or (len(p) > 1 and p[0] == "0") for p in number.split(".")):
        return match.group(0)  # a date (``15.01.2020``), not a version
    said = " point ".join(number.split("."))
    return f"version {said}" if cue in ("v", "V") else f"{cue}{said}"


ROMAN_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50}
ROMAN = r"(?=[IVXL])(?:XL|L?X{0,3})(?:IX|IV|V?I{0,3})"
ROMAN_CUES = (
    "chapter part volume book section act scene phase season episode level stage type class article appendix "
    "war grade tier mark"
).split()
"""After these a roman numeral is a number ("Chapter IV" is "Chapter four")."""
REGNAL = (
    "Henry Louis Elizabeth George Edward Charles James William Richard John Mary Victoria Anne Philip Frederick "
    "Peter Catherine Pius Leo Benedict Gregory Clement Innocent Paul Boniface Urban Napoleon Ramesses Sam"
).split()
"""After these it is an ordinal ("Henry VIII" is "Henry the eighth")."""


ROMAN_WORD = re.compile(ROMAN)


def roman_value(numeral: str) -> int:
    values = [ROMAN_VALUES[c] for c in numeral]
    return sum(-v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values))


def _roman(match: re.Match[str], _language: str, _settings: TextSettings) -> str:
    """A roman numeral after a cue word or a name; a single letter (``I``, ``V``, ``X``) only after a cue."""
    word, numeral = match.group(1), match.group(2)
    if word.lower() in ROMAN_CUES:
        return f"{word} {roman_value(numeral)}"
    if len(numeral) < 2 or "L" in numeral or not word[0].isupper():  # "Shirt XL" is a size
        return match.group(0)
    if word in REGNAL:
        return f"{word} the {_ordinal(roman_value(numeral))}"
    return f"{word} {roman_value(numeral)}"


def _ordinal(number: int) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


FORMULAS = {
    f: " ".join(re.findall(r"\d+(?:\.\d+)?|[A-Z]", f))
    for f in "CO2 NO2 SO2 CH4 O3 H2O H2S NH3 O2 N2 H2 PM2.5 PM10".split()
}
FORMULAS["NOx"] = "N O X"
"""Formulas a house's sensors report: letter by letter (NeMo's "NO two" is misaki's "no two")."""

ABBREVIATIONS = {
    "approx.": "approximately",
    "appt.": "appointment",
    "avg.": "average",
    "est.": "estimated",
    "fig.": "figure",
    "incl.": "including",
    "max.": "maximum",
    "misc.": "miscellaneous",
    "temp.": "temperature",
    "tbsp.": "tablespoons",
    "tsp.": "teaspoons",
}
"""Abbreviations NeMo's whitelist lacks (``approx.`` stays "approx")."""


def _table(table: dict[str, str]) -> Replace:
    lowered = {key.lower(): value for key, value in table.items()}
    return lambda match, _language, _settings: lowered.get(match.group(0).lower(), match.group(0))


def _words(table: dict[str, str], flags: int = 0) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(k) for k in sorted(table, key=len, reverse=True))
    return re.compile(rf"(?<![\w.])(?:{alternatives})(?![\w]|\.\d)", flags)


def _to(template: str) -> Replace:
    return lambda match, _language, _settings: match.expand(template)


UNIT = "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True))
BEFORE_WORD = r"(?=\s+[a-z]{3,})"
LOWER_ABBREVIATIONS = {key.lower() for key in ABBREVIATIONS}
PRE_RULES: tuple[PreRule, ...] = (
    PreRule("url", URL, _url),
    PreRule("e-mail", EMAIL, lambda m, _l, s: "" if s.urls == "skip" else m.group(0)),
    PreRule(
        "phone number",
        re.compile(
            r"(?<![\w+-])(?:\+\d{1,3}[ .-]?)?(?:\(\d{3}\)\s?|\d{3}[ .-])\d{3}[ .-]\d{4}(?![\d-])"
            r"|(?<![\w/-])\d{3}-\d{4}(?![\d-])"
        ),
        _phone,
    ),
    PreRule("host and port", re.compile(r"(?<![\w/@])([A-Za-z][\w.-]*):(\d{2,5})(?![\w:])"), _to(r"\1 colon \2")),
    PreRule("date d/m", re.compile(r"(?<![\d/])(\d{1,2})/(\d{1,2})(?:/(\d{4}|\d{2}))?(?![\d/])"), _slash_date),
    PreRule(
        "version",
        re.compile(
            r"(?<![\w.])(?:(?P<cue>[vV]|(?:[Vv]ersion|[Ff]irmware|[Rr]elease) )(?P<number>\d+(?:\.\d+)+)"
            r"|(?P<bare>\d+\.\d+\.\d+))(?![\w]|\.\d)"
        ),
        _version,
    ),
    PreRule(
        "range",
        re.compile(rf"(?<![\w.,:/=+*×-])({NUMBER})\s?[-–]\s?({NUMBER})((?![\d:/=+*×-])(?:\s?\S+)?)"),
        _range,
    ),
    PreRule("duration", re.compile(r"(?<![\w.])(\d+)\s?h\s?(\d{1,2})\s?(m(?:in)?)?(?![\w])"), _duration),
    PreRule("unit", re.compile(rf"(?<![\w.])({NUMBER})\s?({UNIT})(?![\w/])"), _unit),
    PreRule("times", re.compile(rf"(?<![\w.])(\d+)x{BEFORE_WORD}"), _to(r"\1 times")),
    PreRule("thousands", re.compile(rf"(?<![\w.])(\d+(?:\.\d+)?)k{BEFORE_WORD}"), _to(r"\1 thousand")),
    PreRule("number sign", re.compile(r"#(\d+)"), _to(r"number \1")),
    PreRule("approximately", re.compile(r"~\s?(?=\d)"), _to("approximately ")),
    PreRule("plus or minus", re.compile(r"\s?±\s?"), _to(" plus or minus ")),
    PreRule("minus before money", re.compile(r"(?<![\w.])[-−](?=[$€£¥]\d)"), _to("minus ")),
    PreRule("formula", _words(FORMULAS), _table(FORMULAS)),
    PreRule("abbreviation", _words(ABBREVIATIONS, re.IGNORECASE), _table(ABBREVIATIONS)),
    PreRule("roman numeral", re.compile(rf"\b([A-Za-z]+) ({ROMAN})\b(?!['’\w])"), _roman),
)


def needs_rule(core: str, previous: str) -> bool:
    """Words without digits or symbols that a rule here reads: a formula, an abbreviation, a roman numeral."""
    if core in FORMULAS or core.lower() in LOWER_ABBREVIATIONS or core.lower() + "." in LOWER_ABBREVIATIONS:
        return True
    if not ROMAN_WORD.fullmatch(core):
        return False
    return previous.lower() in ROMAN_CUES or (len(core) > 1 and previous[:1].isupper())


WORDS = {
    "how're": "how are",
    "what're": "what are",
    "where're": "where are",
    "when're": "when are",
    "who're": "who are",
    "why're": "why are",
    "there're": "there are",
    "theyre": "they're",
    "youre": "you're",
    "theyve": "they've",
    "theyll": "they'll",
    "youll": "you'll",
    "itll": "it'll",
    "thatll": "that'll",
    "im": "I'm",
}
"""Words misaki misreads ("how're" is "how R A"), respelled as it reads them right."""
