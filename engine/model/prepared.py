"""What the CPU side hands the model: a sentence's phoneme pieces (each at most 510, chunked by Kokoro's own code) and,
for English, its G2P tokens with their source characters; picklable, so it can run in another process."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from voicedesk.engine.text.frontend.spoken import SpokenText, locate_tokens

if TYPE_CHECKING:
    from kokoro import KPipeline

MAX_PHONEMES = 510
"""KModel's ceiling per forward (512 ids with the two boundary tokens)."""
NON_ENGLISH_CHUNK = 400
"""Characters per G2P call for non-English text (as ``KPipeline`` cuts it)."""
ENGLISH_CALL_CHARS = 1_000
"""Most characters one English G2P call reads, in whole words: misaki's time grows faster than its input on some
patterns, and it runs under a lock every session shares. A chunk under the chunker's ceiling needs one call."""


@dataclass(frozen=True, slots=True)
class PreparedToken:
    """A misaki token: what ``KPipeline.join_timestamps`` needs, plus the source span it speaks."""

    text: str
    phonemes: str
    whitespace: bool
    start_char: int | None = None
    end_char: int | None = None


@dataclass(frozen=True, slots=True)
class PreparedPiece:
    phonemes: str
    """Exactly the phoneme string the model receives (at most ``MAX_PHONEMES``)."""
    tokens: tuple[PreparedToken, ...] = ()
    """English only: word timings come from these; empty for other languages (no timings, as before)."""
    rate: float = 1.0
    pause_after_s: float = 0.0


@dataclass(frozen=True, slots=True)
class PreparedSentence:
    text: str
    """The text as sent."""
    voice: str
    language: str
    spoken: SpokenText
    pieces: tuple[PreparedPiece, ...]

    @property
    def phonemes(self) -> str:
        return " ".join(piece.phonemes for piece in self.pieces)


def prepare_pieces(pipeline: KPipeline, spoken: SpokenText, language: str) -> tuple[PreparedPiece, ...]:
    pieces: list[PreparedPiece] = []
    for rate, pause_s, units in spoken.runs():
        if language in "ab":
            for part in _bounded(units):
                pieces.extend(_english(pipeline, " ".join(u.g2p_text for u in part), part, rate, spoken.source))
        else:
            pieces.extend(_other(pipeline, " ".join(unit.g2p_text for unit in units), rate))
        if pause_s and pieces:
            last = pieces[-1]
            pieces[-1] = PreparedPiece(last.phonemes, last.tokens, last.rate, last.pause_after_s + pause_s)
    return tuple(pieces)


def _bounded(units: tuple) -> list[tuple]:
    """``units`` in runs of at most ``ENGLISH_CALL_CHARS`` characters of G2P text (a longer word alone)."""
    parts: list[tuple] = []
    current: list = []
    size = 0
    for unit in units:
        length = len(unit.g2p_text) + 1
        if current and size + length > ENGLISH_CALL_CHARS:
            parts.append(tuple(current))
            current, size = [], 0
        current.append(unit)
        size += length
    if current:
        parts.append(tuple(current))
    return parts


def _english(pipeline: KPipeline, text: str, units: tuple, rate: float, source: str) -> list[PreparedPiece]:
    _, tokens = pipeline.g2p(text)
    located = locate_tokens(units, [t.text for t in tokens], source)
    spans = {id(token): span for token, span in zip(tokens, located, strict=True)}
    pieces = []
    for _graphemes, phonemes, chunk in pipeline.en_tokenize(tokens):
        if not phonemes:
            continue
        prepared = tuple(_token(token, spans.get(id(token))) for token in chunk)
        pieces.append(PreparedPiece(phonemes[:MAX_PHONEMES], prepared, rate))
    return pieces


def _token(token: Any, span: tuple[int, int] | None) -> PreparedToken:
    start, end = span if span is not None else (None, None)
    return PreparedToken(token.text, token.phonemes or "", bool(token.whitespace), start, end)


def _other(pipeline: KPipeline, text: str, rate: float) -> list[PreparedPiece]:
    """Sentence-sized G2P calls, as ``KPipeline`` makes them for languages other than English."""
    chunks: list[str] = []
    current = ""
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        if current and len(current) + len(sentence) > NON_ENGLISH_CHUNK:
            chunks.append(current)
            current = ""
        current = f"{current} {sentence}".strip()
    if current:
        chunks.append(current)
    pieces = []
    for chunk in chunks:
        phonemes, _ = pipeline.g2p(chunk)
        if phonemes:
            pieces.append(PreparedPiece(phonemes[:MAX_PHONEMES], (), rate))
    return pieces
