"""Where the sound goes: the window's output, the outputs saved phrases ask for, and the list to choose from.

Each output is opened once and stays open (playing silence between replies, so no start of speech is clipped);
what is said next goes to the one ``use`` picked. With no usable output the window says so and keeps working:
replies are still made, shown and can be saved as WAV.
"""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING

from voicedesk.app.messages import error_text
from voicedesk.app.notices import Topic

if TYPE_CHECKING:
    from voicedesk.app.ui.window import MainWindow


class OutputActions:
    def __init__(self, window: MainWindow) -> None:
        self.window = window

    async def open_player(self) -> None:
        """(Re)opens the window's audio output, as the Output card says."""
        window = self.window
        await window.controller.stop()
        for player in window.players.values():
            player.close()
        window.players.clear()
        self._set(None)
        window.settings.output_device = window.sidebar.output.value()
        window.settings_changed()
        await self.use(window.settings.output_device)

    async def use(self, device: str) -> None:
        """Makes ``device`` the output of what is said next (opening it once)."""
        from voicedesk.app.player import AudioDeviceError

        window = self.window
        player = window.players.get(device)
        if player is None:
            try:
                player = window.player_factory(device, window.controller.on_player_event, asyncio.get_running_loop())
                player.open()
            except AudioDeviceError as exc:
                self._no_audio(device, error_text(exc))
                return
            window.players[device] = player
        self._set(player)
        if device == window.settings.output_device:
            window.banners.dismiss("audio")
            window.status.clear(Topic.AUDIO)

    def refresh(self) -> None:
        """Lists the outputs again (PulseAudio's sinks by name, else PortAudio's devices)."""
        from voicedesk.app.outputs import list_outputs
        from voicedesk.app.player import AudioDeviceError, output_devices

        window = self.window
        try:
            names = output_devices()
        except AudioDeviceError:
            names = []
        window.output_choices = [(c.key, c.title, c.detail) for c in list_outputs(names)]
        window.sidebar.output.set_devices(window.output_choices, window.settings.output_device)

    def _set(self, player) -> None:
        self.window.player = self.window.controller.player = player

    def _no_audio(self, device: str, message: str) -> None:
        window = self.window
        reason = re.split(r"\s+Pick another", message)[0]  # the rest is the CLI's advice
        if device != window.settings.output_device:  # a phrase's own output: it plays on the window's instead
            window.notice(f"{reason} Playing on the window's output instead.", "warning", Topic.AUDIO)
            self._set(window.players.get(window.settings.output_device))
            return
        window.banners.show_message(
            "audio",
            f"<b>No audio output.</b> {reason}<br>Pick another output device, or keep going without sound: "
            "speech is still made and shown, and File ▸ Save last reply as WAV writes it to a file.",
            "warning",
        )
        window.notice("No audio output: replies are kept so you can save them as WAV.", "warning", Topic.AUDIO)
        self._set(None)
