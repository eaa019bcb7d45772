"""The window's engine actions: connecting (asking before a token travels unencrypted), the health check, model
and voice downloads, and which voices the selected engine has."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from voicedesk.app.choices import engine_spec
from voicedesk.app.engines import EngineState, EngineStatus, HealthMonitor, HealthRecord
from voicedesk.app.messages import error_text
from voicedesk.app.notices import Topic
from voicedesk.app.ui.forms import ask
from voicedesk.app.urls import ENGINE_SCHEMES, host_of, url_problem
from voicedesk.engine.clients.websocket import normalize_url, server_voices
from voicedesk.engine.errors import ErrorCode, VoicedeskError
from voicedesk.engine.model.voices import KNOWN_VOICES, VoiceInfo

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget

    from voicedesk.app.controller import SpeechController
    from voicedesk.app.engines import EngineHub
    from voicedesk.app.settings import AppSettings
    from voicedesk.app.ui.sidebar import Sidebar
    from voicedesk.app.ui.status_line import StatusLine
    from voicedesk.app.urls import SecretConsent

from voicedesk.engine.engine_spec import TOKEN_ENV

SAGEMAKER_VOICES_NOTE = (
    "A SageMaker endpoint cannot list its voices; a voice it lacks is reported when you speak (the reply "
    "then keeps the voice it had)."
)


class EngineActions:
    def __init__(
        self,
        parent: QWidget,
        settings: AppSettings,
        hub: EngineHub,
        controller: SpeechController,
        sidebar: Sidebar,
        status: StatusLine,
        consent: SecretConsent,
        spawn: Callable[..., object],
        refresh_desktop: Callable[[], None],
        voice_changed: Callable[[], None],
        model_fetcher: Callable[..., object] | None,
        model_importer: Callable[..., object] | None,
    ) -> None:
        """``refresh_desktop``: the tray shows the engine's health; ``voice_changed``: a downloaded voice is used."""
        self.parent, self.settings, self.hub, self.controller = parent, settings, hub, controller
        self.sidebar, self.status, self.consent, self.spawn = sidebar, status, consent, spawn
        self.refresh_desktop, self.voice_changed = refresh_desktop, voice_changed
        self._fetcher = model_fetcher
        self._importer = model_importer
        self.remote_voices: list[str] | None = None
        self.health = HealthMonitor(
            kind=lambda: self.hub.spec.kind,
            target=lambda: self.hub.spec.target or "",
            connected=lambda: self.controller.connected,
            reconnect=self._reconnect,
            on_change=self._health_changed,
            interval_s=settings.engine.health_interval_s,
        )

    async def select(self, clicked: bool = False) -> None:
        """Connects to the engine the card describes; ``clicked``: Connect was pressed (a refusal is asked again)."""
        self.sidebar.store(self.settings)
        card = self.sidebar.engine
        if card.ws_url.text() != self.settings.engine.websocket_url:
            card.ws_url.setText(self.settings.engine.websocket_url)  # the one form, shown as it is used
        self.controller.failover_enabled = self.settings.engine.failover_to_local
        token = self.sidebar.engine.ws_token.text()
        spec = engine_spec(self.settings, token)
        self.status.clear(Topic.ENGINE, Topic.VOICE)
        self.remote_voices = None
        blocked = None
        if spec.kind == "websocket" and not await self._may_send_token(spec.target or "", token, clicked):
            blocked = (
                "Not connected: you chose not to send the token over an unencrypted connection. Use a wss:// "
                "address, or press Connect and allow it."
            )
        self.health.reset()
        await self.controller.use_engine(spec, blocked=blocked)
        self.health.check_now()

    async def _may_send_token(self, url: str, token: str, clicked: bool) -> bool:
        if not (token or os.environ.get(TOKEN_ENV)) or url_problem(url, ENGINE_SCHEMES) is not None:
            return True
        consent = self.consent
        allowed = consent.decided(url)
        if allowed is False and clicked:
            allowed = None  # Connect pressed again: ask again
        if allowed is None:
            allowed = await ask(
                self.parent,
                "Send the token unencrypted?",
                f"The WebSocket server {url} is on another machine ({host_of(url)}) and the address starts with "
                "ws://, so the token would cross the network unencrypted.\n\nUse wss:// if the server offers it. "
                "Send the token anyway?",
                "Send the token",
                "Don't connect",
            )
            consent.record(url, allowed)
        return allowed

    async def _reconnect(self) -> bool:
        spec = self.hub.spec
        if spec.kind == "websocket" and self.consent.decided(spec.target or "") is False:
            return False
        if self.hub.status.code == ErrorCode.UNAUTHORIZED:
            return False  # the same token would be refused again, and wipe the card's "Type it in the Token field"
        return await self.controller.reconnect()

    def _health_changed(self, record: HealthRecord) -> None:
        if self.hub.spec.kind == "local":
            self.sidebar.engine.show_health("")
        else:
            self.sidebar.engine.show_health(record.summary(self.health.interval_s))
        self.refresh_desktop()

    def status_changed(self, status: EngineStatus) -> None:
        if status.state is EngineState.READY:
            self.status.clear(Topic.ENGINE)
            if status.kind == "local":
                self.spawn(self.show_local_voices())
            elif status.kind == "websocket":
                self.spawn(self.show_remote_voices())
            else:
                self.sidebar.voice.set_voices(list(KNOWN_VOICES), None, "")
                self.sidebar.voice.set_note(SAGEMAKER_VOICES_NOTE)
        if status.kind == "local":
            self.sidebar.engine.show_health("")

    async def show_local_voices(self) -> None:
        self.sidebar.voice.set_note("")
        engine = self.hub.local_engine
        if engine is None:
            return
        try:
            found = await engine.voices() or ()
        except Exception:  # the list is a convenience; every voice stays choosable when it fails
            return
        self._show_voices(found, "")

    def _show_voices(self, found: Sequence[VoiceInfo], missing_hint: str) -> None:
        names = list(dict.fromkeys([*KNOWN_VOICES, *(voice.name for voice in found)]))
        usable = {voice.name for voice in found if voice.usable}
        unready = {voice.name[:1] for voice in found if not voice.language_ready}
        self.sidebar.voice.set_voices(names, usable, missing_hint, unready_languages=unready)

    async def show_remote_voices(self) -> None:
        """The server's own list (``GET /v1/audio/voices``): voices it lacks are marked."""
        spec = self.hub.spec
        token = spec.token or os.environ.get(TOKEN_ENV)
        if token and self.consent.decided(spec.target or "") is not True:
            token = None  # the same rule as for the connection: never unencrypted to another host unasked
        try:
            found = await server_voices(normalize_url(spec.target or ""), token, 5.0)
        except VoicedeskError as exc:
            note = f"Could not ask the server which voices it has: {error_text(exc, 'websocket')}"
            self.sidebar.voice.set_note(note)
            return
        voices = [voice.name for voice in found if voice.usable]
        if self.hub.spec != spec:
            return
        self.remote_voices = voices
        self._show_voices(
            found,
            "{names} is not on this WebSocket server, so it would speak in another voice. Pick a voice the "
            "server has (they are not marked), or have its operator add the voice or set up its language.",
        )
        self.sidebar.voice.set_note("")

    async def download_voice(self, name: str) -> None:
        loop = asyncio.get_running_loop()
        voice = self.sidebar.voice
        voice.message.setText(f"Downloading {name}…")
        try:
            await self.hub.fetch_voice(name, lambda text: loop.call_soon_threadsafe(voice.message.setText, text))
        except VoicedeskError as exc:
            voice.message.setText(error_text(exc, "local"))
            self.status.post(error_text(exc, "local"), "error", Topic.VOICE)
            return
        await self.show_local_voices()
        self.voice_changed()
        self.status.post(f"The voice {name} is downloaded.", "info", Topic.VOICE)

    async def download_model(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            await self.hub.fetch_models(lambda text: loop.call_soon_threadsafe(self._progress, text))
        except VoicedeskError as exc:
            self.status.post(error_text(exc, "local"), "error", Topic.MODEL)
            return
        self.status.post("The model is downloaded and loaded.", "info", Topic.MODEL)

    async def import_models(self, folder: Path) -> bool:
        from voicedesk.engine.model.model_import import import_dir

        loop = asyncio.get_running_loop()
        importer = self._importer or import_dir
        self._progress(f"Checking the files in {folder}…")
        try:
            await asyncio.to_thread(
                importer, folder, report=lambda text: loop.call_soon_threadsafe(self._progress, text)
            )
        except VoicedeskError as exc:
            self.status.post(error_text(exc, "local"), "error", Topic.MODEL)
            self.sidebar.engine.message.setText(error_text(exc, "local"))
            return False
        except OSError as exc:
            error = VoicedeskError(ErrorCode.WEIGHTS_MISSING, f"Could not import from {folder}: {exc}")
            self.status.post(error_text(error), "error", Topic.MODEL)
            return False
        self.status.clear(Topic.MODEL)
        if self.hub.spec.kind == "local":
            try:
                await self.hub.local()
            except VoicedeskError:
                return False
        await self.show_local_voices()
        self.status.post(f"Imported the model files from {folder}.", "info", Topic.MODEL)
        return True

    def _progress(self, text: str) -> None:
        card = self.sidebar.engine
        card.message.setText(text)
        card.message.show()
        self.status.post(text, "info", Topic.MODEL)
