"""Every voice and blend at the same loudness: EBU R128 integrated loudness (pyloudnorm) of a few reference
sentences of different shapes (a statement, a question, an exclamation, a list, a one-word reply), each said on its
own and their loudness averaged, measured once per engine and voice, cached on disk, and applied as a gain.

Pure part: ``gain_for`` (dB to reach the target, bounded) and ``measure`` (LUFS of samples). The adapter part:
``measure_voice`` synthesizes the reference sentences through any engine (local or remote) and ``LoudnessCache``
keeps the measurements in a small JSON file, so a voice costs one synthesis the first time only.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from voicedesk.engine.api import Engine
from voicedesk.engine.audio import pcm16_to_float
from voicedesk.engine.errors import VoicedeskError
from voicedesk.engine.events import SAMPLE_RATE, Audio, Closed, Error, SessionConfig

log = logging.getLogger(__name__)

TARGET_LUFS = -20.0
"""Where every voice is brought: loud enough to be heard over a room, with headroom below full scale."""
MAX_GAIN_DB = 24.0
REFERENCE_SENTENCES = (
    "Attention please. The front door is open, and the washing machine has finished its cycle. "
    "Dinner will be ready in ten minutes.",
    "Is anyone home?",
    "Warning! Smoke detected in the kitchen!",
    "The temperature outside is twelve degrees, with light rain expected after four o'clock.",
    "Okay.",
    "Reminder: take the bins out tonight; collection is at seven, not eight.",
)
"""Averaged, not joined: one sentence's loudness depends on its shape, and the mean over shapes is what an unseen
sentence is nearest to (over 4 unseen sentences with random weights: 1.9 LU mean spread, against 2.4 LU from the
first one alone; docs/house.md)."""
REFERENCE_TEXT = REFERENCE_SENTENCES[0]


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


async def synthesize_reference(engine: Engine, voice: str, text: str = REFERENCE_TEXT) -> np.ndarray:
    """The reference sentence in ``voice``, as float samples (raises ``VoicedeskError`` on an engine error)."""
    session = await engine.open_session(SessionConfig(voice=voice, max_buffer_delay_ms=0))
    parts: list[bytes] = []

    async def send() -> None:
        await session.send_text(text)
        await session.close()  # says everything, then the session ends with Closed

    sender = asyncio.ensure_future(send())
    try:
        async for event in session.events():
            match event:
                case Audio(_seq, pcm):
                    parts.append(pcm)
                case Error(_code, message):
                    raise LoudnessError(f"the engine could not say the reference sentence in {voice}: {message}")
                case Closed():
                    break
        await sender
    finally:
        sender.cancel()
        await session.aclose()
    return pcm16_to_float(b"".join(parts))


async def measure_voice(engine: Engine, voice: str, sentences: Sequence[str] = REFERENCE_SENTENCES) -> float:
    """The mean loudness (LUFS) of ``sentences``, each said on its own in ``voice``."""
    if not sentences:
        raise LoudnessError("no reference sentence to measure")
    return float(np.mean([measure(await synthesize_reference(engine, voice, text)) for text in sentences]))


class LoudnessCache:
    """Measured loudness per (engine, voice), kept in ``path`` (JSON)."""

    def __init__(
        self, path: Path | None, target: float = TARGET_LUFS, reference: Sequence[str] = REFERENCE_SENTENCES
    ) -> None:
        self.path = path
        self.target = target
        self.reference = tuple(reference)
        self._lufs: dict[str, float] = {}
        self._measuring: dict[str, asyncio.Future[float]] = {}
        if path is not None and path.exists():
            try:
                data = json.loads(path.read_text())
                self._lufs = {str(k): float(v) for k, v in data.items()}
            except (OSError, ValueError, TypeError, AttributeError) as exc:
                log.warning("ignoring the loudness cache %s (%s); voices are measured again", path, exc)

    @staticmethod
    def key(engine: Engine, voice: str) -> str:
        # The same voice name sounds alike on any engine that runs the same model; keying by engine kind keeps
        # a stand-in or another model's measurement from being applied to Kokoro.
        return f"{engine.info.kind}:{voice}"

    async def gain(self, engine: Engine, voice: str) -> float:
        """The gain for ``voice`` on ``engine`` (measured on first use; 1.0 when it cannot be measured)."""
        key = self.key(engine, voice)
        if key not in self._lufs:
            try:
                self._lufs[key] = await self._measure_once(key, engine, voice)
            except (VoicedeskError, LoudnessError) as exc:
                log.warning("could not measure the loudness of %s (%s); playing it unchanged", voice, exc)
                return 1.0
            self._save()
        return gain_for(self._lufs[key], self.target)

    async def _measure_once(self, key: str, engine: Engine, voice: str) -> float:
        pending = self._measuring.get(key)
        if pending is None:

            async def run() -> float:
                return await measure_voice(engine, voice, self.reference)

            pending = self._measuring[key] = asyncio.ensure_future(run())
            pending.add_done_callback(lambda _f: self._measuring.pop(key, None))
        return await asyncio.shield(pending)

    def _save(self) -> None:
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(self._lufs, indent=1, sort_keys=True))
        except OSError as exc:
            log.warning("could not save the loudness cache %s: %s", self.path, exc)
