"""The text front-end, between the chunker and G2P: markup → spoken form → lexicon.

``to_spoken`` is pure (its inputs and ``SpokenText`` pickle), so it runs ahead of the model or in worker processes."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from voicedesk.engine.errors import VoicedeskError
from voicedesk.engine.text.frontend.lexicon import (
    EMPTY_LEXICON,
    Lexicon,
    LexiconEntry,
    LexiconError,
    load_lexicon_file,
    parse_lexicon,
)
from voicedesk.engine.text.frontend.markup import markdown_units, plain_units
from voicedesk.engine.text.frontend.settings import DEFAULT_TEXT_SETTINGS, TextSettings
from voicedesk.engine.text.frontend.spoken import (
    PHONEMES,
    SPOKEN,
    TEXT,
    Change,
    SpokenText,
    Unit,
    locate_tokens,
    strip_punctuation,
)
from voicedesk.engine.text.frontend.ssml import ssml_units
from voicedesk.engine.text.frontend.symbols import say_symbols

SpokenForm = Callable[[Sequence[Unit], str, TextSettings, list[Change]], list[Unit]]
"""``(units, language, settings, changes) → units``: rewrites text units into what is said."""


def to_units(text: str, settings: TextSettings) -> tuple[list[Unit], list[Change]]:
    """The source as units, by ``settings.markup`` (``auto``: ``<speak>`` → SSML, else markdown)."""
    mode = settings.markup
    if mode == "auto":
        mode = "ssml" if text.lstrip().startswith("<speak") else "markdown"
    if mode == "ssml":
        return ssml_units(text, settings)
    changes: list[Change] = []
    if mode == "plain":
        return list(plain_units(text, 0, settings, changes)), changes
    return markdown_units(text, settings, changes), changes


SENTENCE_PUNCTUATION = ".!?…"


class FrontEnd:
    def __init__(self, spoken_forms: Mapping[str, SpokenForm] | None = None, notes: Sequence[str] = ()) -> None:
        self.spoken_forms = dict(spoken_forms or {})
        self.notes = tuple(notes)

    def to_spoken(self, text: str, language: str, settings: TextSettings = DEFAULT_TEXT_SETTINGS) -> SpokenText:
        units, changes = to_units(text, settings)
        spoken_form = self.spoken_forms.get(language)
        if spoken_form is not None:
            units = spoken_form(units, language, settings, changes)
        if settings.lexicon:
            units = apply_lexicon(units, settings.lexicon, changes)
        units = say_symbols(units, language, changes)
        return SpokenText(text, tuple(units), tuple(changes), self.notes if spoken_form is not None else ())

    def warm(self, text: str, language: str, settings: TextSettings = DEFAULT_TEXT_SETTINGS) -> int:
        """A hint for a sentence still arriving: normalizes into the memo what the rest of it cannot change, so
        ``to_spoken`` finds it done; never changes a result. Returns the stretches normalized."""
        spoken_form = self.spoken_forms.get(language)
        warm = getattr(spoken_form, "warm", None)
        complete = complete_words(text)
        if warm is None or not complete:
            return 0
        needs_nemo = getattr(spoken_form, "needs_nemo", None)
        if needs_nemo is not None and not needs_nemo(complete):  # most agent text: not even the markup is parsed
            return 0
        try:
            units, _changes = to_units(complete, settings)
        except VoicedeskError:
            return 0
        return warm(units, language, settings)


def complete_words(text: str) -> str:
    """``text`` without a last word that may still be typing (``at 3:0`` → ``at``; ``tonight.`` stays)."""
    if not text or text[-1].isspace() or text[-1] in SENTENCE_PUNCTUATION:
        return text
    cut = max((i for i, ch in enumerate(text) if ch.isspace()), default=0)
    return text[:cut]


def apply_lexicon(units: Sequence[Unit], lexicon: Lexicon, changes: list[Change]) -> list[Unit]:
    """Words of the spoken form replaced by the lexicon's phonemes or respelling (``Lexicon.lookup``)."""
    longest = max((len(e.word.split()) for e in lexicon.entries), default=1)
    out: list[Unit] = []
    index = 0
    while index < len(units):
        matched = None
        for size in range(min(longest, len(units) - index), 0, -1):
            run = units[index : index + size]
            if any(u.kind == PHONEMES for u in run):
                continue
            lead, _core, _ = strip_punctuation(run[0].text)
            _, _, tail = strip_punctuation(run[-1].text)
            words = [strip_punctuation(u.text)[1] for u in run]
            entry = lexicon.lookup(" ".join(words))
            if entry is not None:
                matched = (size, entry, lead, tail)
                break
        if matched is None:
            out.append(units[index])
            index += 1
            continue
        size, entry, lead, tail = matched
        run = units[index : index + size]
        said = " ".join(strip_punctuation(u.text)[1] for u in run)
        start, end, rate = run[0].start, run[-1].end, run[-1].rate
        pause = run[-1].pause_after_s
        if entry.phonemes is not None:
            out.append(Unit(said + tail, start, end, PHONEMES, entry.phonemes, rate, pause))
            changes.append(Change("lexicon phonemes", said, entry.phonemes))
        else:
            respelled = (entry.respelling or "").split()
            for position, word in enumerate(respelled):
                last = position == len(respelled) - 1
                out.append(
                    Unit(
                        (lead if position == 0 else "") + word + (tail if last else ""),
                        start,
                        end,
                        SPOKEN,
                        rate=rate,
                        pause_after_s=pause if last else 0.0,
                    )
                )
            changes.append(Change("lexicon respelling", said, entry.respelling or ""))
        index += size
    return out


_shared: FrontEnd | None = None
_shared_lock = threading.Lock()


def load_front_end(grammar_dir: Path | None = None) -> FrontEnd:
    """The front-end with every spoken form this installation has (loads NeMo's grammars: ~1 s)."""
    from voicedesk.engine.text.frontend.grammars import load_english

    english, note = load_english(grammar_dir)
    return FrontEnd({"a": english, "b": english}, (note,) if note else ())


def shared_front_end() -> FrontEnd:
    """One per process, loaded on first use (``KokoroSynthesizer.load`` calls this at start-up)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = load_front_end()
        return _shared


def to_spoken(text: str, language: str, settings: TextSettings = DEFAULT_TEXT_SETTINGS) -> SpokenText:
    return shared_front_end().to_spoken(text, language, settings)


__all__ = [
    "EMPTY_LEXICON",
    "SPOKEN",
    "TEXT",
    "FrontEnd",
    "Lexicon",
    "LexiconEntry",
    "LexiconError",
    "SpokenText",
    "TextSettings",
    "Unit",
    "load_front_end",
    "load_lexicon_file",
    "locate_tokens",
    "parse_lexicon",
    "shared_front_end",
    "to_spoken",
]
