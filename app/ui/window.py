"""The main window: wires the widgets to the controller, the player and the settings file.

Everything slow (model load, connecting, synthesis, agent requests) runs as asyncio tasks on Qt's own loop
(qasync) or on worker threads; the Qt thread only draws and reacts.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from pathlib import Path

from PySide6.QtCore import QByteArray, Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QHBoxLayout, QLabel, QMainWindow, QSplitter, QVBoxLayout, QWidget

from app.choices import default_player_factory, engine_spec, make_source, whole
from app.controller import SpeechController
from app.conversation import Turn, TurnKind
from app.engines import KIND_LABELS, EngineHub, EngineOpener, EngineState, EngineStatus
from app.settings import load_settings, save_settings
from app.sources import ChatMessage
from app.ui.ab_panel import AbRunsAction, window_engines
from app.ui.composer import Composer
from app.ui.conversation_view import ConversationView
from app.ui.file_actions import FileActions
from app.ui.latency_panel import LatencyPanel
from app.ui.sidebar import Sidebar, voice_title
from app.ui.theme import PALETTE
from app.ui.widgets import AppHeader, BannerStack
from engine.errors import VoicedeskError
from engine.events import SessionConfig
from engine.factory import open_engine
from engine.timeline import UtteranceTimeline

log = logging.getLogger(__name__)

PlayerFactory = Callable[..., object]
HIGHLIGHT_INTERVAL_MS = 40
NOTICE_COLORS = {"info": PALETTE.text_secondary, "warning": PALETTE.warning, "error": PALETTE.error}


class MainWindow(QMainWindow):
    shut_down = Signal()
    """Emitted once the window has shut everything down (the app's main loop ends on it)."""

    def __init__(
        self,
        settings_path: Path,
        engine_opener: EngineOpener = open_engine,
        player_factory: PlayerFactory = default_player_factory,
        model_fetcher: Callable[..., object] | None = None,
    ) -> None:
        super().__init__()
        self.settings_path = settings_path
        loaded = load_settings(settings_path)
        self.settings = loaded.settings
        self._player_factory = player_factory
        self._tasks: set[asyncio.Future[object]] = set()
        self._closing = False
        self._shutdown: asyncio.Future[None] | None = None
        self._loading = True  # widgets being filled from the settings: their signals are not edits
        self.setWindowTitle("voicedesk")
        self.resize(1240, 780)
        self._build()
        self.hub = EngineHub(self.engine_status, engine_opener, engine_spec(self.settings, kind="local"), model_fetcher)
        self.controller = SpeechController(self.hub, self)
        self.player = None
        self.sidebar.load(self.settings)
        self.composer.set_mode(self.settings.composer_mode)
        self._apply_voice()
        self.controller.failover_enabled = self.settings.engine.failover_to_local
        if self.settings.window_geometry:
            self.restoreGeometry(QByteArray.fromHex(self.settings.window_geometry.encode()))
        self._update_source_label()
        self._loading = False
        if loaded.message:
            self.banners.show_message("settings", loaded.message, "warning")
            self.notice(loaded.message, "warning")

    # ---- layout -----------------------------------------------------------------------------------

    def _build(self) -> None:
        root = QWidget()
        root.setObjectName("Root")
        outer = QVBoxLayout(root)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(0)
        header = AppHeader()
        self.header_engine, self.header_status = header.engine, header.status
        outer.addWidget(header)
        body = QHBoxLayout()
        body.setContentsMargins(0, 0, 0, 0)
        body.setSpacing(0)
        self.sidebar = Sidebar()
        body.addWidget(self.sidebar)
        center = QVBoxLayout()
        center.setContentsMargins(0, 0, 0, 0)
        center.setSpacing(0)
        self.banners = BannerStack()
        banner_box = QVBoxLayout()
        banner_box.setContentsMargins(20, 12, 20, 0)
        banner_box.addWidget(self.banners)
        center.addLayout(banner_box)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setChildrenCollapsible(False)
        self.conversation = ConversationView()
        self.latency = LatencyPanel()
        latency_box = QWidget()
        latency_layout = QVBoxLayout(latency_box)
        latency_layout.setContentsMargins(20, 4, 20, 12)
        latency_layout.addWidget(self.latency)
        splitter.addWidget(self.conversation)
        splitter.addWidget(latency_box)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        splitter.setSizes([400, 210])
        center.addWidget(splitter, 1)
        self.composer = Composer()
        center.addWidget(self.composer)
        body.addLayout(center, 1)
        outer.addLayout(body, 1)
        self.setCentralWidget(root)
        self.status_text = QLabel()
        self.status_text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.statusBar().addWidget(self.status_text, 1)
        self.statusBar().setSizeGripEnabled(False)
        self._notice_timer = QTimer(self, singleShot=True, interval=10_000)
        self._notice_timer.timeout.connect(lambda: self.status_text.setText(""))
        self.files = FileActions(self, self.latency.save, self.controller_wav, self.notice)
        self.ab_runs = AbRunsAction(self, lambda: window_engines(self))
        self._connect()

    def _connect(self) -> None:
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self, activated=self.request_stop)
        for keys in ("Ctrl+Return", "Ctrl+Enter"):
            QShortcut(QKeySequence(keys), self, activated=self.request_speak)
        self.composer.speak_requested.connect(self.request_speak)
        self.composer.stop_requested.connect(self.request_stop)
        self.composer.mode_changed.connect(self._mode_changed)
        engine = self.sidebar.engine
        engine.kind_changed.connect(lambda _kind: self._select_engine())
        engine.connect_requested.connect(self._select_engine)
        engine.download_requested.connect(lambda: self.spawn(self.download_model()))
        engine.changed.connect(self._settings_changed)
        self.sidebar.voice.changed.connect(self._voice_changed)
        self.sidebar.voice.preview_requested.connect(lambda: self.spawn(self.preview_voice()))
        self.sidebar.output.changed.connect(lambda: self.spawn(self.open_player()))
        self.sidebar.output.refresh.clicked.connect(self._refresh_devices)
        self.sidebar.agent.changed.connect(self._agent_changed)
        self.latency.export_requested.connect(self.files.export_dialog)
        self._save_timer = QTimer(self, singleShot=True, interval=400)
        self._save_timer.timeout.connect(self.save_settings)
        self._highlight = QTimer(self, interval=HIGHLIGHT_INTERVAL_MS)
        self._highlight.timeout.connect(self._tick)
        self._highlight.start()

    # ---- start and stop ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Opens the audio output and the selected engine (the window is usable while they come up)."""
        self._refresh_devices()
        await self.open_player()
        await self.controller.use_engine(engine_spec(self.settings, self.sidebar.engine.ws_token.text()))

    def shutdown(self) -> asyncio.Future[None]:
        """Saves the settings, stops speech, closes the engines and the audio output; closing then is instant.

        Idempotent: every caller (the close button, a test) awaits the same shutdown to its end.
        """
        if self._shutdown is None:
            self._closing = True
            self._shutdown = asyncio.ensure_future(self._shut_down())
        return self._shutdown

    async def _shut_down(self) -> None:
        self._highlight.stop()
        self.save_settings()
        try:
            await self.controller.aclose()
        finally:
            if self.player is not None:
                self.player.close()
                self.player = self.controller.player = None
            for task in list(self._tasks):
                task.cancel()
            self.shut_down.emit()

    def closeEvent(self, event) -> None:
        if self._closing:
            event.accept()
            return
        event.ignore()
        self.hide()

        async def finish() -> None:
            await self.shutdown()
            self.close()

        self.spawn(finish())

    def spawn(self, coro: Awaitable[object]) -> asyncio.Future[object]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Future[object]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if isinstance(error, VoicedeskError):
            self.notice(error.message, "error")
        elif error is not None:
            log.error("a background task failed", exc_info=error)
            self.notice(f"Something went wrong: {error!r}", "error")

    # ---- actions ----------------------------------------------------------------------------------

    def request_speak(self) -> None:
        self.spawn(self.speak())

    def request_stop(self) -> None:
        self.spawn(self.controller.stop())

    async def speak(self) -> Turn | None:
        text = self.composer.text().strip()
        if not text:
            self.notice("Type something to say first.", "info")
            self.composer.editor.setFocus()
            return None
        if self.composer.mode.value() == "speak":
            return await self.controller.speak(TurnKind.SPEAK, text, whole(text))
        self.sidebar.store(self.settings)
        try:
            source = make_source(self.settings)
        except VoicedeskError as exc:
            self.notice(exc.message, "error")
            return None
        messages = [*self.controller.history, ChatMessage("user", text)]
        turn = await self.controller.speak(TurnKind.AGENT, text, source.reply(messages))
        if turn is not None:
            self.composer.editor.clear()
        return turn

    async def preview_voice(self) -> Turn | None:
        name = self.settings.voice.voice
        blend = self.settings.voice.blend_with
        said = voice_title(name).split(" · ")[0]
        if blend and blend != name:
            said += f" blended with {voice_title(blend).split(' · ')[0]}"
        return await self.controller.speak(TurnKind.PREVIEW, said, whole(f"Hello, this is {said}."))

    async def open_player(self) -> None:
        """(Re)opens the audio output on the chosen device; without one, replies can still be saved as WAV."""
        from app.player import AudioDeviceError

        await self.controller.stop()
        if self.player is not None:
            self.player.close()
            self.player = self.controller.player = None
        device = self.sidebar.output.value()
        self.settings.output_device = device
        self._settings_changed()
        try:
            player = self._player_factory(device, self.controller.on_player_event, asyncio.get_running_loop())
            player.open()
        except AudioDeviceError as exc:
            reason = re.split(r"\s+Pick another", exc.message)[0]  # the rest is the CLI's advice
            self.banners.show_message(
                "audio",
                f"<b>No audio output.</b> {reason}<br>Pick another output device, or keep going without sound: "
                "speech is still made and shown, and File ▸ Save last reply as WAV writes it to a file.",
                "warning",
            )
            self.notice("No audio output: replies are kept so you can save them as WAV.", "warning")
            return
        self.player = self.controller.player = player
        self.banners.dismiss("audio")

    async def download_model(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            await self.hub.fetch_models(lambda text: loop.call_soon_threadsafe(self._download_progress, text))
        except VoicedeskError as exc:
            self.notice(exc.message, "error")
            return
        self.notice("The model is downloaded and loaded.", "info")

    def _download_progress(self, text: str) -> None:
        self.sidebar.engine.message.setText(text)
        self.sidebar.engine.message.show()
        self.notice(text, "info")

    def _select_engine(self) -> None:
        self.sidebar.store(self.settings)
        self._settings_changed()
        self.controller.failover_enabled = self.settings.engine.failover_to_local
        self.spawn(self.controller.use_engine(engine_spec(self.settings, self.sidebar.engine.ws_token.text())))

    def _refresh_devices(self) -> None:
        from app.player import AudioDeviceError, output_devices

        try:
            names = output_devices()
        except AudioDeviceError:
            names = []
        self.sidebar.output.set_devices(names, self.settings.output_device)

    def controller_wav(self) -> bytes | None:
        return self.controller.reply_wav()

    def export_timeline(self, kind: str, path: Path) -> None:
        self.files.export_timeline(kind, path)

    def save_wav(self, path: Path) -> None:
        self.files.save_wav(path)

    # ---- ControllerListener -------------------------------------------------------------------------

    def turn_changed(self, turn: Turn) -> None:
        current = self.controller.run
        position = self.controller.heard_position() if current is not None and current.turn is turn else None
        self.conversation.show_turn(turn, position)
        self.composer.set_speaking(current is not None and current.turn.active)

    def timeline_changed(self, turn: Turn, timeline: UtteranceTimeline) -> None:
        last = self.controller.last_run
        if last is not None and last.turn is turn:
            self.latency.set_timeline(timeline)

    def engine_status(self, status: EngineStatus) -> None:
        self.sidebar.engine.show_status(status.state, status.title, status.detail, status.message)
        label = KIND_LABELS.get(status.kind, status.kind)
        self.header_engine.setText(f"{label} engine")
        self.header_status.show_state(status.state, status.title, status.detail)
        if status.state is EngineState.READY and status.kind == "local":
            self._show_local_voices()

    def notice(self, text: str, level: str = "info") -> None:
        color = NOTICE_COLORS.get(level, PALETTE.text_secondary)
        mark = {"warning": "⚠ ", "error": "⚠ "}.get(level, "")
        self.status_text.setText(f"<span style='color:{color}'>{mark}{text}</span>")
        self.status_text.setToolTip(text)
        if level == "info":
            self._notice_timer.start()
        else:
            self._notice_timer.stop()

    # ---- reacting to the sidebar ------------------------------------------------------------------

    def _tick(self) -> None:
        run = self.controller.run
        if run is not None and run.turn.active:
            self.conversation.show_turn(run.turn, self.controller.heard_position())

    def _show_local_voices(self) -> None:
        synthesizer = getattr(self.hub.local_engine, "synthesizer", None)
        if synthesizer is None:
            return
        try:
            available = set(synthesizer.list_voices())
        except Exception:  # the list is a convenience; every voice stays choosable when it fails
            return
        from engine.voices import KNOWN_VOICES

        names = list(dict.fromkeys([*KNOWN_VOICES, *sorted(available)]))
        self.sidebar.voice.set_voices(names, available)

    def _apply_voice(self) -> None:
        self.controller.voice = SessionConfig(self.settings.voice.spec(), self.settings.voice.speed)

    def _voice_changed(self) -> None:
        if self._loading:
            return
        self.sidebar.voice.store(self.settings)
        self._apply_voice()
        self._settings_changed()

    def _agent_changed(self) -> None:
        if self._loading:
            return
        self.sidebar.agent.store(self.settings)
        self._update_source_label()
        self._settings_changed()

    def _mode_changed(self, mode: str) -> None:
        if self._loading:
            return
        self.settings.composer_mode = mode
        self._update_source_label()
        self._settings_changed()

    def _update_source_label(self) -> None:
        if self.composer.mode.value() != "agent":
            self.composer.set_source_label("Reads your text aloud, sentence by sentence, as soon as each is ready.")
            return
        source = self.settings.source
        names = {
            "scripted": f"Scripted agent · replays your text at {source.scripted_tokens_per_s:g} tokens/s",
            "openai": f"{source.openai_model or 'model?'} on {source.openai_base_url or 'server?'}",
            "bedrock": f"Amazon Bedrock · {source.bedrock_model_id or 'model?'}",
        }
        self.composer.set_source_label(f"Agent: {names.get(source.kind, source.kind)}")

    def _settings_changed(self) -> None:
        if self._loading:
            return
        self._save_timer.start()

    def save_settings(self) -> None:
        self.sidebar.store(self.settings)
        self.settings.composer_mode = self.composer.mode.value() or "speak"
        self.settings.window_geometry = bytes(self.saveGeometry().toHex()).decode()
        try:
            save_settings(self.settings, self.settings_path)
        except OSError as exc:
            self.notice(f"Could not save the settings to {self.settings_path}: {exc}", "error")
