"""Where the sound goes: the window's output, the outputs saved phrases ask for, and the list to choose from.

Each output is opened once and stays open (playing silence between replies, so no start of speech is clipped). With no
usable output the window says so and keeps working. It is given the few things it works with, not the window."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable

from voicedesk.app.controller import SpeechController
from voicedesk.app.messages import error_text
from voicedesk.app.notices import Topic
from voicedesk.app.settings import AppSettings
from voicedesk.app.ui.sidebar import OutputCard
from voicedesk.app.ui.status_line import StatusLine
from voicedesk.app.ui.widgets import BannerStack


class OutputActions:
    def __init__(
        self,
        controller: SpeechController,
        settings: AppSettings,
        card: OutputCard,
        banners: BannerStack,
        status: StatusLine,
        player_factory: Callable[..., object],
        settings_changed: Callable[[], None],
    ) -> None:
        self._controller, self._settings, self._card, self._banners = controller, settings, card, banners
        self._status, self._player_factory, self._settings_changed = status, player_factory, settings_changed
        self.players: dict[str, object] = {}
        """Open audio outputs by device (the window's own, and those saved phrases asked for)."""
        self.choices: list[tuple[str, str, str]] = []
        """(key, title, detail) of every output found."""

    async def open_player(self) -> None:
        """(Re)opens the window's audio output, as the Output card says."""
        await self._controller.stop()
        self.close_all()
        self._settings.output_device = self._card.value()
        self._settings_changed()
        await self.use(self._settings.output_device)

    async def use(self, device: str) -> None:
        """Makes ``device`` the output of what is said next (opening it once)."""
        from voicedesk.app.player import AudioDeviceError

        player = self.players.get(device)
        if player is None:
            try:
                player = self._player_factory(device, self._controller.on_player_event, asyncio.get_running_loop())
                player.open()
            except AudioDeviceError as exc:
                self._no_audio(device, error_text(exc))
                return
            self.players[device] = player
        self._controller.player = player
        if device == self._settings.output_device:
            self._banners.dismiss("audio")
            self._status.clear(Topic.AUDIO)

    def close_all(self) -> None:
        for player in self.players.values():
            player.close()
        self.players.clear()
        self._controller.player = None

    def refresh(self) -> None:
        """Lists the outputs again (PulseAudio's sinks by name, else PortAudio's devices)."""
        from voicedesk.app.outputs import list_outputs
        from voicedesk.app.player import AudioDeviceError, output_devices

        try:
            names = output_devices()
        except AudioDeviceError:
            names = []
        self.choices = [(c.key, c.title, c.detail) for c in list_outputs(names)]
        self._card.set_devices(self.choices, self._settings.output_device)

    def _no_audio(self, device: str, message: str) -> None:
        reason = re.split(r"\s+Pick another", message)[0]  # the rest is the CLI's advice
        if device != self._settings.output_device:  # a phrase's own output: it plays on the window's instead
            self._status.post(f"{reason} Playing on the window's output instead.", "warning", Topic.AUDIO)
            self._controller.player = self.players.get(self._settings.output_device)
            return
        self._banners.show_message(
            "audio",
            f"<b>No audio output.</b> {reason}<br>Pick another output device, or keep going without sound: "
            "speech is still made and shown, and File ▸ Save last reply as WAV writes it to a file.",
            "warning",
        )
        self._status.post("No audio output: replies are kept so you can save them as WAV.", "warning", Topic.AUDIO)
        self._controller.player = None
