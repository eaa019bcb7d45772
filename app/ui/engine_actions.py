"""The engine side of the window: choosing and connecting (with consent before a token travels unencrypted),
the background health check, downloading the model or a voice, importing model files, and which voices the
selected engine has.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from voicedesk.app.choices import engine_spec
from voicedesk.app.engines import EngineState, EngineStatus
from voicedesk.app.health import HealthMonitor, HealthRecord
from voicedesk.app.messages import error_text
from voicedesk.app.notices import Topic
from voicedesk.app.ui.dialogs import ask
from voicedesk.app.urls import ENGINE_SCHEMES, host_of, url_problem
from voicedesk.engine.clients.websocket import normalize_url, server_voices
from voicedesk.engine.errors import ErrorCode, VoicedeskError
from voicedesk.engine.model.voices import KNOWN_VOICES, VoiceInfo

if TYPE_CHECKING:
    from voicedesk.app.ui.console_window import ConsoleWindow

from voicedesk.engine.engine_spec import TOKEN_ENV

SAGEMAKER_VOICES_NOTE = (
    "A SageMaker endpoint cannot list its voices; a voice it lacks is reported when you speak (the reply "
    "then keeps the voice it had)."
)


class EngineActions:
    def __init__(
        self,
        window: ConsoleWindow,
        model_fetcher: Callable[..., object] | None,
        model_importer: Callable[..., object] | None,
    ) -> None:
        self.window = window
        self._fetcher = model_fetcher
        self._importer = model_importer
        self.remote_voices: list[str] | None = None
        hub, controller = window.hub, window.controller
        self.health = HealthMonitor(
            kind=lambda: hub.spec.kind,
            target=lambda: hub.spec.target or "",
            connected=lambda: controller.connected,
            reconnect=self._reconnect,
            on_change=self._health_changed,
            interval_s=window.settings.engine.health_interval_s,
        )

    # ---- choosing and connecting --------------------------------------------------------------------

    async def select(self) -> None:
        """Uses the engine the card describes (Connect, Enter, a tab): connects at once, always trying again."""
        window = self.window
        window.sidebar.store(window.settings)
        card = window.sidebar.engine
        if card.ws_url.text() != window.settings.engine.websocket_url:
            card.ws_url.setText(window.settings.engine.websocket_url)  # the one form, shown as it is used
        window.controller.failover_enabled = window.settings.engine.failover_to_local
        token = window.sidebar.engine.ws_token.text()
        spec = engine_spec(window.settings, token)
        window.status.clear(Topic.ENGINE, Topic.VOICE)
        self.remote_voices = None
        blocked = None
        if spec.kind == "websocket" and not await self._may_send_token(spec.target or "", token):
            blocked = (
                "Not connected: you chose not to send the token over an unencrypted connection. Use a wss:// "
                "address, or press Connect and allow it."
            )
        self.health.reset()
        await window.controller.use_engine(spec, blocked=blocked)
        self.health.check_now()

    async def _may_send_token(self, url: str, token: str) -> bool:
        """A token goes over ws:// to another machine only with the person's yes (asked once per host)."""
        if not (token or os.environ.get(TOKEN_ENV)) or url_problem(url, ENGINE_SCHEMES) is not None:
            return True
        consent = self.window.consent
        allowed = consent.decided(url)
        if allowed is False and self.window.connect_clicked:
            allowed = None  # Connect pressed again: ask again
        if allowed is None:
            allowed = await ask(
                self.window,
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
        window = self.window
        spec = window.hub.spec
        if spec.kind == "websocket" and window.consent.decided(spec.target or "") is False:
            return False
        return await window.controller.reconnect()

    def _health_changed(self, record: HealthRecord) -> None:
        window = self.window
        if window.hub.spec.kind == "local":
            window.sidebar.engine.show_health("")
        else:
            window.sidebar.engine.show_health(record.summary(self.health.interval_s))
        window.refresh_desktop()

    def status_changed(self, status: EngineStatus) -> None:
        """Reacts to a new engine status: voices, health line."""
        if status.state is EngineState.READY:
            self.window.status.clear(Topic.ENGINE)
            if status.kind == "local":
                self.window.spawn(self.show_local_voices())
            elif status.kind == "websocket":
                self.window.spawn(self.show_remote_voices())
            else:
                self.window.sidebar.voice.set_voices(list(KNOWN_VOICES), None, "")
                self.window.sidebar.voice.set_note(SAGEMAKER_VOICES_NOTE)
        if status.kind == "local":
            self.window.sidebar.engine.show_health("")

    # ---- voices -------------------------------------------------------------------------------------

    async def show_local_voices(self) -> None:
        """The local engine's voices, as ``Engine.voices()`` lists them."""
        self.window.sidebar.voice.set_note("")
        engine = self.window.hub.local_engine
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
        self.window.sidebar.voice.set_voices(names, usable, missing_hint, unready_languages=unready)

    async def show_remote_voices(self) -> None:
        """The WebSocket server's own list (``GET /v1/audio/voices``): voices it lacks are marked."""
        spec = self.window.hub.spec
        token = spec.token or os.environ.get(TOKEN_ENV)
        if token and self.window.consent.decided(spec.target or "") is not True:
            token = None  # the same rule as for the connection: never unencrypted to another host unasked
        try:
            found = await server_voices(normalize_url(spec.target or ""), token, 5.0)
        except VoicedeskError as exc:
            note = f"Could not ask the server which voices it has: {error_text(exc, 'websocket')}"
            self.window.sidebar.voice.set_note(note)
            return
        voices = [voice.name for voice in found if voice.usable]
        if self.window.hub.spec != spec:
            return
        self.remote_voices = voices
        self._show_voices(
            found,
            "{names} is not on this WebSocket server, so it would speak in another voice. Pick a voice the "
            "server has (they are not marked), or have its operator add the voice or set up its language.",
        )
        self.window.sidebar.voice.set_note("")

    async def download_voice(self, name: str) -> None:
        window = self.window
        loop = asyncio.get_running_loop()
        voice = window.sidebar.voice
        voice.message.setText(f"Downloading {name}…")
        try:
            await window.hub.fetch_voice(name, lambda text: loop.call_soon_threadsafe(voice.message.setText, text))
        except VoicedeskError as exc:
            voice.message.setText(error_text(exc, "local"))
            window.notice(error_text(exc, "local"), "error", Topic.VOICE)
            return
        await self.show_local_voices()
        window.voice_changed()
        window.notice(f"The voice {name} is downloaded.", "info", Topic.VOICE)

    # ---- model files --------------------------------------------------------------------------------

    async def download_model(self) -> None:
        window = self.window
        loop = asyncio.get_running_loop()
        try:
            await window.hub.fetch_models(lambda text: loop.call_soon_threadsafe(self._progress, text))
        except VoicedeskError as exc:
            window.notice(error_text(exc, "local"), "error", Topic.MODEL)
            return
        window.notice("The model is downloaded and loaded.", "info", Topic.MODEL)

    async def import_models(self, folder: Path) -> bool:
        """``voicedesk models import`` from the window: checks every file, copies, then loads the model."""
        from voicedesk.engine.model.model_import import import_dir

        window = self.window
        loop = asyncio.get_running_loop()
        importer = self._importer or import_dir
        self._progress(f"Checking the files in {folder}…")
        try:
            await asyncio.to_thread(
                importer, folder, report=lambda text: loop.call_soon_threadsafe(self._progress, text)
            )
        except VoicedeskError as exc:
            window.notice(error_text(exc, "local"), "error", Topic.MODEL)
            window.sidebar.engine.message.setText(error_text(exc, "local"))
            return False
        except OSError as exc:
            error = VoicedeskError(ErrorCode.WEIGHTS_MISSING, f"Could not import from {folder}: {exc}")
            window.notice(error_text(error), "error", Topic.MODEL)
            return False
        window.status.clear(Topic.MODEL)
        if window.hub.spec.kind == "local":
            try:
                await window.hub.local()
            except VoicedeskError:
                return False
        await self.show_local_voices()
        window.notice(f"Imported the model files from {folder}.", "info", Topic.MODEL)
        return True

    def _progress(self, text: str) -> None:
        card = self.window.sidebar.engine
        card.message.setText(text)
        card.message.show()
        self.window.notice(text, "info", Topic.MODEL)
