"""The SSML subset a client may send, parsed with defusedxml (no entity expansion); anything else is refused with a
``bad_text`` error saying what, never skipped silently."""

from __future__ import annotations

import re
from xml.etree.ElementTree import Element, ParseError

from voicedesk.engine.errors import ErrorCode, VoicedeskError
from voicedesk.engine.text.frontend.lexicon import LEXICON_PHONEMES
from voicedesk.engine.text.frontend.markup import plain_units
from voicedesk.engine.text.frontend.settings import TextSettings
from voicedesk.engine.text.frontend.spoken import PHONEMES, SPOKEN, TEXT, Change, Unit, words_with_spans

SSML_ADVICE = (
    "Supported: <speak>, <p>, <s>, <break time='300ms'|strength=...>, <say-as interpret-as='characters|digits|"
    "telephone|date|time'>, <sub alias='...'>, <phoneme alphabet='ipa' ph='...'>, <prosody rate='slow|fast|80%'>."
)
RATES = {"x-slow": 0.5, "slow": 0.75, "medium": 1.0, "default": 1.0, "fast": 1.25, "x-fast": 1.5}
BREAK_STRENGTHS = {"none": 0.0, "x-weak": 0.1, "weak": 0.2, "medium": 0.35, "strong": 0.6, "x-strong": 1.0}
MAX_BREAK_S = 5.0
LETTER_A = "ˈA"
"""A spelled-out "A" is the letter, not the article misaki would read."""


class BadText(VoicedeskError):
    """Text that cannot be read as sent (malformed or unsupported SSML)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.BAD_TEXT, message, SSML_ADVICE)


def ssml_units(text: str, settings: TextSettings) -> tuple[list[Unit], list[Change]]:
    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import fromstring

    try:
        root = fromstring(text)
    except ParseError as exc:
        raise BadText(f"The SSML is not well-formed XML ({exc}).") from exc
    except DefusedXmlException as exc:
        raise BadText(f"The SSML uses a forbidden XML feature ({type(exc).__name__}: entities or DTDs).") from exc
    if _local(root.tag) != "speak":
        raise BadText(f"SSML must start with <speak>, not <{_local(root.tag)}>.")
    reader = _Reader(text, settings)
    reader.children(root, rate=1.0)
    return reader.units, reader.changes


def _local(tag: object) -> str:
    return str(tag).rsplit("}", 1)[-1]


class _Reader:
    def __init__(self, source: str, settings: TextSettings) -> None:
        self.source = source
        self.settings = settings
        self.cursor = 0
        self.units: list[Unit] = []
        self.changes: list[Change] = []

    def locate(self, piece: str) -> tuple[int, int]:
        """Where ``piece`` (text of the parsed tree) is in the source, searching on from the last find."""
        at = self.source.find(piece, self.cursor) if piece else -1
        if at < 0:
            return self.cursor, self.cursor
        self.cursor = at + len(piece)
        return at, self.cursor

    def text(self, content: str | None, rate: float) -> None:
        if not content or not content.strip():
            return
        for unit in plain_units(content, 0, self.settings, self.changes):
            start, end = self.locate(content[unit.start : unit.end])
            self.units.append(Unit(unit.text, start, end, unit.kind, unit.phonemes, rate))

    def children(self, element: Element, rate: float) -> None:
        self.text(element.text, rate)
        for child in element:
            self.element(child, rate)
            self.text(child.tail, rate)

    def element(self, element: Element, rate: float) -> None:
        tag = _local(element.tag)
        if tag in ("p", "s", "speak"):
            self.children(element, rate)
            if self.units and not self.units[-1].text.endswith((".", "!", "?")):
                self.units[-1] = self.units[-1].with_text(self.units[-1].text + ".")
        elif tag == "break":
            self.pause(element)
        elif tag == "prosody":
            self.children(element, rate * self.rate(element))
        elif tag == "sub":
            alias = element.get("alias")
            if alias is None or not alias.strip():
                raise BadText("<sub> needs a non-empty alias='...' attribute.")
            start, end = self.element_span(element)
            for word, _s, _e in words_with_spans(alias):
                self.units.append(Unit(word, start, end, TEXT, rate=rate))
            self.changes.append(Change("ssml sub", element.text or "", alias))
        elif tag == "phoneme":
            self.phoneme(element, rate)
        elif tag == "say-as":
            self.say_as(element, rate)
        else:
            raise BadText(f"<{tag}> is not part of the SSML this server reads.")

    def element_span(self, element: Element) -> tuple[int, int]:
        inner = "".join(element.itertext())
        return self.locate(inner.strip()) if inner.strip() else (self.cursor, self.cursor)

    def pause(self, element: Element) -> None:
        time, strength = element.get("time"), element.get("strength")
        if time is not None:
            match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s)\s*", time)
            if not match:
                raise BadText(f"<break time={time!r}>: give a time such as '300ms' or '1.5s'.")
            seconds = float(match.group(1)) / (1000 if match.group(2) == "ms" else 1)
        elif strength is not None:
            if strength not in BREAK_STRENGTHS:
                raise BadText(f"<break strength={strength!r}>: use one of {', '.join(BREAK_STRENGTHS)}.")
            seconds = BREAK_STRENGTHS[strength]
        else:
            seconds = BREAK_STRENGTHS["medium"]
        if seconds > MAX_BREAK_S:
            raise BadText(f"<break> of {seconds:g} s is over the {MAX_BREAK_S:g} s this server pauses for.")
        if self.units and seconds > 0:
            last = self.units[-1]
            self.units[-1] = Unit(
                last.text, last.start, last.end, last.kind, last.phonemes, last.rate, last.pause_after_s + seconds
            )

    def rate(self, element: Element) -> float:
        value = (element.get("rate") or "medium").strip()
        if value in RATES:
            return RATES[value]
        match = re.fullmatch(r"(\d+(?:\.\d+)?)%", value)
        if match and 20 <= float(match.group(1)) <= 400:
            return float(match.group(1)) / 100
        raise BadText(f"<prosody rate={value!r}>: use x-slow, slow, medium, fast, x-fast or a percentage (20%-400%).")

    def phoneme(self, element: Element, rate: float) -> None:
        ph = (element.get("ph") or "").strip()
        alphabet = element.get("alphabet", "ipa")
        if alphabet != "ipa":
            raise BadText(f"<phoneme alphabet={alphabet!r}>: only 'ipa' (in Kokoro's symbols) is read.")
        unknown = sorted({ch for ch in ph if ch not in LEXICON_PHONEMES})
        if not ph or unknown:
            what = f"symbols {''.join(unknown)!r} are not in Kokoro's vocabulary" if ph else "ph='...' is empty"
            raise BadText(f"<phoneme ph={ph!r}>: {what}.")
        word = " ".join("".join(element.itertext()).split()) or "x"
        start, end = self.element_span(element)
        self.units.append(Unit(word, start, end, PHONEMES, ph, rate))
        self.changes.append(Change("ssml phoneme", word, ph))

    def say_as(self, element: Element, rate: float) -> None:
        kind = element.get("interpret-as", "")
        content = "".join(element.itertext()).strip()
        start, end = self.element_span(element)
        if kind in ("characters", "spell-out", "verbatim"):
            for ch in content:
                if ch.isalnum():
                    upper = ch.upper()
                    if upper == "A":
                        self.units.append(Unit("A", start, end, PHONEMES, LETTER_A, rate))
                    else:
                        self.units.append(Unit(upper, start, end, TEXT if ch.isdigit() else SPOKEN, rate=rate))
        elif kind == "digits":
            for ch in content:
                if ch.isdigit():
                    self.units.append(Unit(ch, start, end, TEXT, rate=rate))
        elif kind == "telephone":
            groups = [g for g in re.split(r"[^\d+]+", content) if g]
            for index, group in enumerate(groups):
                digits = [d for d in group if d.isdigit()]
                for position, digit in enumerate(digits):
                    last = position == len(digits) - 1 and index < len(groups) - 1
                    self.units.append(Unit(digit + ("," if last else ""), start, end, TEXT, rate=rate))
        elif kind in ("date", "time", "cardinal", "ordinal", "number"):
            text = content
            if kind == "date":
                text = _ssml_date(content, element.get("format", ""))
            elif kind == "ordinal" and content.isdigit():
                text = content + _ordinal_suffix(int(content))
            for word, _s, _e in words_with_spans(text):
                self.units.append(Unit(word, start, end, TEXT, rate=rate))
        else:
            raise BadText(
                f"<say-as interpret-as={kind!r}>: use characters, digits, telephone, date, time, cardinal or ordinal."
            )
        self.changes.append(Change(f"ssml say-as {kind}", content, " ".join(u.text for u in self.units[-3:])))


def _ordinal_suffix(number: int) -> str:
    if 10 <= number % 100 <= 20:
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")


def _ssml_date(content: str, fmt: str) -> str:
    """A date in the order ``format`` names (mdy, dmy, ymd, md, dm, ...) as ISO or "Month D" text for the spoken
    form; without a format it is read as written."""
    parts = [p for p in re.split(r"[^\d]+", content) if p]
    fmt = fmt.lower()
    if not fmt or len(parts) != len(fmt) or not all(p.isdigit() for p in parts):
        return content
    values = dict(zip(fmt, (int(p) for p in parts), strict=True))
    month, day, year = values.get("m"), values.get("d"), values.get("y")
    if (month is not None and not 1 <= month <= 12) or (day is not None and not 1 <= day <= 31):
        raise BadText(f"<say-as interpret-as='date' format={fmt!r}>: {content!r} is not a date in that order.")
    if year is not None and month is not None and day is not None:
        return f"{year:04d}-{month:02d}-{day:02d}"
    names = "January February March April May June July August September October November December".split()
    if month is not None and day is not None:
        return f"{names[month - 1]} {day}"
    if month is not None and year is not None:
        return f"{names[month - 1]} {year}"
    return content
