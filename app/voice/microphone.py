"""The microphone: a PortAudio input stream at 16 kHz mono, chosen by name, with a level for a meter.

Blocks go to ``on_block`` from PortAudio's thread with the monotonic time their last sample was captured. Nothing
is written anywhere. A microphone that goes away (unplugged, its PulseAudio source gone) either ends the stream or
just stops delivering, and PulseAudio quietly moves it to another source; ``check`` turns each into a
``MicrophoneLost`` the listener reports.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from voicedesk.app.outputs import PORTAUDIO_ALIASES, PULSE_SOURCE_PREFIX, pulse_sinks, routed_to
from voicedesk.app.player import AudioDeviceError, import_sounddevice

RATE = 16_000
BLOCK = 160
"""10 ms, the canceller's frame: with silero's 512-sample window as the block, the canceller's 10-ms frames left a
median 26 ms of each block waiting for the VAD's next window, and speech over the console paused it that much later."""
STALL_S = 1.0
FIRST_BLOCK_S = 5.0
"""A PulseAudio source that was idle may take ~2 s to deliver its first block."""


class MicrophoneLost(AudioDeviceError):
    pass


def input_choices() -> list[tuple[str, str]]:
    """(key, title) of the inputs to offer: PulseAudio's sources by description, then other PortAudio inputs."""
    sources = pulse_sinks("source")
    choices = [(f"{PULSE_SOURCE_PREFIX}{name}", description) for name, description in sources]
    sd = import_sounddevice()
    try:
        names = [d["name"] for d in sd.query_devices() if d["max_input_channels"] > 0]
    except sd.PortAudioError:
        names = []
    return choices + [(n, n) for n in names if not (sources and n in PORTAUDIO_ALIASES)]


class Microphone:
    def __init__(self, device: str = "", on_block: Callable[[np.ndarray, float], None] | None = None) -> None:
        self.device = device
        self.on_block = on_block
        self.level_dbfs = -120.0
        """The last block's RMS level, for a meter."""
        self._stream: Any = None
        self._last_block = 0.0
        self._ended = False
        self._asked = 0.0

    def open(self) -> None:
        if self._stream is not None:
            return
        sd = import_sounddevice()
        if self.connected is False:
            source = self.device.removeprefix(PULSE_SOURCE_PREFIX)
            raise AudioDeviceError(
                f"The microphone {source!r} is not connected. Pick another input, or plug it in: it is tried again."
            )
        try:
            with routed_to(self.device) as device:
                stream = sd.InputStream(
                    samplerate=RATE,
                    blocksize=BLOCK,
                    channels=1,
                    dtype="float32",
                    device=device,
                    callback=self._callback,
                    finished_callback=self._finished,
                )
                stream.start()
        except (sd.PortAudioError, ValueError) as exc:
            seen = ", ".join(title for _, title in input_choices()) or "none"
            raise AudioDeviceError(
                f"Cannot open the microphone ({exc}). Inputs seen: {seen}. Pick another input, or plug it in: it is "
                "tried again."
            ) from None
        self._stream, self._ended = stream, False
        self._last_block = time.monotonic() + FIRST_BLOCK_S - STALL_S

    def close(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.abort()
            stream.close()

    @property
    def is_open(self) -> bool:
        return self._stream is not None

    def check(self, now: float | None = None) -> None:
        """Raises ``MicrophoneLost`` if the stream ended by itself or has been silent (no blocks) too long."""
        if self._stream is None:
            return
        now = time.monotonic() if now is None else now
        quiet = now - self._last_block
        gone = False
        if now - self._asked >= 1.0:  # PulseAudio moves a stream whose source vanished to another: so ask
            self._asked, gone = now, self.connected is False
        if self._ended or quiet > STALL_S or gone:
            why = (
                "its stream ended"
                if self._ended
                else "its source is gone"
                if gone
                else f"no audio for over {STALL_S:g} s"
            )
            self.close()
            raise MicrophoneLost(
                f"The microphone stopped delivering sound ({why}): it was unplugged or taken by another program. "
                "Voice input is off; typing still works. Plug it back in: it is tried again."
            )

    @property
    def connected(self) -> bool | None:
        """Whether its PulseAudio source exists; None: not a PulseAudio source (PortAudio's list never changes)."""
        source = self.device.removeprefix(PULSE_SOURCE_PREFIX)
        return None if source == self.device else source in {name for name, _ in pulse_sinks("source")}

    def _callback(self, indata: np.ndarray, frames: int, time_info: Any, status: Any) -> None:
        now = time.monotonic()
        self._last_block = now
        samples = indata[:, 0].copy()
        rms = float(np.sqrt(np.mean(samples * samples))) if frames else 0.0
        self.level_dbfs = 20 * math.log10(max(rms, 1e-6))
        captured = now - max(0.0, float(time_info.currentTime - time_info.inputBufferAdcTime)) + frames / RATE
        if self.on_block is not None:
            self.on_block(samples, min(captured, now))

    def _finished(self) -> None:
        self._ended = self._stream is not None  # closed by us: not an error
