"""Sentence seams (pure numpy): Kokoro pads each chunk with uneven silence, so the lead-in is trimmed and the tail set
to the pause its punctuation calls for, with short fades against clicks."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from voicedesk.engine.events import SAMPLE_RATE, WordTiming
from voicedesk.engine.text.chunking.sentence_ends import CJK_TERMINALS, TERMINALS

WINDOW_S = 0.010
THRESHOLD_DBFS = -45.0
LEAD_IN_S = 0.040
FADE_S = 0.005
SENTENCE_PAUSE_S = 0.300
CLAUSE_PAUSE_S = 0.150
OPEN_PAUSE_S = 0.100

SENTENCE_ENDS = TERMINALS | CJK_TERMINALS
"""Every script's sentence end the chunker knows (Hindi's ``।`` got the 0.1 s of an open end)."""
CLAUSE_ENDS = frozenset(",;:—–、，；：")
CLOSERS = frozenset("\"'”’»)]}」』】")


@dataclass(frozen=True, slots=True)
class ShapedAudio:
    audio: np.ndarray
    """float32, mono, 24 kHz."""
    words: tuple[WordTiming, ...]
    duration_s: float


def trailing_pause_s(text: str) -> float:
    """The pause after a sentence, from its last punctuation mark (closing quotes and brackets skipped)."""
    stripped = text.rstrip()
    while stripped and stripped[-1] in CLOSERS:
        stripped = stripped[:-1].rstrip()
    if stripped and stripped[-1] in SENTENCE_ENDS:
        return SENTENCE_PAUSE_S
    if stripped and stripped[-1] in CLAUSE_ENDS:
        return CLAUSE_PAUSE_S
    return OPEN_PAUSE_S


def loud_span(audio: np.ndarray, threshold_dbfs: float = THRESHOLD_DBFS) -> tuple[int, int] | None:
    """[start, end) in samples of the first to the last 10 ms window above the threshold; None if all quiet."""
    window = round(WINDOW_S * SAMPLE_RATE)
    count = -(-len(audio) // window)
    if count == 0:
        return None
    padded = np.zeros(count * window, dtype=np.float64)
    padded[: len(audio)] = audio
    mean_square = np.mean(padded.reshape(count, window) ** 2, axis=1)
    # The last window is partial: average over the samples it really has.
    mean_square[-1] *= window / (len(audio) - (count - 1) * window)
    loud = np.flatnonzero(mean_square > 10.0 ** (threshold_dbfs / 10.0))
    if loud.size == 0:
        return None
    return int(loud[0]) * window, min(len(audio), (int(loud[-1]) + 1) * window)


def raised_cosine(length: int) -> np.ndarray:
    """Rises from exactly 0 towards 1 over ``length`` samples."""
    return (0.5 - 0.5 * np.cos(np.pi * np.arange(length) / max(length, 1))).astype(np.float32)


def shape_sentence(audio: np.ndarray, text: str, words: tuple[WordTiming, ...] = ()) -> ShapedAudio:
    samples = np.nan_to_num(np.asarray(audio, dtype=np.float32).reshape(-1), nan=0.0, posinf=1.0, neginf=-1.0)
    if samples.size == 0:
        return ShapedAudio(np.zeros(0, dtype=np.float32), (), 0.0)
    pause = round(trailing_pause_s(text) * SAMPLE_RATE)
    span = loud_span(samples)
    if span is None:
        # Nothing audible (e.g. only punctuation): keep the sentence's rhythm with its pause alone.
        return ShapedAudio(np.zeros(pause, dtype=np.float32), (), pause / SAMPLE_RATE)
    loud_start, loud_end = span
    start = max(0, loud_start - round(LEAD_IN_S * SAMPLE_RATE))
    stop = min(len(samples), loud_end + pause)
    kept = samples[start:stop].copy()
    fade = min(round(FADE_S * SAMPLE_RATE), len(kept) // 2)
    if fade:
        ramp = raised_cosine(fade)
        kept[:fade] *= ramp
        kept[-fade:] *= ramp[::-1]
    shaped = np.zeros(loud_end - start + pause, dtype=np.float32)
    shaped[: len(kept)] = kept
    duration = len(shaped) / SAMPLE_RATE
    return ShapedAudio(shaped, shift_words(words, start / SAMPLE_RATE, duration), duration)


def shift_words(words: tuple[WordTiming, ...], shift_s: float, duration_s: float) -> tuple[WordTiming, ...]:
    """Moves timings earlier by the trimmed lead-in, clipped to the shaped audio."""
    shifted = []
    for word in words:
        start = min(max(word.start_s - shift_s, 0.0), duration_s)
        end = min(max(word.end_s - shift_s, start), duration_s)
        shifted.append(replace(word, start_s=start, end_s=end))
    return tuple(shifted)
