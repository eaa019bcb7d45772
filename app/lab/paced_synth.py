"""A stand-in synthesizer with a settable speed, for flow-control tests and benchmarks (not for listening).

``PacedSynthesizer`` implements ``engine.model.synthesis.Synthesizer`` without a model: each text becomes a quiet,
deterministic tone of a length proportional to the text (``SECONDS_PER_CHAR`` at speed 1, like a speaker), with
word timings, and the call takes that length divided by ``realtime_factor`` of wall time, slept in short slices.
At 50× it behaves like Kokoro on a GPU; at 1× like a CPU barely keeping up. What it lets a test or a benchmark
isolate is the session's own behaviour (release on quiet, backpressure, timeouts, interruption) from the speed
of the machine, which on a small shared CPU would dominate every number.

Between slices it polls ``should_stop`` like Kokoro's forward hooks do (``engine.model.kokoro_synth``), and raises
``PacedSynthesisInterrupted`` when told to stop; every call is recorded (``calls``) with the slices it planned
and ran, so "the model was freed early" is an observable count, not a wall-clock guess.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from voicedesk.engine.errors import VoiceError
from voicedesk.engine.events import SAMPLE_RATE, WordTiming
from voicedesk.engine.model.synthesis import SynthesisResult
from voicedesk.engine.text.frontend.settings import TextSettings

SECONDS_PER_CHAR = 0.06
"""Audio per character of text at speed 1 (about Kokoro's English pace)."""
MIN_DURATION_S = 0.2
SLICE_S = 0.005
"""Wall time between two ``should_stop`` polls."""
TONE_HZ = 220.0
TONE_AMPLITUDE = 0.1
"""-20 dBFS: well above the seam trimmer's -45 dBFS, so the words are kept as audio."""
WORD_GAP_S = 0.03
VOICES = ("af_heart", "af_bella", "am_adam", "bf_emma", "zf_xiaobei")


class PacedSynthesisInterrupted(Exception):
    """The call was told to stop (its session was cancelled or went away) before it finished."""


@dataclass(slots=True)
class PacedCall:
    """One ``synthesize`` call, as the worker thread saw it."""

    text: str
    voice: str
    speed: float
    planned_slices: int
    slices_run: int = 0
    interrupted: bool = False
    finished: bool = False
    started_at: float = 0.0
    ended_at: float = 0.0
    settings: TextSettings | None = None
    """What the session asked the text to be read with (its lexicon…), kept so a test can see it arrived."""


class PacedSynthesizer:
    def __init__(self, realtime_factor: float = 50.0, voices: tuple[str, ...] = VOICES) -> None:
        if not realtime_factor > 0:
            raise ValueError(f"realtime_factor must be above 0; got {realtime_factor!r}.")
        self.realtime_factor = realtime_factor
        """Seconds of audio made per second of wall time; may be changed between calls."""
        self._voices = voices
        self._lock = threading.Condition()
        self.calls: list[PacedCall] = []

    # ---- Synthesizer protocol ------------------------------------------------------------------------

    @property
    def device(self) -> str:
        return f"paced stand-in ({self.realtime_factor:g}x real time)"

    def synthesize(
        self,
        text: str,
        voice: str,
        speed: float,
        should_stop: Callable[[], bool] | None = None,
        settings: TextSettings | None = None,
    ) -> SynthesisResult:
        """``settings`` is accepted and not applied: the stand-in's tone does not depend on the spoken form."""
        duration_s = paced_duration_s(text, speed)
        compute_s = duration_s / self.realtime_factor
        call = PacedCall(text, voice, speed, planned_slices=max(1, round(compute_s / SLICE_S)), settings=settings)
        call.started_at = time.monotonic()
        with self._lock:
            self.calls.append(call)
            self._lock.notify_all()
        try:
            for _ in range(call.planned_slices):
                if should_stop is not None and should_stop():
                    call.interrupted = True
                    raise PacedSynthesisInterrupted("synthesis stopped: its session was cancelled")
                time.sleep(compute_s / call.planned_slices)
                call.slices_run += 1
            call.finished = True
            audio, words = tone(text, duration_s)
            return SynthesisResult(audio=audio, words=words, phonemes=text)
        finally:
            call.ended_at = time.monotonic()
            with self._lock:
                self._lock.notify_all()

    def check_voice(self, voice: str) -> str:
        if voice not in self._voices:
            raise VoiceError(f"Unknown voice {voice!r}; voices here: {', '.join(self._voices)}.")
        return voice

    def list_voices(self) -> list[str]:
        return list(self._voices)

    def warm_up(self) -> None:
        pass

    # ---- for tests and benchmarks --------------------------------------------------------------------

    def wait_for_call(self, condition: Callable[[PacedCall], bool], timeout_s: float) -> PacedCall | None:
        """Blocks until a call matching ``condition`` has been recorded (started); None after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while True:
                found = next((c for c in self.calls if condition(c)), None)
                remaining = deadline - time.monotonic()
                if found is not None or remaining <= 0:
                    return found
                self._lock.wait(remaining)

    def audio_made_s(self) -> float:
        """Seconds of audio of every finished call so far."""
        with self._lock:
            return sum(paced_duration_s(c.text, c.speed) for c in self.calls if c.finished)


def paced_duration_s(text: str, speed: float) -> float:
    """The audio a text makes here: ``SECONDS_PER_CHAR`` per character at speed 1."""
    return max(MIN_DURATION_S, len(text.strip()) * SECONDS_PER_CHAR / speed)


def tone(text: str, duration_s: float) -> tuple[np.ndarray, tuple[WordTiming, ...]]:
    """A tone per word with short gaps between words; the words' timings share the duration by length."""
    words = re.findall(r"\S+", text) or [text]
    t = np.arange(round(duration_s * SAMPLE_RATE), dtype=np.float32) / SAMPLE_RATE
    audio = (TONE_AMPLITUDE * np.sin(2 * np.pi * TONE_HZ * t)).astype(np.float32)
    weights = np.array([len(w) for w in words], dtype=np.float64)
    edges = np.concatenate([[0.0], np.cumsum(weights) / weights.sum() * duration_s])
    gap = min(WORD_GAP_S, duration_s / (4 * len(words)))
    timings = []
    for word, start, end in zip(words, edges[:-1], edges[1:], strict=True):
        timings.append(WordTiming(word, float(start), float(end - gap)))
        audio[round((end - gap) * SAMPLE_RATE) : round(end * SAMPLE_RATE)] = 0.0
    return audio, tuple(timings)
