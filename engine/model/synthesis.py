"""What a synthesizer is, independent of Kokoro: text in, float audio at 24 kHz and word timings out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from voicedesk.engine.audio import SAMPLE_RATE
from voicedesk.engine.text.frontend.settings import TextSettings


@dataclass(frozen=True, slots=True)
class WordTiming:
    word: str
    """The spoken word (``minus`` for ``-5°C``)."""
    start_s: float
    end_s: float
    start_char: int | None = None
    """The span ``[start_char, end_char)`` of the sentence's text as sent that this word speaks (``-5°C``), so a
    window can highlight what was written; None when unknown (an older server, a stand-in)."""
    end_char: int | None = None


@dataclass(frozen=True, slots=True)
class SynthesisResult:
    audio: np.ndarray
    """float32, mono, ``SAMPLE_RATE`` Hz."""
    words: tuple[WordTiming, ...] = ()
    phonemes: str = ""

    @property
    def duration_s(self) -> float:
        return len(self.audio) / SAMPLE_RATE


class Synthesizer(Protocol):
    """Blocking calls: run them on the scheduler's worker thread, never on an event loop."""

    @property
    def device(self) -> str: ...

    def synthesize(
        self,
        text: str,
        voice: str,
        speed: float,
        should_stop: Callable[[], bool] | None = None,
        settings: TextSettings | None = None,
    ) -> SynthesisResult:
        """``should_stop`` is polled while the model runs (true: it may raise to stop early); ``settings`` is passed
        only when not the defaults, so older synthesizers keep working."""
        ...

    def check_voice(self, voice: str) -> str:
        """Returns the voice spec normalised, or raises ``engine.errors.VoiceError`` saying what exists."""
        ...

    def list_voices(self) -> list[str]: ...

    def warm_up(self) -> None: ...


@runtime_checkable
class PreparesAhead(Protocol):
    """A synthesizer whose CPU half (front-end, G2P) can start before the model is free for the sentence."""

    @property
    def prepare_workers(self) -> int:
        """Worker processes preparing sentences (0: in-process); with workers every queued sentence is handed over."""
        ...

    def prepare_ahead(self, text: str, voice: str, settings: TextSettings) -> None:
        """Starts preparing a sentence that is coming; a later ``synthesize`` of the same one finds it ready."""
        ...


@runtime_checkable
class WarmsAhead(Protocol):
    """A synthesizer that can start on a sentence still arriving (the front-end's numbers and units)."""

    def warm(self, text: str, voice: str, settings: TextSettings) -> None:
        """A hint with the text received so far; returns at once and never changes a result."""
        ...
