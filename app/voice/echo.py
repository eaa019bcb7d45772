"""Removes the console's own voice from the microphone: WebRTC's audio processing (livekit's APM, AEC3).

The reference is exactly what the player handed the sound card (``AudioPlayer(tap=canceller.played)``), silence
included, so the canceller's delay estimate stays locked between utterances. Everything runs in 10 ms frames at
16 kHz; ``played`` is called from PortAudio's output thread and only appends to a deque.
"""

from __future__ import annotations

from collections import deque

import numpy as np

RATE = 16_000
FRAME = RATE // 100
PLAYER_RATE = 24_000


class EchoCanceller:
    def __init__(self, delay_ms: int = 60, noise_suppression: bool = False) -> None:
        import soxr
        from livekit import rtc

        self._rtc = rtc
        self._apm = rtc.AudioProcessingModule(
            echo_cancellation=True, noise_suppression=noise_suppression, high_pass_filter=True
        )
        self._apm.set_stream_delay_ms(delay_ms)
        self.delay_ms = delay_ms
        self._played: deque[np.ndarray] = deque(maxlen=200)  # ~8 s of player blocks if nobody reads them
        self._resample = soxr.ResampleStream(PLAYER_RATE, RATE, 1, dtype="float32")
        self._reference = np.zeros(0, np.float32)
        self._mic = np.zeros(0, np.float32)

    def played(self, block: np.ndarray) -> None:
        """The player's tap: one block (24 kHz float32) just handed to the device."""
        self._played.append(block.copy())

    def process(self, mic: np.ndarray) -> np.ndarray:
        """Microphone samples (16 kHz float32) in, echo-free samples out (whole 10 ms frames; the rest waits)."""
        # Reference first, all of it: the canceller must have heard a sound before its echo arrives.
        chunks = [self._reference] + [
            self._resample.resample_chunk(self._played.popleft()) for _ in range(len(self._played))
        ]
        self._reference = self._each_frame(np.concatenate(chunks), self._apm.process_reverse_stream)[1]
        out, self._mic = self._each_frame(np.concatenate([self._mic, mic]), self._apm.process_stream)
        return out

    def _each_frame(self, samples: np.ndarray, process: object) -> tuple[np.ndarray, np.ndarray]:
        """Runs ``process`` on each whole 10 ms frame in place: (processed frames, the samples left over)."""
        frames = len(samples) // FRAME
        out = np.empty(frames * FRAME, np.float32)
        for i in range(frames):
            frame = self._frame(samples[i * FRAME : (i + 1) * FRAME])
            process(frame)  # type: ignore[operator]
            out[i * FRAME : (i + 1) * FRAME] = np.frombuffer(frame.data, np.int16) / 32768.0
        return out, samples[frames * FRAME :]

    def _frame(self, samples: np.ndarray) -> object:
        pcm = (np.clip(samples, -1.0, 1.0) * 32767).astype(np.int16)
        return self._rtc.AudioFrame(bytearray(pcm.tobytes()), RATE, 1, FRAME)
