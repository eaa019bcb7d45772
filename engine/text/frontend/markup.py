"""Markup → units: agent markdown through markdown-it-py, plain text by word, misaki's ``[word](/phonemes/)`` override
kept (SSML: ``ssml.py``). Every unit keeps its source span, so word timings point back at the text as sent."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import replace
from functools import lru_cache
from urllib.parse import unquote

from voicedesk.engine.text.frontend.lexicon import LEXICON_PHONEMES
from voicedesk.engine.text.frontend.settings import TextSettings
from voicedesk.engine.text.frontend.spoken import PHONEMES, SPOKEN, Change, Unit, words_with_spans

INLINE_OVERRIDE = re.compile(r"\[([^\]\n]+)\]\(/([^/)\n]+)/\)")
"""misaki's ``[word](/phonemes/)`` (documented in docs/protocol.md)."""
SENTENCE_END = ".!?…:;"
STRAY_MARKS = "*_~`"
ZERO_WIDTH = {0x200D, 0xFE0E, 0xFE0F, 0x20E3}


def is_emoji(ch: str) -> bool:
    cp = ord(ch)
    return (
        0x1F000 <= cp <= 0x1FAFF
        or 0x2600 <= cp <= 0x27BF
        or 0x2B00 <= cp <= 0x2BFF
        or 0xE0020 <= cp <= 0xE007F
        or cp in ZERO_WIDTH
    )


def emoji_name(ch: str) -> str:
    """The Unicode name of an emoji, as words (``🎉`` → "party popper"); modifiers have none worth saying."""
    cp = ord(ch)
    if cp in ZERO_WIDTH or 0x1F3FB <= cp <= 0x1F3FF or 0xE0020 <= cp <= 0xE007F or 0x1F1E6 <= cp <= 0x1F1FF:
        return ""
    return unicodedata.name(ch, "").lower()


def valid_override(phonemes: str) -> bool:
    return bool(phonemes) and all(ch in LEXICON_PHONEMES for ch in phonemes)


def plain_units(text: str, offset: int, settings: TextSettings, changes: list[Change]) -> Iterator[Unit]:
    """Words of unmarked text, with inline phoneme overrides and emoji handled."""
    position = 0
    for match in INLINE_OVERRIDE.finditer(text):
        yield from _words(text[position : match.start()], offset + position, settings, changes)
        word, phonemes = match.group(1), match.group(2)
        if valid_override(phonemes):
            # the span is the word's: a window highlights "Siobhan", not the brackets around it
            yield Unit(word, offset + match.start(1), offset + match.end(1), PHONEMES, phonemes)
        else:
            yield from _words(word, offset + match.start(1), settings, changes)
        position = match.end()
    yield from _words(text[position:], offset + position, settings, changes)


def _words(text: str, offset: int, settings: TextSettings, changes: list[Change]) -> Iterator[Unit]:
    for word, start, end in words_with_spans(text, offset):
        if settings.markup != "plain" and any(ch.isalpha() for ch in word):
            # marks of emphasis a chunk cut open (``**living`` whose closing marks come with the next chunk)
            bare = word.strip(STRAY_MARKS)
            start, end, word = (
                start + len(word) - len(word.lstrip(STRAY_MARKS)),
                end - (len(word) - len(word.rstrip(STRAY_MARKS))),
                bare,
            )
        if not any(is_emoji(ch) for ch in word):
            yield Unit(word, start, end)
            continue
        kept = "".join(ch for ch in word if not is_emoji(ch))
        names = " ".join(n for n in (emoji_name(ch) for ch in word if is_emoji(ch)) if n)
        if settings.emoji == "name" and names:
            changes.append(Change("emoji named", word, names))
            if kept.strip():
                yield Unit(kept, start, end)
            yield Unit(names, start, end, SPOKEN)
        else:
            changes.append(Change("emoji dropped", word, kept))
            if kept.strip():
                yield Unit(kept, start, end)


BLOCK_RULES = ("table", "code", "fence", "blockquote", "hr", "list", "reference", "html_block", "heading", "lheading")
"""What markdown reads only at the start of a line (a chunk cut mid-line gets none of them on its first line)."""


@lru_cache(maxsize=2)
def _parser(inline_only: bool = False):
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark", {"html": True}).enable(["strikethrough", "table"])
    return parser.disable(list(BLOCK_RULES)) if inline_only else parser


def markdown_units(text: str, settings: TextSettings, changes: list[Change]) -> list[Unit]:
    """Agent markdown as words: blocks become sentences, links are read by their text, code is skipped or read, marks
    vanish. A chunk that continues a line (``settings.continues_line``) does not start one."""
    if not settings.continues_line:
        return _markdown_units(text, settings, changes, _parser())
    cut = text.find("\n") + 1 or len(text)
    units = _markdown_units(text[:cut], settings, changes, _parser(inline_only=True))
    rest = _markdown_units(text[cut:], settings, changes, _parser())
    if rest:
        _end_sentence(units)
    return units + [replace(u, start=u.start + cut, end=u.end + cut) for u in rest]


def _markdown_units(text: str, settings: TextSettings, changes: list[Change], parser) -> list[Unit]:
    """markdown-it gives no inline offsets, so each word is found in the source after the previous one."""
    line_starts = [0]
    for index, ch in enumerate(text):
        if ch == "\n":
            line_starts.append(index + 1)
    line_starts.append(len(text))

    def block_span(lines: list[int] | None, fallback: int) -> tuple[int, int]:
        if not lines:
            return fallback, len(text)
        return line_starts[min(lines[0], len(line_starts) - 1)], line_starts[min(lines[1], len(line_starts) - 1)]

    units: list[Unit] = []
    cursor = 0
    for token in parser.parse(text):
        if token.type == "inline":
            start, end = block_span(token.map, cursor)
            cursor = max(cursor, start)
            block_units, cursor = _inline_units(text, token.children or [], cursor, end, settings, changes)
            if block_units:
                _end_sentence(units)
                units.extend(block_units)
        elif token.type in ("fence", "code_block"):
            start, end = block_span(token.map, cursor)
            if settings.code == "read":
                at = text.find(token.content, start, end)
                _end_sentence(units)
                units.extend(plain_units(token.content, at if at >= 0 else start, settings, changes))
            else:
                changes.append(Change("code block skipped", text[start:end].strip(), ""))
            cursor = max(cursor, end)
    return units


def _inline_units(
    source: str, children: list, cursor: int, end: int, settings: TextSettings, changes: list[Change]
) -> tuple[list[Unit], int]:
    units: list[Unit] = []
    override: str | None = None
    override_words: list[Unit] = []

    def located(content: str) -> Iterator[Unit]:
        nonlocal cursor
        for unit in plain_units(content, 0, settings, changes):
            piece = content[unit.start : unit.end]
            at = source.find(piece, cursor, end)
            if at < 0:
                yield Unit(unit.text, cursor, cursor, unit.kind, unit.phonemes)
                continue
            cursor = at + len(piece)
            yield Unit(unit.text, at, cursor, unit.kind, unit.phonemes)

    for child in children:
        kind = child.type
        if kind == "text":
            target = override_words if override is not None else units
            target.extend(located(child.content))
        elif kind == "code_inline":
            if settings.code != "skip":
                units.extend(located(child.content))
            else:
                changes.append(Change("code skipped", child.content, ""))
                at = source.find(child.content, cursor, end)
                cursor = at + len(child.content) if at >= 0 else cursor
        elif kind == "link_open":
            href = unquote(str(child.attrs.get("href", "")))
            match = re.fullmatch(r"/([^/]+)/", href)
            if match and valid_override(match.group(1)):
                override, override_words = match.group(1), []
        elif kind == "link_close" and override is not None:
            if override_words:
                word = " ".join(u.text for u in override_words)
                units.append(Unit(word, override_words[0].start, override_words[-1].end, PHONEMES, override))
                close = source.find(")", cursor, end)
                if close >= 0:
                    cursor = close + 1
            override = None
        elif kind == "image":
            units.extend(located(child.content))
        # emphasis, strikethrough, breaks and inline HTML say nothing themselves
    return units, cursor


def _end_sentence(units: list[Unit]) -> None:
    """A block (paragraph, heading, list item) is a sentence of its own: the one before the next block gets an
    end the G2P hears. The last block is left as sent: a chunk may be the first phrase of a longer sentence."""
    if not units:
        return
    last = units[-1]
    if last.kind == PHONEMES or not last.text.rstrip("\"')”’").endswith(tuple(SENTENCE_END)):
        units[-1] = last.with_text(last.text + ".")
