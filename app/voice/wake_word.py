"""A wake word ("okay nabu") that opens a turn: Home Assistant's microWakeWord models (``pymicro-wakeword``), whose
TFLite models and runtime ship in its wheel, so nothing is downloaded and no torch is needed.

Fed the listener's 16 kHz float32 blocks; ``feed`` says whether the wake word ended in them.
"""

from __future__ import annotations

import numpy as np

from voicedesk.engine.errors import UsageError

WAKE_WORDS = ("okay_nabu", "hey_jarvis", "hey_mycroft", "alexa")
"""The models in pymicro-wakeword's wheel (``Model``)."""


class WakeWord:
    def __init__(self, name: str) -> None:
        from pymicro_wakeword import MicroWakeWord, MicroWakeWordFeatures, Model

        if name not in WAKE_WORDS:
            raise UsageError(f"Unknown wake word {name!r}.", f"Use one of {', '.join(WAKE_WORDS)}.")
        self.name = name
        self._detector = MicroWakeWord.from_builtin(Model(name))
        self._features = MicroWakeWordFeatures()
        self.phrase: str = self._detector.wake_word
        """As the model names it, e.g. "Okay Nabu"."""

    def feed(self, block: np.ndarray) -> bool:
        """True when the wake word was heard in ``block``; the detector then starts afresh, so one utterance of it
        is one detection (its probability stays high for a few windows)."""
        pcm = (np.clip(block, -1.0, 1.0) * 32767).astype("<i2").tobytes()
        for features in self._features.process_streaming(pcm):
            if self._detector.process_streaming(features):
                self._detector.reset()
                return True
        return False
