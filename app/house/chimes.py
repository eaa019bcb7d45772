"""Chimes played before an announcement in the speech's own stream: built-in ones generated (no asset to ship),
or an operator's PCM WAV file."""

from __future__ import annotations

import wave
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from voicedesk.app.console.announcement import Priority
from voicedesk.engine.events import SAMPLE_RATE

NONE = "none"
PEAK = 0.5  # -6 dBFS: noticeable, not louder than the speech that follows
TAIL_S = 0.12  # silence before the first word


def _note(freq: float, seconds: float, decay_s: float, rate: int) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    partials = (
        np.sin(2 * np.pi * freq * t) + 0.3 * np.sin(2 * np.pi * 2 * freq * t) + 0.1 * np.sin(2 * np.pi * 3 * freq * t)
    )
    attack = np.minimum(t / 0.005, 1.0)  # 5 ms: no click
    envelope = attack * np.exp(-t / decay_s)
    envelope[-int(0.01 * rate) :] *= np.linspace(1.0, 0.0, int(0.01 * rate))
    return (partials * envelope).astype(np.float32)


def _sequence(notes: list[tuple[float, float, float]], rate: int) -> np.ndarray:
    """(frequency, start s, length s) notes mixed into one sound, normalized to ``PEAK``."""
    length = max(start + seconds for _, start, seconds in notes)
    out = np.zeros(int(length * rate) + 1, dtype=np.float32)
    for freq, start, seconds in notes:
        note = _note(freq, seconds, seconds / 3, rate)
        at = int(start * rate)
        out[at : at + len(note)] += note
    out *= PEAK / float(np.max(np.abs(out)))
    return np.concatenate([out, np.zeros(int(TAIL_S * rate), dtype=np.float32)])


BUILT_IN: dict[str, list[tuple[float, float, float]]] = {
    "ding": [(1318.5, 0.0, 0.45)],  # E6, once: low priority
    "dingdong": [(784.0, 0.0, 0.5), (622.3, 0.32, 0.6)],  # G5 then D#5: the doorbell
    "alert": [(1046.5, 0.0, 0.18), (1046.5, 0.22, 0.18), (1568.0, 0.44, 0.35)],  # urgent: three rising beeps
}
DEFAULT_CHIMES: dict[Priority, str] = {Priority.URGENT: "alert", Priority.NORMAL: "dingdong", Priority.LOW: "ding"}


class ChimeError(ValueError):
    pass


def built_in(name: str, rate: int = SAMPLE_RATE) -> np.ndarray:
    return _sequence(BUILT_IN[name], rate)


def load_wav(path: Path, rate: int = SAMPLE_RATE) -> np.ndarray:
    """A WAV file as mono float32 at ``rate``, peak-normalized to ``PEAK``; ``ChimeError`` says what is wrong."""
    try:
        with wave.open(str(path), "rb") as wav:
            width, channels, source_rate = wav.getsampwidth(), wav.getnchannels(), wav.getframerate()
            frames = wav.readframes(wav.getnframes())
    except (OSError, EOFError, wave.Error) as exc:
        raise ChimeError(f"cannot read the chime {path}: {exc}; give a PCM WAV file") from None
    if width == 2:
        samples = np.frombuffer(frames, "<i2").astype(np.float32) / 32768.0
    elif width == 4:
        samples = np.frombuffer(frames, "<i4").astype(np.float32) / 2**31
    elif width == 3:
        raw = np.frombuffer(frames, np.uint8).reshape(-1, 3)
        ints = raw[:, 0].astype(np.int32) | raw[:, 1].astype(np.int32) << 8 | raw[:, 2].astype(np.int32) << 16
        samples = (((ints << 8) >> 8).astype(np.float32)) / 2**23
    else:
        raise ChimeError(f"the chime {path} has {8 * width}-bit samples; use 16, 24 or 32-bit PCM")
    samples = samples.reshape(-1, channels).mean(axis=1)
    if not len(samples) or not np.any(samples):
        raise ChimeError(f"the chime {path} is silent")
    if len(samples) > 10 * source_rate:
        raise ChimeError(f"the chime {path} lasts {len(samples) / source_rate:.1f} s; a chime may last 10 s at most")
    if source_rate != rate:
        import soxr

        samples = soxr.resample(samples, source_rate, rate).astype(np.float32)
    samples *= PEAK / float(np.max(np.abs(samples)))
    return np.concatenate([samples, np.zeros(int(TAIL_S * rate), dtype=np.float32)])


class Chimes:
    def __init__(self, files: Mapping[str, Path] | None = None, defaults: Mapping[Priority, str] | None = None) -> None:
        self._sounds = {name: built_in(name) for name in BUILT_IN}
        for name, path in (files or {}).items():
            self._sounds[name] = load_wav(path)
        self.defaults = dict(DEFAULT_CHIMES if defaults is None else defaults)
        for priority, name in self.defaults.items():
            if name != NONE and name not in self._sounds:
                raise ChimeError(f"the {priority.label} chime {name!r} is not a chime: use {self.describe()}")

    @property
    def names(self) -> frozenset[str]:
        return frozenset([*self._sounds, NONE])

    def describe(self) -> str:
        return ", ".join(sorted(self.names))

    def for_announcement(self, name: str | None, priority: Priority) -> np.ndarray | None:
        chosen = self.defaults.get(priority, NONE) if name is None else name
        return None if chosen == NONE else self._sounds[chosen]
