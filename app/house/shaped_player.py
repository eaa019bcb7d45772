"""The announcer's player: the chime, then the speech at its loudness and volume, in one stream; positions leave the
chime out, so "heard up to …" and word timings line up with the speech."""

from __future__ import annotations

import os

import numpy as np

from voicedesk.app.playback_buffer import PlaybackBuffer
from voicedesk.app.player import AudioPlayer
from voicedesk.engine.audio import pcm16_to_float
from voicedesk.engine.events import SAMPLE_RATE

ROLE = "announcement"


def mark_announcement_role(environ: dict[str, str] | None = None, role: str = ROLE) -> str:
    """``media.role`` in PULSE_PROP reaches every stream (PortAudio cannot set one's), so the server can duck."""
    env = os.environ if environ is None else environ
    parts = [p for p in env.get("PULSE_PROP", "").split() if not p.startswith("media.role=")]
    env["PULSE_PROP"] = " ".join([*parts, f"media.role={role}"])
    return env["PULSE_PROP"]


class ShapedPlayer:
    def __init__(self, player: AudioPlayer) -> None:
        self.player = player
        self.gain = 1.0
        self._chime: np.ndarray | None = None
        self._lead_in = 0  # samples of chime before the current utterance

    @property
    def buffer(self) -> PlaybackBuffer:
        return self.player.buffer

    def __getattr__(self, name: str) -> object:
        # The window shapes its own player for a house announcement: what it asks of a player besides the
        # controller's part (device, underflows, close) is the wrapped player's.
        return getattr(self.player, name)

    def prepare(self, loudness_gain: float, volume: float, chime: np.ndarray | None) -> None:
        """For the next utterance; ``chime`` at the player's rate."""
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
