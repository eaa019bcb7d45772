"""Playing the lab's speech for real, to time its first sample at the DAC (``--play``).

Wraps ``app.player.AudioPlayer`` (PortAudio's output time per sentence onset, underrun counts) so its events
reach the probe of the utterance playing. Without a sound device the lab says so and reports the DAC stages
as absent; it never invents them.
"""

from __future__ import annotations

import asyncio

from voicedesk.app.lab.probe import PlayerListener
from voicedesk.app.player import AudioPlayer, PlayerEvent


class LabPlayer:
    """Implements ``app.lab.probe.PlaybackSink`` on an open ``AudioPlayer``."""

    def __init__(self, device: str | int | None = None, prebuffer_s: float = 0.15) -> None:
        self._listener: PlayerListener | None = None
        self.player = AudioPlayer(
            device, prebuffer_s=prebuffer_s, on_event=self._route, loop=asyncio.get_running_loop()
        )

    def open(self) -> LabPlayer:
        """Raises ``app.player.AudioDeviceError`` (with what to do) when there is no usable output."""
        self.player.open()
        return self

    def close(self) -> None:
        self.player.close()

    def begin_utterance(self, listener: PlayerListener) -> None:
        self._listener = listener
        self.player.begin_utterance()

    def push(self, pcm16: bytes, seq: int | None = None) -> None:
        self.player.push(pcm16, seq)

    def end_utterance(self) -> None:
        self.player.end_utterance()

    async def wait_finished(self) -> None:
        await self.player.wait_finished()

    def _route(self, event: PlayerEvent) -> None:
        if self._listener is not None and event.kind in ("onset", "underrun"):
            self._listener(event.kind, event.seq, event.monotonic)
