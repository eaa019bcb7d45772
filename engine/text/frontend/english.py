"""The spoken form of English text (American and British voices): NVIDIA NeMo's WFST normalizer does the work;
the few things it misses are small pre-rules applied to the same stretch of text just before it.

Only the stretches that need it go through NeMo: a word needs it when it holds a digit or a symbol, is a URL or an
e-mail address, or is in NeMo's own TTS whitelist (``Dr.``, ``Mar.``, ``vs.``...). Each such word is normalized with
one word of context on either side (``at 3:07 PM``, ``Mar. 17``), so most agent sentences cost nothing here and the
rest cost a short NeMo call per stretch; the context words NeMo leaves unchanged keep their own span.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from voicedesk.engine.text.frontend.settings import TextSettings
from voicedesk.engine.text.frontend.spoken import SPOKEN, TEXT, Change, Unit, strip_punctuation

log = logging.getLogger(__name__)

Normalize = Callable[[str], str]
"""NeMo's ``Normalizer.normalize`` (bound with its options): written English in, spoken English out."""

NEEDS_NORMALIZING = re.compile(r"[0-9%$€£¥°&+×=@#~<>^|\\*/]")
URL_END = r"[^\s<>\"]*[^\s<>\".,;:!?)\]}'’”]"
URL = re.compile(
    rf"(?:https?://|www\.){URL_END}"
    # a host without scheme is a link when a path follows it (``github.com/user/repo``; ``example.com`` alone is
    # NeMo's to read)
    rf"|(?<![\w@/.-])[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)*\.[a-z]{{2,}}(?::\d+)?/{URL_END}",
    re.IGNORECASE,
)
URL_PATH_SEGMENTS = 2
URL_WORD = re.compile(r"[A-Za-z][A-Za-z-]{0,19}")
"""A path segment a person reads out: a short word (hyphens allowed, NeMo says "dash")."""
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
ENDS_SENTENCE = (".", "!", "?", "…")
MONTHS = "January February March April May June July August September October November December".split()


@dataclass(frozen=True, slots=True)
class PreRule:
    name: str
    pattern: re.Pattern[str]
    replace: Callable[[re.Match[str], str, TextSettings], str]
    """``(match, language, settings)`` → replacement (the match itself when the rule does not apply after all)."""


def _url(match: re.Match[str], _language: str, settings: TextSettings) -> str:
    """The way a person reads a link out: the host without scheme, ``www.`` or port, then at most
    ``URL_PATH_SEGMENTS`` path segments, stopping at the first that is not a short word (an id, a file name, a
    number); the query and the fragment are never read. NeMo then says ``example dot com slash docs``."""
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


def _email(match: re.Match[str], _language: str, settings: TextSettings) -> str:
    return "" if settings.urls == "skip" else match.group(0)


def _phone(match: re.Match[str], _language: str, _settings: TextSettings) -> str:
    """Digit by digit, a pause between groups (NeMo reads ``555-0123`` as a number with a dash)."""
    groups = [g for g in re.split(r"[^\d+]+", match.group(0)) if g.strip("+")]
    spoken = [("plus " if g.startswith("+") else "") + " ".join(g.lstrip("+")) for g in groups]
    return ", ".join(spoken)


def _slash_date(match: re.Match[str], language: str, _settings: TextSettings) -> str:
    """``12/03`` is a date when both parts have two digits or a year follows; month first for American voices,
    day first for British ones. ``1/2`` and ``3/4`` stay fractions."""
    first, second, year = match.group(1), match.group(2), match.group(3)
    if year is None and not (len(first) == 2 and len(second) == 2):
        return match.group(0)
    month, day = (int(first), int(second)) if language == "a" else (int(second), int(first))
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return match.group(0)
    text = f"{MONTHS[month - 1]} {day}" if language == "a" else f"{day} {MONTHS[month - 1]}"
    if year is not None:
        text += f" {int(year) + 2000 if len(year) == 2 else int(year)}"
    return text


def _range(match: re.Match[str], _language: str, _settings: TextSettings) -> str:
    return f"{match.group(1)} to {match.group(2)}"


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
}


def _unit(match: re.Match[str], _language: str, _settings: TextSettings) -> str:
    number, symbol = match.group(1), match.group(2)
    singular, plural = UNITS[symbol]
    return f"{number} {singular if number == '1' else plural}"


def _times(match: re.Match[str], _language: str, _settings: TextSettings) -> str:
    return f"{match.group(1)} times {match.group(2)}"


def _approximately(_match: re.Match[str], _language: str, _settings: TextSettings) -> str:
    return "approximately "


def _number_sign(match: re.Match[str], _language: str, _settings: TextSettings) -> str:
    return f"number {match.group(1)}"


NUMBER = r"\d(?:[\d,]*\d)?(?:\.\d+)?"
PRE_RULES: tuple[PreRule, ...] = (
    PreRule("url", URL, _url),
    PreRule("e-mail", EMAIL, _email),
    PreRule(
        "phone number",
        re.compile(
            r"(?<![\w+-])(?:\+\d{1,3}[ .-]?)?(?:\(\d{3}\)\s?|\d{3}[ .-])\d{3}[ .-]\d{4}(?![\d-])"
            r"|(?<![\w/-])\d{3}-\d{4}(?![\d-])"
        ),
        _phone,
    ),
    PreRule("date d/m", re.compile(r"(?<![\d/])(\d{1,2})/(\d{1,2})(?:/(\d{4}|\d{2}))?(?![\d/])"), _slash_date),
    PreRule("range", re.compile(rf"(?<![\d.,:/-])({NUMBER})\s?[-–]\s?({NUMBER})(?![\d:/-])"), _range),
    PreRule(
        "unit",
        re.compile(rf"({NUMBER})\s?({'|'.join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True))})(?![\w/])"),
        _unit,
    ),
    PreRule("times", re.compile(rf"({NUMBER})\s?[×x]\s?({NUMBER})(?![\w])"), _times),
    PreRule("number sign", re.compile(r"#(\d+)"), _number_sign),
    PreRule("approximately", re.compile(r"~\s?(?=\d)"), _approximately),
)


class EnglishSpokenForm:
    """Rewrites the TEXT units of one chunk into their spoken form (a ``SpokenForm`` of the front-end's registry)."""

    def __init__(
        self, normalize: Normalize | None, whitelist: frozenset[str] = frozenset(), normalizer_name: str = "nemo"
    ) -> None:
        self.normalize = normalize
        self.whitelist = whitelist
        self.normalizer_name = normalizer_name
        """How ``--explain`` names the normalizer's changes ("nemo", or the fallback's "basic reader")."""

    def needs(self, word: str) -> bool:
        if NEEDS_NORMALIZING.search(word):
            return True
        _lead, core, _tail = strip_punctuation(word)
        return core in self.whitelist or core + "." in self.whitelist or word in self.whitelist

    def __call__(
        self, units: Sequence[Unit], language: str, settings: TextSettings, changes: list[Change]
    ) -> list[Unit]:
        out: list[Unit] = []
        for group in _text_groups(units):
            if group[0].kind != TEXT:
                out.extend(group)
                continue
            out.extend(self._group(group, language, settings, changes))
        return out

    def _group(self, group: list[Unit], language: str, settings: TextSettings, changes: list[Change]) -> list[Unit]:
        out: list[Unit] = []
        position = 0
        for low, high in self._windows(group):
            out.extend(group[position:low])
            out.extend(self._window(group[low : high + 1], language, settings, changes))
            position = high + 1
        out.extend(group[position:])
        return out

    def _windows(self, group: Sequence[Unit]) -> list[tuple[int, int]]:
        """``[low, high]`` of each stretch that goes to NeMo. Adjacent words that need the normalizer go together;
        each stretch takes one plain word of context on either side (the right one first: units and AM/PM follow
        their number), never one another stretch took."""
        needy = [i for i, u in enumerate(group) if self.needs(u.text)]
        stretches: list[list[int]] = []
        for i in needy:
            if stretches and i == stretches[-1][1] + 1:
                stretches[-1][1] = i
            else:
                stretches.append([i, i])
        windows: list[tuple[int, int]] = []
        taken = set(needy)
        for low, high in stretches:
            if high + 1 < len(group) and high + 1 not in taken:
                taken.add(high + 1)
                high += 1
            if low - 1 >= 0 and low - 1 not in taken:
                taken.add(low - 1)
                low -= 1
            windows.append((low, high))
        return windows

    def warm(self, units: Sequence[Unit], language: str, settings: TextSettings) -> int:
        """Normalizes (into the memo) the stretches of a sentence still arriving that cannot change any more: every
        one but a stretch ending in a word that needs NeMo at the very end (its right-hand context word has not
        arrived), unless that word ends a sentence (``at 20 km/h.``: the likely end, tried while the chunker waits
        for the next token to confirm it; a wasted call if ``Mar.`` goes on). ``units`` are the words received so
        far, a partly typed last word already left out. Returns the number of stretches normalized; the spoken form
        is thrown away: ``__call__`` later finds it remembered."""
        if self.normalize is None:
            return 0
        groups = _text_groups(units)
        done = 0
        for number, group in enumerate(groups):
            if group[0].kind != TEXT:
                continue
            last_group = number == len(groups) - 1
            for low, high in self._windows(group):
                last = group[high].text
                if last_group and high == len(group) - 1 and self.needs(last) and not last.endswith(ENDS_SENTENCE):
                    continue
                self._window(list(group[low : high + 1]), language, settings, [])
                done += 1
        return done

    def _window(self, window: list[Unit], language: str, settings: TextSettings, changes: list[Change]) -> list[Unit]:
        written = " ".join(u.text for u in window)
        text = written
        for rule in PRE_RULES:
            rewritten = rule.pattern.sub(lambda m, rule=rule: rule.replace(m, language, settings), text)
            if rewritten != text:
                changes.append(Change(rule.name, text, rewritten))
                text = rewritten
        if self.normalize is not None and text.strip() and self.needs_nemo(text):
            try:
                spoken = self.normalize(text)
            except Exception as exc:  # a grammar failure must not lose the sentence: read it un-normalized
                log.warning("NeMo could not normalize %r (%s: %s); read as written", text, type(exc).__name__, exc)
                spoken = text
            if spoken != text:
                changes.append(Change(self.normalizer_name, text, spoken))
                text = spoken
        return _align(window, text.split())

    def needs_nemo(self, text: str) -> bool:
        return any(self.needs(word) for word in text.split())


def _text_groups(units: Sequence[Unit]) -> list[list[Unit]]:
    """Runs of TEXT units that share a rate and have no pause inside; every other unit is a group of its own."""
    groups: list[list[Unit]] = []
    for unit in units:
        last = groups[-1] if groups else None
        if (
            last is not None
            and unit.kind == TEXT
            and last[-1].kind == TEXT
            and last[-1].rate == unit.rate
            and last[-1].pause_after_s == 0
        ):
            last.append(unit)
        else:
            groups.append([unit])
    return groups


def _align(window: list[Unit], spoken: list[str]) -> list[Unit]:
    """Spoken words for ``window``: context words that came back unchanged keep their unit (and exact span); the
    rest all point at the span of the source words they replaced."""
    head: list[Unit] = []
    tail: list[Unit] = []
    low, high = 0, len(window)
    first, last = 0, len(spoken)
    while low < high and first < last and spoken[first] == window[low].text:
        head.append(window[low])
        low, first = low + 1, first + 1
    while low < high and first < last and spoken[last - 1] == window[high - 1].text:
        tail.insert(0, window[high - 1])
        high, last = high - 1, last - 1
    middle: list[Unit] = []
    if low < high:
        start, end = window[low].start, window[high - 1].end
        rate, pause = window[high - 1].rate, window[high - 1].pause_after_s
        middle = [Unit(word, start, end, SPOKEN, rate=rate) for word in spoken[first:last]]
        if middle and pause:
            middle[-1] = Unit(middle[-1].text, start, end, SPOKEN, rate=rate, pause_after_s=pause)
    return [*head, *middle, *tail]
