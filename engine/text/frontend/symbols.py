"""No symbol reaches the G2P unsaid (misaki drops ``/`` and the colon of ``host:8080`` without a word): each is said,
kept for the G2P, or dropped on purpose, by where it stands (inside a word, before a number, or outside)."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import replace

from voicedesk.engine.text.frontend.spoken import PHONEMES, TEXT, Change, Unit
from voicedesk.engine.text.frontend.spoken_symbols import SYMBOLS

KEEP: None = None
"""The G2P reads it or hears it as punctuation."""
DROP = ""
Fate = tuple[str | None, str | None, str | None]
"""(outside, inside, before a number): a word to say, ``KEEP`` or ``DROP``."""

PUNCTUATION = frozenset(".,;:!?…。，、！？：；")
PAUSE_PUNCTUATION = ".,;:!?…—"
"""What a symbol-only unit dropped here leaves behind as a pause, on the word before it."""
NUMBER_PUNCTUATION = frozenset(".,:")
"""Between two digits: a decimal, a group of thousands, a clock time (the G2P stage reads them)."""

COMMON: dict[str, Fate] = {
    **{symbol: (KEEP, KEEP, KEEP) for symbol in "'\""},
    **{symbol: (DROP, DROP, DROP) for symbol in "`|^~•·¿¡"},
    "-": ("—", KEEP, KEEP),  # a spaced dash is a pause; a hyphen joins a word; a sign is said by the G2P stage
    "*": (DROP, KEEP, DROP),
    "_": (DROP, " ", DROP),
}
"""Every language: marks of emphasis, code and bullets are dropped on purpose (the markup stage read them)."""

ENGLISH: dict[str, Fate] = {
    **{symbol: (KEEP, KEEP, KEEP) for symbol in "%&+=@\\§°×©®™€£¥¢¶←→≤≥≠≈∞√½¼¾"},  # misaki reads these anywhere
    "/": ("slash", "slash", "slash"),
    ":": (KEEP, "colon", KEEP),
    ".": (KEEP, "dot", KEEP),
    "*": (DROP, "times", DROP),
    "^": (DROP, "to the power of", DROP),
    "~": ("tilde", "tilde", "approximately"),
    "-": ("—", KEEP, KEEP),
    "#": ("hash", "hash", "number"),
    "$": ("dollars", "dollars", KEEP),
    "<": ("less than", "less than", "less than"),
    ">": ("greater than", "greater than", "greater than"),
    "±": ("plus or minus", "plus or minus", "plus or minus"),
    "÷": ("divided by", "divided by", "divided by"),
}

_ORDER = "efiphjz"
_WORDS = {  # es, fr, it, pt, hi, ja, zh
    "/": ("barra", "barre oblique", "barra", "barra", "स्लैश", "スラッシュ", "斜杠"),
    ":": ("dos puntos", "deux-points", "due punti", "dois pontos", "कोलन", "コロン", "冒号"),
    ".": ("punto", "point", "punto", "ponto", "डॉट", "ドット", "点"),
    "=": ("igual a", "égal", "uguale a", "igual a", "बराबर", "イコール", "等于"),
    "+": ("más", "plus", "più", "mais", "प्लस", "プラス", "加"),
    "&": ("y", "et", "e", "e", "और", "アンド", "和"),
    "@": ("arroba", "arobase", "chiocciola", "arroba", "एट", "アット", "艾特"),
    "#": ("número", "numéro", "numero", "número", "नंबर", "番号", "编号"),
    "±": ("más menos", "plus ou moins", "più o meno", "mais ou menos", "प्लस माइनस", "プラスマイナス", "正负"),
    "×": ("por", "fois", "per", "vezes", "गुणा", "かける", "乘"),
    "÷": ("entre", "divisé par", "diviso", "dividido por", "भाग", "わる", "除以"),
    "<": ("menor que", "inférieur à", "minore di", "menor que", "से कम", "小なり", "小于"),
    ">": ("mayor que", "supérieur à", "maggiore di", "maior que", "से अधिक", "大なり", "大于"),
    "~": ("aproximadamente", "environ", "circa", "aproximadamente", "लगभग", "約", "约"),
    "-": ("guion", "tiret", "trattino", "hífen", "डैश", "ダッシュ", "横杠"),
}
_POSITIONS = {":": (KEEP, 1, KEEP), ".": (KEEP, 1, KEEP), "~": (DROP, DROP, 1), "-": ("—", KEEP, KEEP)}
"""Where a word of ``_WORDS`` is said when not everywhere (1: the word); a ``-`` before a letter (``-l``) is
always its word."""


READ_BY_G2P = {"z": frozenset("%％")}
"""Symbols a non-English G2P reads itself (cn2an: "百分之")."""


DASH = {"a": "dash", "b": "dash", **{code: _WORDS["-"][i] for i, code in enumerate(_ORDER)}}
"""A ``-`` at a word's start before a letter: a command's option (``ls -l``), said."""


def _language_table(language: str) -> dict[str, Fate]:
    table: dict[str, Fate] = {}
    for symbol, words in _WORDS.items():
        word = words[_ORDER.index(language)]
        table[symbol] = tuple(word if p == 1 else p for p in _POSITIONS.get(symbol, (1, 1, 1)))  # type: ignore[misc]
    symbols = SYMBOLS[language]
    said_later = {w for w in (*symbols.units, *symbols.currencies) if len(w) == 1 and not w.isalnum()}
    for symbol in said_later | READ_BY_G2P.get(language, frozenset()):
        table[symbol] = (KEEP, KEEP, KEEP)
    return table


TABLES: dict[str, dict[str, Fate]] = {
    "a": {**COMMON, **ENGLISH},
    "b": {**COMMON, **ENGLISH},
    **{code: {**COMMON, **_language_table(code)} for code in _ORDER},
}
"""Kokoro language code → each symbol's fate (one table per language; a code not here gets ``COMMON``)."""

_SAID_LATER_WORDS = {
    code: tuple(w for w in (*s.units, *s.currencies) if len(w) > 1 and not w.isalnum()) for code, s in SYMBOLS.items()
}
"""``km/h``, ``R$``: a symbol inside them is the unit's, said by ``spoken_symbols``."""


def fate(word: str, index: int, language: str, written: bool = False) -> str | None:
    """What becomes of ``word[index]`` (a symbol): a word, ``KEEP`` or ``DROP``. ``written``: the word is as
    sent (not a normalizer's output), where ``on/off`` pairs words the G2P reads as two."""
    symbol = word[index]
    before = word[index - 1] if index else ""
    after = word[index + 1] if index + 1 < len(word) else ""
    if symbol in NUMBER_PUNCTUATION and before.isdigit() and after.isdigit():
        return KEEP
    if symbol == "/" and written and language in "ab" and word.replace("/", "").isalpha():
        return KEEP  # misaki reads "on/off" as two words
    if symbol == ":" and not written:
        return KEEP  # a colon a normalizer left between words ("eleven:thirty"): a pause
    if any(unit in word for unit in _SAID_LATER_WORDS.get(language, ()) if symbol in unit):
        return KEEP
    table = TABLES.get(language, COMMON)
    found = table.get(symbol)
    if found is None:
        return _unlisted(symbol, language)
    outside, inside, number = found
    if before.isalnum() and after.isalnum():
        if symbol == "." and (len(word[:index].split(".")[-1]) < 2 or len(word[index + 1 :].split(".")[0]) < 2):
            return KEEP  # initials and abbreviations: "e.g.", "U.S."
        return inside
    if after.isdigit() and not before.isalnum():
        return number
    if symbol == "-" and after.isalpha() and not before:
        return DASH.get(language, outside)
    return outside


def _unlisted(symbol: str, language: str) -> str | None:
    """Punctuation is heard as punctuation (quotes, brackets, dashes; elsewhere than English all of it); any other
    symbol is said by its Unicode name in English and dropped elsewhere."""
    category = unicodedata.category(symbol)
    if symbol in PUNCTUATION or category in ("Ps", "Pe", "Pi", "Pf", "Pd") or category.startswith("M"):
        return KEEP
    if language in "ab":
        return unicodedata.name(symbol, "").lower().removesuffix(" sign") or DROP
    return KEEP if category.startswith("P") else DROP


def is_symbol(ch: str) -> bool:
    return not (ch.isalnum() or ch.isspace())


def say_symbols(units: Sequence[Unit], language: str, changes: list[Change]) -> list[Unit]:
    """Each unit's symbols said, kept or dropped (``fate``); a unit left empty goes, its punctuation kept as a pause."""
    out: list[Unit] = []
    for unit in units:
        if unit.kind == PHONEMES or not any(is_symbol(ch) for ch in unit.text):
            out.append(unit)
            continue
        text = _said(unit.text, language, unit.kind == TEXT, _said_later(unit.text, language))
        if text != unit.text:
            changes.append(Change("symbols", unit.text, text))
        words = text.split()
        if any(not _heard_as_punctuation(ch) for ch in text if not ch.isspace()) or (text.strip() and not out):
            out.extend(unit.with_text(w) for w in words[:-1])
            out.append(unit.with_text(words[-1]))
            continue
        kept = "".join(ch for ch in text if ch in PAUSE_PUNCTUATION)
        if kept and out and not out[-1].text.endswith(kept):
            previous = out[-1]
            pause = previous.pause_after_s + unit.pause_after_s
            out[-1] = replace(previous, text=previous.text + kept, end=max(previous.end, unit.end), pause_after_s=pause)
    return out


def _heard_as_punctuation(ch: str) -> bool:
    return ch in PAUSE_PUNCTUATION or ch in "'\"" or unicodedata.category(ch) in ("Ps", "Pe", "Pi", "Pf", "Pd")


def _said_later(text: str, language: str) -> frozenset[str]:
    """The symbols of ``text`` the language's spoken form says (``15/03/2025`` is a date in Spanish)."""
    if language in "ab" or not any(ch.isdigit() for ch in text):
        return frozenset()
    from voicedesk.engine.text.frontend.spoken_languages import spoken_form

    return frozenset(ch for ch in text if is_symbol(ch)) - set(spoken_form(text, language))


def _said(word: str, language: str, written: bool, later: frozenset[str] = frozenset()) -> str:
    pieces: list[str] = []
    for index, ch in enumerate(word):
        if not is_symbol(ch) or ch in later:
            pieces.append(ch)
            continue
        said = fate(word, index, language, written)
        if said is KEEP:
            pieces.append(ch)
        elif said:
            pieces.append(f" {said} ")
    return " ".join("".join(pieces).split())


def unsaid(units: Sequence[Unit], language: str) -> set[str]:
    """The symbols left in ``units`` (a front-end's output) that the G2P neither reads nor hears as punctuation:
    the check ``say_symbols`` must pass (its tests run it on every output)."""
    return {
        unit.text[i]
        for unit in units
        if unit.kind != PHONEMES
        for i in range(len(unit.text))
        if is_symbol(unit.text[i])
        and unit.text[i] not in _said_later(unit.text, language)
        and fate(unit.text, i, language, unit.kind == TEXT) is not KEEP
    }
