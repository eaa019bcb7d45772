"""Every voice and blend at one loudness: EBU R128 integrated loudness (pyloudnorm) learnt from what each voice
actually said, kept per engine and voice on disk, applied as a gain.

Nothing waits for a measurement: a voice not heard yet plays at ``DEFAULT_GAIN`` (as the engine makes it, never
amplified), and each announcement's audio refines its voice's estimate afterwards, on a worker thread, with no
synthesis of its own (measuring by synthesis held the house's first announcement for half a minute on a CPU).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from pathlib import Path

import numpy as np

from voicedesk.engine.audio import pcm16_to_float
from voicedesk.engine.events import SAMPLE_RATE

log = logging.getLogger(__name__)

TARGET_LUFS = -20.0
"""Where every voice is brought: loud enough to be heard over a room, with headroom below full scale."""
MAX_GAIN_DB = 24.0
DEFAULT_GAIN = 1.0
"""A voice not measured yet plays as the engine makes it: never boosted before its loudness is known."""
LEARNT_FROM = 20
"""The estimate is the mean of the first announcements, then a moving average over about this many."""


class LoudnessError(ValueError):
    pass


def measure(samples: np.ndarray, rate: int = SAMPLE_RATE) -> float:
    """Integrated loudness (LUFS, EBU R128 / ITU-R BS.1770) of mono float samples."""
    import pyloudnorm

    if len(samples) < int(0.4 * rate):  # one gating block
        raise LoudnessError(f"{len(samples) / rate:.2f} s of audio is too short to measure (0.4 s at least)")
    lufs = float(pyloudnorm.Meter(rate).integrated_loudness(np.asarray(samples, dtype=np.float64)))
    if not math.isfinite(lufs):
        raise LoudnessError("the audio is silent: it has no loudness to measure")
    return lufs


def gain_for(lufs: float, target: float = TARGET_LUFS) -> float:
    """Linear gain that brings audio measured at ``lufs`` to ``target`` (bounded to ±``MAX_GAIN_DB``)."""
    db = max(-MAX_GAIN_DB, min(MAX_GAIN_DB, target - lufs))
    return 10 ** (db / 20)


class LoudnessCache:
    """Learnt loudness per key (``engine kind:voice``): (mean LUFS, announcements measured), kept in ``path``."""

    def __init__(self, path: Path | None, target: float = TARGET_LUFS) -> None:
        self.path = path
        self.target = target
        self.learnt: dict[str, tuple[float, int]] = {}
        if path is not None and path.exists():
            try:
                data = json.loads(path.read_text())
                self.learnt = {str(k): (float(v[0]), int(v[1])) for k, v in data.items()}
            except (OSError, ValueError, TypeError, KeyError, IndexError) as exc:
                log.warning("ignoring the loudness cache %s (%s); voices are learnt again", path, exc)

    def gain(self, key: str) -> float:
        """At once: the gain for ``key``'s voice, or ``DEFAULT_GAIN`` while it has said nothing measurable."""
        learnt = self.learnt.get(key)
        return DEFAULT_GAIN if learnt is None else gain_for(learnt[0], self.target)

    async def learn(self, key: str, pcm16: bytes) -> None:
        """Refines ``key``'s estimate with audio it said (too short or silent: ignored)."""
        try:
            lufs = await asyncio.to_thread(measure, pcm16_to_float(pcm16))
        except LoudnessError:
            return
        mean, count = self.learnt.get(key, (lufs, 0))
        count = min(count + 1, LEARNT_FROM)
        self.learnt[key] = (mean + (lufs - mean) / count, count)
        self._save()

    def _save(self) -> None:
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(self.learnt, indent=1, sort_keys=True))
        except OSError as exc:
            log.warning("could not save the loudness cache %s: %s", self.path, exc)
