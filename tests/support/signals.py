"""Test signals: audio shaped like speech, without a model."""

from __future__ import annotations

import numpy as np

from voicedesk.engine.events import SAMPLE_RATE


def speech_like(seconds: float, rate: int = SAMPLE_RATE) -> bytes:
    """16-bit PCM of a 120 Hz voice with harmonics, syllable-rate loudness and pauses, so a lossless codec's ratio
    is roughly that of speech (the lab's format benchmark measures on the same shape)."""
    t = np.arange(int(seconds * rate)) / rate
    pitch = 120 + 20 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(pitch) / rate
    voice = sum(np.sin(k * phase) / k for k in range(1, 12))
    syllables = np.clip(np.sin(2 * np.pi * 3.0 * t), 0, None) ** 2
    pauses = (np.sin(2 * np.pi * 0.4 * t) > -0.6).astype(float)
    rng = np.random.default_rng(0)
    signal = 0.25 * voice * syllables * pauses + 0.002 * rng.standard_normal(len(t))
    return (np.clip(signal, -1, 1) * 32767).astype("<i2").tobytes()
