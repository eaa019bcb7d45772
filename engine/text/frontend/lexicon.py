"""A pronunciation lexicon an operator owns: word → phonemes or respelling. A bad entry is refused with its position
and reason when the lexicon is built, never dropped at synthesis time."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from voicedesk.engine.errors import ErrorCode, VoicedeskError

KOKORO_VOCAB: frozenset[str] = frozenset(
    ' !"(),.:;?AIOQSTWYabcdefhijklmnopqrstuvwxyzæçðøŋœɐɑɒɔɕɖəɚɛɜɟɡɣɤɥɨɪɯɰɲɳɴɸɹɻɽɾʁʂʃʈʊʋʌʎʒʔʝʣʤʥʦʧʨʰʲˈˌː̃βθχᵊᵝᵻ—“”…→↓↗↘ꭧ'
)
"""Every symbol Kokoro-82M has an id for (``config.json`` ``vocab``; a test holds this equal to the real config).
The model drops any other character without a sound, so a lexicon entry using one would be silently wrong."""

PHONEME_PUNCTUATION = frozenset(' !"(),.:;?—“”…')
"""In the vocabulary, but punctuation to the model (and ``(``/``)`` would break misaki's ``[word](/phonemes/)``
override): an entry's phonemes are one word's sounds, so these are refused there."""

LEXICON_PHONEMES = KOKORO_VOCAB - PHONEME_PUNCTUATION

MAX_ENTRIES = 10_000
MAX_CHARS = 200_000
"""Words and pronunciations together, per lexicon a client sends (a session holds one at a time)."""
MAX_WORD_CHARS = 100
MAX_PHONEME_CHARS = 200
ENTRY_KEYS = frozenset({"word", "phonemes", "respelling", "case_sensitive"})


class LexiconError(VoicedeskError, ValueError):
    """A lexicon (or one of its entries) that cannot be used; the message names the entry and what is wrong."""

    def __init__(self, reason: str, index: int | None = None, word: str | None = None) -> None:
        self.reason = reason
        self.index = index
        self.word = word
        where = "lexicon"
        if index is not None:
            where = f"lexicon entry {index}" + (f" ({word!r})" if word else "")
        super().__init__(
            ErrorCode.BAD_MESSAGE,
            f"{where}: {reason}",
            'Each entry is {"word": ..., "phonemes": ...} or {"word": ..., "respelling": ...}, '
            'optionally "case_sensitive": true; phonemes use Kokoro\'s symbols (see `voicedesk phonemes WORD`).',
        )


@dataclass(frozen=True, slots=True)
class LexiconEntry:
    word: str
    phonemes: str | None = None
    """Kokoro phoneme symbols with stress marks, e.g. ``ʃɪvˈɔn``."""
    respelling: str | None = None
    """Letters the G2P reads instead of ``word``, e.g. ``shiv awn``."""
    case_sensitive: bool = False

    @property
    def key(self) -> str:
        """What the entry is matched by: the word itself, or its case-folded form."""
        return self.word if self.case_sensitive else self.word.casefold()


def check_entry(entry: LexiconEntry, index: int | None = None) -> LexiconEntry:
    """Returns ``entry`` if it can be used, else raises ``LexiconError`` naming it."""
    word = entry.word

    def refuse(reason: str) -> LexiconError:
        return LexiconError(reason, index, word if isinstance(word, str) else None)

    if not isinstance(word, str) or not word.strip():
        raise refuse("the word is empty")
    if word != word.strip() or "\n" in word:
        raise refuse("the word has leading/trailing spaces or a line break")
    if len(word) > MAX_WORD_CHARS:
        raise refuse(f"the word is over {MAX_WORD_CHARS} characters")
    if not any(ch.isalnum() for ch in word):
        raise refuse("the word has no letters or digits")
    if not isinstance(entry.case_sensitive, bool):
        raise refuse("case_sensitive must be true or false")
    if (entry.phonemes is None) == (entry.respelling is None):
        raise refuse('give exactly one of "phonemes" or "respelling"')
    if entry.phonemes is not None:
        phonemes = entry.phonemes
        if not isinstance(phonemes, str) or not phonemes.strip():
            raise refuse("the phonemes are empty")
        if len(phonemes) > MAX_PHONEME_CHARS:
            raise refuse(f"the phonemes are over {MAX_PHONEME_CHARS} symbols")
        for symbol in phonemes:
            if symbol in PHONEME_PUNCTUATION:
                raise refuse(f"phoneme symbol {symbol!r} is punctuation, not a sound")
            if symbol not in KOKORO_VOCAB:
                raise refuse(f"unknown phoneme symbol {symbol!r} (not in Kokoro's vocabulary)")
    else:
        respelling = entry.respelling
        if not isinstance(respelling, str) or not respelling.strip():
            raise refuse("the respelling is empty")
        if len(respelling) > MAX_WORD_CHARS:
            raise refuse(f"the respelling is over {MAX_WORD_CHARS} characters")
        if any(ch in "[]()/\n" for ch in respelling) or not any(ch.isalpha() for ch in respelling):
            raise refuse("a respelling is letters the voice reads (no brackets, slashes or line breaks)")
    return entry


@dataclass(frozen=True)
class Lexicon:
    """Checked entries, one per key; ``lookup`` tries case-sensitive entries first, then case-folded ones."""

    entries: tuple[LexiconEntry, ...] = ()
    _exact: Mapping[str, LexiconEntry] = field(default_factory=dict, init=False, repr=False, compare=False)
    _folded: Mapping[str, LexiconEntry] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._index(check=True)

    @classmethod
    def of_checked(cls, entries: tuple[LexiconEntry, ...]) -> Lexicon:
        """Entries already checked one by one (just parsed, or two lexicons merged): not checked again."""
        lexicon = object.__new__(cls)
        object.__setattr__(lexicon, "entries", entries)
        lexicon._index(check=False)
        return lexicon

    def _index(self, check: bool) -> None:
        entries = tuple(self.entries)
        if len(entries) > MAX_ENTRIES:
            raise LexiconError(f"{len(entries)} entries; at most {MAX_ENTRIES} are accepted")
        exact: dict[str, LexiconEntry] = {}
        folded: dict[str, LexiconEntry] = {}
        for index, entry in enumerate(entries):
            if check:
                if not isinstance(entry, LexiconEntry):
                    raise LexiconError("not a lexicon entry", index)
                check_entry(entry, index)
            table = exact if entry.case_sensitive else folded
            if entry.key in table:
                raise LexiconError(f"{entry.word!r} is already in the lexicon (one entry per word)", index, entry.word)
            table[entry.key] = entry
        object.__setattr__(self, "entries", entries)
        object.__setattr__(self, "_exact", exact)
        object.__setattr__(self, "_folded", folded)
        # Settings carrying the lexicon are hashed per sentence (caches): once here, not 6,000 entries each time.
        object.__setattr__(self, "_hash", hash(entries))

    def __hash__(self) -> int:
        return self._hash  # type: ignore[attr-defined]

    def __reduce__(self) -> tuple[object, ...]:
        # Rebuilt in the receiving process: string hashes differ between processes.
        return Lexicon.of_checked, (self.entries,)

    def __len__(self) -> int:
        return len(self.entries)

    def __bool__(self) -> bool:
        return bool(self.entries)

    def lookup(self, word: str) -> LexiconEntry | None:
        return self._exact.get(word) or self._folded.get(word.casefold())

    def merged_over(self, base: Lexicon) -> Lexicon:
        """``base``'s entries with this lexicon's entries replacing those for the same word (session over server)."""
        mine = {(e.case_sensitive, e.key) for e in self.entries}
        kept = [e for e in base.entries if (e.case_sensitive, e.key) not in mine]
        return Lexicon.of_checked((*kept, *self.entries))

    def to_json(self) -> list[dict[str, object]]:
        """The entries as ``parse_lexicon`` reads them (for the protocol, and for export)."""
        out: list[dict[str, object]] = []
        for e in self.entries:
            item: dict[str, object] = {"word": e.word}
            if e.phonemes is not None:
                item["phonemes"] = e.phonemes
            else:
                item["respelling"] = e.respelling
            if e.case_sensitive:
                item["case_sensitive"] = True
            out.append(item)
        return out


EMPTY_LEXICON = Lexicon()


def parse_lexicon(obj: object) -> Lexicon:
    """A lexicon from decoded JSON: a list of ``{"word", "phonemes"|"respelling", "case_sensitive"?}`` objects."""
    if isinstance(obj, Lexicon):
        return obj
    if not isinstance(obj, list | tuple):
        raise LexiconError(f"expected a list of entries, got {type(obj).__name__}")
    if len(obj) > MAX_ENTRIES:
        raise LexiconError(f"{len(obj)} entries; at most {MAX_ENTRIES} are accepted")
    entries = tuple(_parse_entry(item, index) for index, item in enumerate(obj))
    chars = sum(len(e.word) + len(e.phonemes or e.respelling or "") for e in entries)
    if chars > MAX_CHARS:
        raise LexiconError(f"{chars:,} characters of words and pronunciations; at most {MAX_CHARS:,} are accepted")
    return Lexicon.of_checked(entries)


def _parse_entry(item: object, index: int) -> LexiconEntry:
    if not isinstance(item, Mapping):
        raise LexiconError(f"expected an object, got {type(item).__name__}", index)
    word = item.get("word")
    shown = word if isinstance(word, str) else None
    if not isinstance(word, str):
        raise LexiconError('"word" is missing or not a string', index)
    unknown = sorted(str(k) for k in set(item) - ENTRY_KEYS)
    if unknown:
        raise LexiconError(f"unknown field(s) {', '.join(unknown)}", index, shown)
    for name in ("phonemes", "respelling"):
        if item.get(name) is not None and not isinstance(item[name], str):
            raise LexiconError(f'"{name}" must be a string', index, shown)
    entry = LexiconEntry(
        word=word,
        phonemes=item.get("phonemes"),
        respelling=item.get("respelling"),
        case_sensitive=item.get("case_sensitive", False),
    )
    return check_entry(entry, index)


def load_lexicon_file(path: str | Path) -> Lexicon:
    """Reads a JSON lexicon file (an adapter around the pure ``parse_lexicon``); errors name the file."""
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise LexiconError(f"{path} could not be read ({exc.strerror or exc})") from exc
    try:
        obj = json.loads(raw)
    except ValueError as exc:
        raise LexiconError(f"{path} is not valid JSON ({exc})") from exc
    try:
        return parse_lexicon(obj)
    except LexiconError as exc:
        raise LexiconError(f"{exc.reason} (in {path})", exc.index, exc.word) from exc
