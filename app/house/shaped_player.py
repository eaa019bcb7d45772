"""The announcer's player: the speech at its voice's loudness and its priority's volume, after its chime, in one
stream; and the stream marked to the sound server as an announcement.

``ShapedPlayer`` wraps ``app.player.AudioPlayer`` with what ``SpeechController`` needs of a player. Before each
announcement the runner calls ``prepare(gain, chime)``; ``begin_utterance`` then queues the chime first, so it is
played gaplessly before the first word (same buffer, same stream). Positions and "heard" times are reported
without the chime, so the controller's "heard up to …" and word timings still line up with the speech.

Role-based ducking: PulseAudio (and PipeWire's pulse server) read ``media.role`` from a stream's properties;
PortAudio has no API for stream properties, but ALSA's pulse plugin creates its libpulse context in this process,
and libpulse takes properties from the ``PULSE_PROP`` environment variable, which the server merges into every
stream of the client. ``mark_announcement_role`` sets it before the first stream opens.
"""

from __future__ import annotations

import os

import numpy as np

from voicedesk.app.playback_buffer import PlaybackBuffer
from voicedesk.app.player import AudioPlayer
from voicedesk.engine.audio import pcm16_to_float
from voicedesk.engine.events import SAMPLE_RATE

ROLE = "announcement"


def mark_announcement_role(environ: dict[str, str] | None = None, role: str = ROLE) -> str:
    """Adds ``media.role=<role>`` to PULSE_PROP (keeping what is there); returns the new value."""
    env = os.environ if environ is None else environ
    parts = [p for p in env.get("PULSE_PROP", "").split() if not p.startswith("media.role=")]
    env["PULSE_PROP"] = " ".join([*parts, f"media.role={role}"])
    return env["PULSE_PROP"]


class ShapedPlayer:
    def __init__(self, player: AudioPlayer) -> None:
        self.player = player
        self.gain = 1.0
        self._chime: np.ndarray | None = None
        self._lead_in = 0
        """Samples of chime at the start of the current utterance."""

    @property
    def buffer(self) -> PlaybackBuffer:
        return self.player.buffer

    def __getattr__(self, name: str) -> object:
        # The window shapes its own player for a house announcement: what it asks of a player besides the
        # controller's part (device, underflows, close) is the wrapped player's.
        return getattr(self.player, name)

    def prepare(self, loudness_gain: float, volume: float, chime: np.ndarray | None) -> None:
        """The next utterance: the voice's loudness gain, the priority's volume (speech and chime), its chime
        (samples at the player's rate; None: none)."""
        self.gain = loudness_gain * volume
        self._chime = None if chime is None else chime * volume

    def begin_utterance(self) -> None:
        self.player.begin_utterance()
        chime, self._chime = self._chime, None
        self._lead_in = 0 if chime is None else len(chime)
        if chime is not None:
            self.player.push_float(chime)

    def push(self, pcm16: bytes, seq: int | None = None) -> None:
        samples = pcm16_to_float(pcm16)
        if self.gain != 1.0:
            samples = np.clip(samples * self.gain, -1.0, 1.0)
        self.player.push_float(samples, seq)

    def end_utterance(self) -> None:
        self.player.end_utterance()

    def interrupt(self, fade_s: float = 0.03) -> float:
        heard = self.player.interrupt(fade_s)
        return max(heard - self._lead_in / SAMPLE_RATE, 0.0)

    @property
    def position_s(self) -> float:
        return max(self.player.position_s - self._lead_in / SAMPLE_RATE, 0.0)

    @property
    def output_latency_s(self) -> float:
        return self.player.output_latency_s

    async def wait_finished(self) -> None:
        await self.player.wait_finished()
