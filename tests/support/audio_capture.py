"""Capture what a real PortAudio stream sends to the private PulseAudio null sink (see tests/support/headless.sh).

Follows the four null-sink rules from the desktop-testing note: wait for capture data before playing, play
silence before the signal, play out latency + a block after it, ignore underflow flags before the first sample.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest


def require_null_sink() -> str:
    """The sink name, or skip (fail when VOICEDESK_REQUIRE_AUDIO=1, as tests/run.sh sets)."""
    sink = os.environ.get("VOICEDESK_TEST_SINK")
    if sink:
        return sink
    message = "no private PulseAudio null sink: run the suite through tests/run.sh"
    if os.environ.get("VOICEDESK_REQUIRE_AUDIO") == "1":
        pytest.fail(message)
    pytest.skip(message)


class SinkCapture:
    """``parec`` of the sink's monitor into a file (a pipe loses its last partial chunk on SIGTERM)."""

    def __init__(self, sink: str, sample_rate: int = 24_000) -> None:
        self.sink = sink
        self.sample_rate = sample_rate
        self._dir = tempfile.TemporaryDirectory(prefix="voicedesk-capture-")
        self.path = Path(self._dir.name) / "capture.f32"
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> SinkCapture:
        with self.path.open("wb") as out:
            self._proc = subprocess.Popen(
                [
                    "parec",
                    "-d",
                    f"{self.sink}.monitor",
                    "--format=float32le",
                    f"--rate={self.sample_rate}",
                    "--channels=1",
                    "--raw",
                ],
                stdout=out,
            )
        # Rule 1: an idle null sink renders in ~2 s blocks; playing before data flows loses the start.
        deadline = time.monotonic() + 10
        while self.path.stat().st_size == 0:
            if time.monotonic() > deadline:
                raise RuntimeError("parec delivered no data within 10 s")
            time.sleep(0.02)
        return self

    def stop(self) -> np.ndarray:
        if self._proc is not None:
            self._proc.send_signal(signal.SIGTERM)
            self._proc.wait(10)
            self._proc = None
        return np.fromfile(self.path, dtype="<f4")

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait(10)
        self._dir.cleanup()


def locate(haystack: np.ndarray, needle: np.ndarray) -> int:
    """Offset of ``needle`` in ``haystack`` by cross-correlation of its first 4096 samples (noise aligns)."""
    probe = needle[: min(len(needle), 4096)].astype(np.float64)
    corr = np.correlate(haystack.astype(np.float64), probe, mode="valid")
    return int(np.argmax(corr))


def find(haystack: np.ndarray, needle: np.ndarray) -> tuple[int, float]:
    """Where ``needle`` best fits in ``haystack`` (FFT cross-correlation), and how well (normalised, 1 = exactly)."""
    n = 1 << (len(haystack) + len(needle)).bit_length()
    dots = np.fft.irfft(np.fft.rfft(haystack, n) * np.conj(np.fft.rfft(needle, n)), n)[: len(haystack) - len(needle)]
    energies = np.convolve(haystack.astype(np.float64) ** 2, np.ones(len(needle)), "valid")[: len(dots)]
    weight = float(needle @ needle)
    fit = dots / np.sqrt(np.maximum(energies, 1e-4 * weight) * weight + 1e-12)  # silence (-40 dB) fits nothing
    return int(np.argmax(fit)), float(np.max(fit))


def gaps(audio: np.ndarray, rate: int = 16_000, at_least_s: float = 0.005) -> list[tuple[int, int]]:
    """(first quiet sample, first loud one after) of each silence in what the sink played (the last: to the end).
    Quiet is under -60 dBFS: noise at -20 dBFS is never that quiet for 5 ms; the sink's silence always is."""
    loud = np.append(np.flatnonzero(np.abs(audio) > 1e-3), len(audio) + rate)
    jumps = np.flatnonzero(np.diff(loud) > at_least_s * rate)
    return [(int(loud[j]) + 1, int(loud[j + 1])) for j in jumps]
