"""The spoken form of English: NeMo's WFST normalizer, after our rules (``english_rules``) on the same stretch.

Only needy words go through NeMo, with ``CONTEXT_WORDS`` either side so it sees what decides a reading. Without NeMo's
grammars ``basic_normalize`` reads the commonest numbers and symbols, since misaki alone reads ``-5°C`` as "C"."""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import replace

from num2words import num2words

from voicedesk.engine.text.frontend.english_rules import EMAIL, HOST, PRE_RULES, URL, WORDS, needs_rule
from voicedesk.engine.text.frontend.settings import TextSettings
from voicedesk.engine.text.frontend.spoken import SPOKEN, TEXT, Change, Unit, strip_punctuation

log = logging.getLogger(__name__)

Normalize = Callable[[str], str]
"""NeMo's ``Normalizer.normalize`` (bound with its options): written English in, spoken English out."""

NEEDS_NORMALIZING = re.compile(r"[0-9%$€£¥°&+×=@#~<>^|\\*/±]")
CONTEXT_BEFORE, CONTEXT_WORDS = 4, 4
"""Words of context before and after a needy word: NeMo's longest readings (an address, a date with its weekday,
"100 million kg") span about that many."""
ENDS_SENTENCE = (".", "!", "?", "…")


class EnglishSpokenForm:
    """Rewrites the TEXT units of one chunk into their spoken form (a ``SpokenForm`` of the front-end's registry)."""

    def __init__(
        self, normalize: Normalize | None, whitelist: frozenset[str] = frozenset(), normalizer_name: str = "nemo"
    ) -> None:
        self.normalize = normalize
        self.whitelist = whitelist
        self.normalizer_name = normalizer_name
        """How ``--explain`` names the normalizer's changes ("nemo", or the fallback's "basic reader")."""

    def needs(self, word: str, previous: str = "") -> bool:
        """Whether ``word`` (after ``previous``) goes to NeMo and the rules around it."""
        if NEEDS_NORMALIZING.search(word):
            return True
        _lead, core, _tail = strip_punctuation(word)
        if core in self.whitelist or core + "." in self.whitelist or word in self.whitelist:
            return True
        return bool(HOST.fullmatch(core) or URL.fullmatch(core) or EMAIL.fullmatch(core) or needs_rule(core, previous))

    def needs_nemo(self, text: str) -> bool:
        words = text.split()
        return any(self.needs(word, words[i - 1] if i else "") for i, word in enumerate(words))

    def _needy(self, group: Sequence[Unit]) -> list[int]:
        return [i for i, u in enumerate(group) if self.needs(u.text, group[i - 1].text if i else "")]

    def __call__(
        self, units: Sequence[Unit], language: str, settings: TextSettings, changes: list[Change]
    ) -> list[Unit]:
        out: list[Unit] = []
        for group in _text_groups([_respelled(u, changes) for u in units]):
            if group[0].kind != TEXT:
                out.extend(group)
                continue
            position = 0
            for low, high in self._windows(group):
                out.extend(group[position:low])
                out.extend(self._window(group[low : high + 1], language, settings, changes))
                position = high + 1
            out.extend(group[position:])
        return out

    def _windows(self, group: Sequence[Unit]) -> list[tuple[int, int]]:
        """``[low, high]`` of each stretch that goes to NeMo: needy words with their context, overlaps joined."""
        windows: list[tuple[int, int]] = []
        for i in self._needy(group):
            low, high = max(0, i - CONTEXT_BEFORE), min(len(group) - 1, i + CONTEXT_WORDS)
            if windows and low <= windows[-1][1]:
                windows[-1] = (windows[-1][0], high)
            else:
                windows.append((low, high))
        return windows

    def warm(self, units: Sequence[Unit], language: str, settings: TextSettings) -> int:
        """Normalizes into the memo the stretches of a still-arriving sentence that are likely final (all but the last
        while fewer than ``CONTEXT_WORDS`` follow it, unless the text ends a sentence); a wrong guess only wastes the
        call. ``units``: the words so far, a partly typed last word left out."""
        if self.normalize is None:
            return 0
        groups = _text_groups([_respelled(u, []) for u in units])
        done = 0
        for number, group in enumerate(groups):
            if group[0].kind != TEXT:
                continue
            windows = self._windows(group)
            open_end = number == len(groups) - 1 and not group[-1].text.endswith(ENDS_SENTENCE)
            for low, high in windows:
                last = open_end and high == len(group) - 1 and (low, high) == windows[-1]
                if last and self._needy(group)[-1] + CONTEXT_WORDS > high:
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


def _respelled(unit: Unit, changes: list[Change]) -> Unit:
    """A word misaki misreads (``WORDS``), respelled; same span."""
    if unit.kind != TEXT:
        return unit
    lead, core, tail = strip_punctuation(unit.text)
    said = WORDS.get(core.lower()) if not core.isupper() else None
    if said is None:
        return unit
    changes.append(Change("respelling", core, said))
    return unit.with_text(lead + said + tail)


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
    """Spoken words for ``window``: words that came back unchanged keep their unit (and exact span); each run of
    new words points at the span of the source words it replaced (an inserted run at its neighbour's)."""
    written = [u.text for u in window]
    out: list[Unit] = []
    matcher = difflib.SequenceMatcher(None, written, spoken, autojunk=False)
    for op, low, high, first, last in matcher.get_opcodes():
        if op == "equal":
            out.extend(window[low:high])
            continue
        if first == last:  # words NeMo dropped: a pause after them stays with the word before
            if out and window[high - 1].pause_after_s:
                out[-1] = replace(out[-1], pause_after_s=out[-1].pause_after_s + window[high - 1].pause_after_s)
            continue
        source = window[low:high] or [window[min(low, len(window) - 1)]]
        start, end, rate, pause = source[0].start, source[-1].end, source[-1].rate, source[-1].pause_after_s
        words = spoken[first:last]
        out.extend(Unit(w, start, end, SPOKEN, rate=rate) for w in words[:-1])
        out.append(Unit(words[-1], start, end, SPOKEN, rate=rate, pause_after_s=pause if high > low else 0.0))
    return out


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
