"""Gapless playback through PortAudio (sounddevice): a thin adapter around ``PlaybackBuffer``.

The output stream stays open and plays silence between utterances, the way an always-on console should: a
stream started per utterance loses its first milliseconds and its tail (see docs in README, "Audio").
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from voicedesk.app.dac_clock import DacClock
from voicedesk.app.playback_buffer import PlaybackBuffer, SentenceOnset
from voicedesk.engine.audio import pcm16_to_float
from voicedesk.engine.errors import LocalErrorCode, VoicedeskError
from voicedesk.engine.events import SAMPLE_RATE

OUTPUT_LATENCY_S = 0.1
"""The device's buffer. PortAudio's 'high' (35 ms on ALSA) underflowed 18 times a minute with Kokoro, VAD and STT
busy, and each underflow reconnected ALSA's pulse stream: silent up to 1.9 s on a null sink (docs/voice.md)."""
PLAYER_AHEAD_S = 4.0
"""Audio a player may hold before its feeder stops taking more from the session (backpressure)."""
ROOM_POLL_S = 0.05


async def wait_for_room(buffer: PlaybackBuffer, ahead_s: float = PLAYER_AHEAD_S) -> None:
    """Returns once ``buffer`` holds less than ``ahead_s`` of audio (or is not playing). A feeder that awaits this
    before taking more audio from a session lets the session know its listener is behind, so the engine stops
    synthesizing ahead instead of filling this buffer."""
    # Drained by the real-time audio thread, which must not call into the event loop: so a poll, not an Event.
    while buffer.playing and buffer.queued_samples >= ahead_s * SAMPLE_RATE:  # noqa: ASYNC110
        await asyncio.sleep(ROOM_POLL_S)


class AudioDeviceError(VoicedeskError):
    def __init__(self, message: str) -> None:
        super().__init__(LocalErrorCode.AUDIO_DEVICE, message)


def import_sounddevice() -> Any:
    try:
        import sounddevice
    except OSError as exc:
        raise AudioDeviceError(
            f"Audio output is unavailable: {exc}. Install PortAudio (Debian/Ubuntu: "
            "`sudo apt install libportaudio2`; macOS: `brew install portaudio`), or write audio to a file instead."
        ) from None
    return sounddevice


def output_devices() -> list[str]:
    """Names of the output devices PortAudio sees (empty when there is none)."""
    sd = import_sounddevice()
    try:
        return [d["name"] for d in sd.query_devices() if d["max_output_channels"] > 0]
    except sd.PortAudioError:
        return []


@dataclass(frozen=True, slots=True)
class PlayerEvent:
    kind: str
    """'onset' (a sentence's first sample reaches the DAC), 'finished' (utterance played out), 'underrun' (a stall
    began: once per stall, not per audio callback), 'stall_end' (it ended; ``duration_s`` long)."""
    seq: int | None = None
    monotonic: float = 0.0
    duration_s: float = 0.0


class AudioPlayer:
    def __init__(
        self,
        device: str | int | None = None,
        prebuffer_s: float = 0.15,
        latency: str | float = OUTPUT_LATENCY_S,
        on_event: Callable[[PlayerEvent], None] | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
        tap: Callable[[np.ndarray, int], None] | None = None,
    ) -> None:
        self.device = device
        self.tap = tap
        """Called in the audio thread with each block handed to the device and the frames of silence it played
        before that nobody wrote (a stall): the echo canceller's reference, in step with what was heard."""
        self.latency = latency
        self.buffer = PlaybackBuffer(SAMPLE_RATE, prebuffer_s)
        self.dac_clock = DacClock(SAMPLE_RATE)
        self._on_event = on_event
        self._loop = loop
        self._stream: Any = None
        self.device_underflows = 0
        """PortAudio's own output-underflow flags raised while speech was playing (rule: ignore at start)."""
        self._finished = threading.Event()
        self._finished.set()

    # ---- lifecycle --------------------------------------------------------------------------------

    def open(self) -> None:
        if self._stream is not None:
            return
        sd = import_sounddevice()
        self.dac_clock = DacClock(SAMPLE_RATE)  # a new stream counts its samples from 0
        from voicedesk.app.outputs import pulse_sinks, routed_to, sink_name

        sink = sink_name(str(self.device)) if isinstance(self.device, str) else None
        if sink is not None and sink not in {name for name, _ in pulse_sinks()}:
            raise AudioDeviceError(
                f"The output {sink!r} is not connected (PulseAudio has no sink of that name). Pick another output."
            )
        try:
            with routed_to(self.device if isinstance(self.device, str) else "") as device:
                stream = sd.OutputStream(
                    samplerate=SAMPLE_RATE,
                    channels=1,
                    dtype="float32",
                    device=device if isinstance(self.device, str) or self.device is None else self.device,
                    latency=self.latency,
                    callback=self._callback,
                )
                stream.start()
        except (sd.PortAudioError, ValueError) as exc:
            devices = output_devices()
            hint = f"Output devices seen: {', '.join(devices)}." if devices else "PortAudio sees no output device."
            raise AudioDeviceError(
                f"Cannot open the audio output ({exc}). {hint} Pick another output device, or write audio to a file "
                "instead (`voicedesk say --out FILE`)."
            ) from None
        self._stream = stream

    def close(self) -> None:
        self._finished.set()  # a wait_finished() thread must not outlive the stream (it would hold up the exit)
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.stop()
            stream.close()

    def __enter__(self) -> AudioPlayer:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def output_latency_s(self) -> float:
        return float(self._stream.latency) if self._stream is not None else 0.0

    # ---- feeding ----------------------------------------------------------------------------------

    def begin_utterance(self) -> None:
        self._finished.clear()
        self.buffer.begin_utterance()

    def push(self, pcm16: bytes, seq: int | None = None) -> None:
        self._finished.clear()
        self.buffer.write(pcm16_to_float(pcm16), seq)

    def push_float(self, samples: np.ndarray, seq: int | None = None) -> None:
        self._finished.clear()
        self.buffer.write(samples, seq)

    def end_utterance(self) -> None:
        self.buffer.end_utterance()
        if self.buffer.idle:
            self._finished.set()

    def interrupt(self, fade_s: float = 0.03) -> float:
        """Fades out within ``fade_s`` and drops queued audio; returns seconds of the utterance heard."""
        heard = self.buffer.interrupt(fade_s)
        self._finished.set()
        return heard / SAMPLE_RATE

    @property
    def position_s(self) -> float:
        """How far into the current utterance playback has gone (samples handed to the device)."""
        return self.buffer.played_samples / SAMPLE_RATE

    async def wait_finished(self) -> None:
        """Returns once the utterance has been played out to the device (plus its output latency)."""
        await asyncio.to_thread(self._finished.wait)
        await asyncio.sleep(self.output_latency_s)  # the last block is still in the device's queue

    # ---- audio thread -----------------------------------------------------------------------------

    def _callback(self, outdata: np.ndarray, frames: int, time_info: Any, status: Any) -> None:
        now = time.monotonic()
        dac_delay = float(time_info.outputBufferDacTime - time_info.currentTime)
        if not 0.0 < dac_delay < 2.0:  # zeros (ALSA, after an underflow) or garbage: fall back to the stream latency
            dac_delay = self.output_latency_s
        if status.output_underflow:
            self.dac_clock.resync()  # the device played silence nobody wrote: sample counts no longer line up
        dac_time = self.dac_clock.block(frames, now + dac_delay)
        lost = round(self.dac_clock.take_lost() * SAMPLE_RATE)  # the device went quiet: a stall, if mid-utterance
        result = self.buffer.read_into(outdata[:, 0], dac_time, lost)
        if self.tap is not None:
            self.tap(outdata[:, 0], lost)
        if result.onsets and not self.dac_clock.pinned:
            self.dac_clock.pin()  # this block's time came from the estimate pinned here: the rest follow it
        elif not self.buffer.playing:
            self.dac_clock.unpin()  # played out or interrupted: between utterances the estimate moves again
        if status.output_underflow and self.buffer.playing:
            self.device_underflows += 1
        for onset in result.onsets:
            self._deliver(PlayerEvent("onset", onset.seq, onset.dac_time))
        if result.stall_started:
            self._deliver(PlayerEvent("underrun", None, now))
        if result.stall_ended_s is not None:
            self._deliver(PlayerEvent("stall_end", None, now, result.stall_ended_s))
        if result.finished:
            self._finished.set()
            self._deliver(PlayerEvent("finished", None, dac_time))

    def _deliver(self, event: PlayerEvent) -> None:
        if self._on_event is None:
            return
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._on_event, event)
        else:
            self._on_event(event)


__all__ = ["AudioDeviceError", "AudioPlayer", "PlayerEvent", "SentenceOnset", "output_devices"]
