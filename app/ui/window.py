"""The main window: lays out the widgets and wires them to the controller, the player and the settings file.

Everything slow runs as asyncio tasks on Qt's own loop (qasync) or on worker threads; the Qt thread only draws and
reacts."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QPoint, QRect, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import QFileDialog, QMainWindow, QScrollArea, QSplitter, QVBoxLayout, QWidget

from voicedesk.app.choices import default_player_factory, engine_spec
from voicedesk.app.controller import SpeechController
from voicedesk.app.conversation import Turn
from voicedesk.app.engines import KIND_LABELS, EngineHub, EngineOpener, EngineState, EngineStatus
from voicedesk.app.history import History, default_history_path
from voicedesk.app.messages import error_text
from voicedesk.app.notices import Topic
from voicedesk.app.settings import load_settings, save_settings
from voicedesk.app.ui.agent_actions import AgentActions
from voicedesk.app.ui.announce_actions import AnnounceActions
from voicedesk.app.ui.composer import Composer
from voicedesk.app.ui.console_panel import ConsolePanel
from voicedesk.app.ui.conversation_view import ConversationView
from voicedesk.app.ui.desktop import DesktopIntegration
from voicedesk.app.ui.engine_actions import EngineActions
from voicedesk.app.ui.file_actions import FileActions
from voicedesk.app.ui.forms import FocusedWheel
from voicedesk.app.ui.latency_panel import LatencyPanel
from voicedesk.app.ui.output_actions import OutputActions
from voicedesk.app.ui.phrase_actions import PhraseActions
from voicedesk.app.ui.pronunciation_actions import PronunciationActions
from voicedesk.app.ui.sidebar import Sidebar
from voicedesk.app.ui.status_line import StatusLine
from voicedesk.app.ui.voice_actions import VoiceActions
from voicedesk.app.ui.widgets import AppHeader, BannerStack
from voicedesk.app.ui.window_size import LATENCY_ROWS, PREFERRED, fitted_geometry, latency_height
from voicedesk.engine.errors import ErrorCode, VoicedeskError
from voicedesk.engine.events import SessionConfig
from voicedesk.engine.factory import open_engine
from voicedesk.engine.measure.timeline import UtteranceTimeline
from voicedesk.engine.text.frontend.settings import TextSettings

if TYPE_CHECKING:
    from voicedesk.app.house.inputs import HouseInputs, HouseLink

log = logging.getLogger(__name__)

PlayerFactory = Callable[..., object]
WINDOW_TOOLS = "voicedesk.window_tools"
HIGHLIGHT_INTERVAL_MS = 40
MINIMUM_SIZE = (980, 600)
"""Small laptops (1024×640 and up) fit; the columns and the latency panel give way before the conversation."""


class MainWindow(QMainWindow):
    shut_down = Signal()
    """Emitted once the window has shut everything down (the app's main loop ends on it)."""

    def __init__(
        self,
        settings_path: Path,
        engine_opener: EngineOpener = open_engine,
        player_factory: PlayerFactory = default_player_factory,
        model_fetcher: Callable[..., object] | None = None,
        model_importer: Callable[..., object] | None = None,
        history_path: Path | None = None,
        house: HouseInputs | None = None,
    ) -> None:
        super().__init__()
        self.house_inputs = house
        self.house: HouseLink | None = None
        """Announcements from the house (MQTT, HTTP) into this window's console, when asked for (app.house)."""
        self.settings_path = settings_path
        loaded = load_settings(settings_path)
        self.settings = loaded.settings
        self.player_factory = player_factory
        self._tasks: set[asyncio.Future[object]] = set()
        self._closing = False
        self._shutdown: asyncio.Future[None] | None = None
        self._loading = True  # widgets being filled from the settings: their signals are not edits
        self._latency_fitted = False
        self.setWindowTitle("voicedesk")
        self.setMinimumSize(*MINIMUM_SIZE)
        self.resize(PREFERRED)
        self._build()
        self.hub = EngineHub(self.engine_status, engine_opener, engine_spec(self.settings, kind="local"), model_fetcher)
        self.controller = controller = SpeechController(self.hub, self)
        parts = (self.sidebar.output, self.banners, self.status, player_factory, self.settings_changed)
        self.outputs = OutputActions(controller, self.settings, *parts)
        history = History(history_path or default_history_path())
        parts = (self.console.announcements, self.outputs.use, self.selected_label, self.refresh_desktop, house)
        self.announce = AnnounceActions(history, controller, self.hub, self.settings, self.status, *parts)
        submit = self.announce.submit
        parts = (self.composer, controller, submit, self.sidebar.store, self.notice)
        self.agent = AgentActions(self, self.settings, *parts, token=self.sidebar.agent.ha_token.text)
        self.announce.ended.append(self.agent.turn_ended)
        parts = (self.announce.console, controller, self.agent, self.conversation, self.status)
        self.voice_input = VoiceActions(self.sidebar.microphone, self.settings, *parts)
        parts = (self.composer.text, self.sidebar.voice.names, self.suspend_shortcuts, self.phrases_changed)
        self.phrases = PhraseActions(self, self.settings, self.outputs, submit, *parts)
        parts = (self.settings, self.hub, controller, self.sidebar, self.status, self.agent.consent, self.spawn)
        calls = (self.refresh_desktop, self.voice_changed, model_fetcher, model_importer)
        self.engines = EngineActions(self, *parts, *calls)
        parts = (self.sidebar.desktop, self.hub, self.announce.console, self.request_stop, self.phrases.speak)
        self.desktop = DesktopIntegration(self, self.settings, *parts, self.selected_label)
        self.desktop.talk = self.voice_input.toggle
        self.pronunciations = PronunciationActions(self, settings_path, controller, self.notice, self.spawn)
        self.sidebar.load(self.settings)
        self.composer.set_mode(self.settings.composer_mode)
        self._apply_voice()
        self.controller.failover_enabled = self.settings.engine.failover_to_local
        self.place_on(self._available_area())
        self._latency_fitted = not self.settings.splitter_state  # sized by the window until the person drags it
        if self.settings.splitter_state:
            self.splitter.restoreState(QByteArray.fromHex(self.settings.splitter_state.encode()))
        self.splitter.splitterMoved.connect(self._splitter_dragged)
        self._update_source_label()
        for column in (self.sidebar, self.console):  # as wide as their cards need, never clipped
            column.setMinimumWidth(column.widget().minimumSizeHint().width() + 12)
        self.console.phrases.set_phrases(self.settings.phrases)
        self.console.announcements.show_history(self.announce.history.entries)
        self._connect()
        self._loading = False
        for message in (loaded.message, self.announce.history.message):
            if message:
                self.banners.show_message("settings", message, "warning")
                self.notice(message, "warning", Topic.SETTINGS)

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
        columns = QSplitter(Qt.Orientation.Horizontal)
        columns.setChildrenCollapsible(False)
        self.sidebar = Sidebar()
        center = QWidget()
        center_layout = QVBoxLayout(center)
        center_layout.setContentsMargins(0, 0, 0, 0)
        center_layout.setSpacing(0)
        self.banners = BannerStack()
        banner_box = QVBoxLayout()
        banner_box.setContentsMargins(20, 12, 20, 0)
        banner_box.addWidget(self.banners)
        center_layout.addLayout(banner_box)
        # The latency panel can shrink (or be dragged down) so the conversation keeps its room on a small screen.
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.conversation = ConversationView()
        self.latency = LatencyPanel()
        latency_box = QWidget()
        latency_box.setObjectName("ConversationBody")
        latency_layout = QVBoxLayout(latency_box)
        latency_layout.setContentsMargins(20, 4, 20, 4)
        latency_layout.addWidget(self.latency)
        # In a scroll area, so neither its width nor its height sets the window's minimum size.
        latency_scroll = QScrollArea()
        latency_scroll.setObjectName("Conversation")
        latency_scroll.setWidgetResizable(True)
        latency_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # it wraps instead
        latency_scroll.setWidget(latency_box)
        latency_scroll.setMinimumHeight(60)
        latency_scroll.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # its own controls are the Tab stops
        self.splitter.addWidget(self.conversation)
        self.splitter.addWidget(latency_scroll)
        self.splitter.setCollapsible(0, False)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([420, 200])
        center_layout.addWidget(self.splitter, 1)
        self.composer = Composer()
        center_layout.addWidget(self.composer)
        self.console = ConsolePanel()
        center.setMinimumWidth(400)
        columns.addWidget(self.sidebar)
        columns.addWidget(center)
        columns.addWidget(self.console)
        columns.setStretchFactor(1, 1)
        columns.setSizes([330, 640, 300])
        outer.addWidget(columns, 1)
        self.setCentralWidget(root)
        self.wheel_guard = FocusedWheel(self)
        self.wheel_guard.guard(root)
        self.status = StatusLine()
        self.statusBar().addWidget(self.status, 1)
        self.statusBar().setSizeGripEnabled(False)
        self.files = FileActions(self, self.latency.save, lambda: self.controller.reply_wav(), self.notice)
        # Tools of installed packages (the lab's A/B runs), found by entry point: the window never imports them.
        self.tools = {tool.name: tool.load()(self) for tool in entry_points(group=WINDOW_TOOLS)}

    def _available_area(self) -> QRect:
        screen = self.screen() or QGuiApplication.primaryScreen()
        return screen.availableGeometry() if screen is not None else QRect(QPoint(0, 0), PREFERRED)

    def place_on(self, available: QRect) -> None:
        """Opens within ``available`` (a screen's free area): the saved geometry when it fits there, else the
        preferred size, shrunk to fit."""
        saved = None
        if self.settings.window_geometry:
            before = self.geometry()
            if self.restoreGeometry(QByteArray.fromHex(self.settings.window_geometry.encode())):
                saved = self.geometry()
            self.setGeometry(before)
        self.setGeometry(fitted_geometry(saved, available, self.minimumSize()))

    def _splitter_dragged(self, *_args) -> None:
        self._latency_fitted = False

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self._latency_fitted:
            QTimer.singleShot(0, self.fit_latency)  # once the new width has reached the columns

    def fit_latency(self) -> None:
        """Shares the centre column: the latency panel shows a few whole rows, the conversation keeps its room."""
        sizes = self.splitter.sizes()
        total = sum(sizes)
        if total <= 0:
            return
        pane = self.splitter.widget(1)
        width = pane.width() - 40  # the panel's side margins in its box
        chrome = pane.frameWidth() * 2 + 8  # the box's frame and its top and bottom margins
        one_row = self.latency.height_for(width, 1) + chrome
        wanted = self.latency.height_for(width, LATENCY_ROWS) + chrome
        latency = latency_height(total, one_row, wanted)
        if sizes != [total - latency, latency]:
            self.splitter.setSizes([total - latency, latency])

    def _connect(self) -> None:
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self, activated=self.request_stop)
        for keys in ("Ctrl+Return", "Ctrl+Enter"):
            QShortcut(QKeySequence(keys), self, activated=lambda: self.agent.speak_composer())
        for keys in ("Ctrl+Shift+Return", "Ctrl+Shift+Enter"):
            QShortcut(QKeySequence(keys), self, activated=lambda: self.agent.speak_composer(interrupt=True))
        composer = self.composer
        composer.speak_requested.connect(self.agent.speak_composer)
        composer.speak_now_requested.connect(lambda: self.agent.speak_composer(interrupt=True))
        composer.stop_requested.connect(self.request_stop)
        composer.mode_changed.connect(self._mode_changed)
        composer.new_conversation_requested.connect(self.agent.new_conversation)
        engine = self.sidebar.engine
        engine.kind_changed.connect(lambda _kind: self.select_engine(clicked=False))
        engine.connect_requested.connect(self.select_engine)
        engine.download_requested.connect(lambda: self.spawn(self.engines.download_model()))
        engine.import_requested.connect(self._import_dialog)
        engine.changed.connect(self.settings_changed)
        voice = self.sidebar.voice
        voice.changed.connect(self.voice_changed)
        voice.preview_requested.connect(self.announce.preview_voice)
        voice.download_requested.connect(lambda name: self.spawn(self.engines.download_voice(name)))
        self.sidebar.output.changed.connect(lambda: self.spawn(self.outputs.open_player()))
        self.sidebar.output.refresh.clicked.connect(self.outputs.refresh)
        self.sidebar.agent.changed.connect(self._agent_changed)
        self.sidebar.microphone.changed.connect(self._microphone_changed)
        self.sidebar.desktop.changed.connect(self._desktop_changed)
        self.latency.export_requested.connect(self.files.export_dialog)
        self.conversation.retry_requested.connect(self.agent.retry)
        phrases, queue = self.console.phrases, self.console.announcements
        phrases.speak_requested.connect(self.phrases.speak)
        phrases.edit_requested.connect(self.phrases.edit)
        phrases.add_requested.connect(lambda: self.phrases.edit(None))
        phrases.delete_requested.connect(self.phrases.delete)
        queue.now_requested.connect(self.announce.speak_now)
        queue.remove_requested.connect(self.announce.console.remove)
        queue.clear_requested.connect(self.announce.console.clear)
        queue.resume_requested.connect(self.announce.console.resume)
        queue.replay_requested.connect(self.announce.replay)
        queue.history_clear_requested.connect(lambda: self.spawn(self.announce.clear_history()))
        self._save_timer = QTimer(self, singleShot=True, interval=400)
        self._save_timer.timeout.connect(self.save_settings)
        self._highlight = QTimer(self, interval=HIGHLIGHT_INTERVAL_MS)
        self._highlight.timeout.connect(self._tick)
        self._highlight.start()
        self.desktop.bind_window_shortcuts()

    # ---- start and stop ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Opens the audio output, the house's inputs, then the selected engine (the window and the house are served
        while the model loads; what they ask for is said once it is ready)."""
        self.outputs.refresh()
        await self.outputs.open_player()
        self.announce.console.start()
        self.desktop.apply()
        self.voice_input.refresh()
        await self.voice_input.apply()
        if self.house_inputs is not None:
            from voicedesk.app.house.inputs import HouseLink

            self.house = HouseLink(self.announce.console, self.house_inputs)
            await self.house.start()
        await self.engines.select()
        self.engines.health.start()

    def shutdown(self) -> Awaitable[None]:
        """Saves the settings, stops speech, closes the engines and the audio output; closing then is instant.
        Idempotent: every caller (the close button, a test) awaits the same shutdown to its end."""
        if self._shutdown is None:
            self._closing = True
            self._shutdown = asyncio.ensure_future(self._shut_down())
        # Shielded: cancelling a task that waits for the shutdown (the close button's) must not cancel it.
        return asyncio.shield(self._shutdown)

    async def _shut_down(self) -> None:
        self._highlight.stop()
        self.save_settings()
        self.desktop.close()
        try:
            if self.house is not None:
                await self.house.aclose()
            await self.voice_input.aclose()
            await self.engines.health.aclose()
            await self.announce.console.aclose()
            await self.controller.aclose()
        finally:
            self.outputs.close_all()
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

    def spawn(self, coro: Awaitable[object], topic: Topic = Topic.GENERAL) -> asyncio.Future[object]:
        """Runs ``coro`` on the loop; a failure is shown under ``topic`` (so it goes when its cause is fixed)."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(lambda done: self._task_done(done, topic))
        return task

    def _task_done(self, task: asyncio.Future[object], topic: Topic) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if isinstance(error, VoicedeskError):
            self.notice(error_text(error), "error", topic)
        elif error is not None:
            log.error("a background task failed", exc_info=error)
            self.notice(f"Something went wrong: {error_text(error)}", "error", topic)

    # ---- actions ----------------------------------------------------------------------------------

    def request_stop(self) -> None:
        self.spawn(self.announce.stop())

    def refresh_desktop(self) -> None:
        self.desktop.refresh()

    def suspend_shortcuts(self, suspended: bool) -> None:
        self.desktop.suspend(suspended)

    def select_engine(self, clicked: bool = True) -> None:
        self.settings_changed()
        self.spawn(self.engines.select(clicked), Topic.ENGINE)

    def _import_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Import model files from a folder")
        if folder:
            self.spawn(self.engines.import_models(Path(folder)))

    def selected_label(self) -> str:
        return KIND_LABELS.get(self.hub.spec.kind, self.hub.spec.kind)

    # ---- ControllerListener -------------------------------------------------------------------------

    def turn_changed(self, turn: Turn) -> None:
        current = self.controller.run
        position = self.controller.heard_position() if current is not None and current.turn is turn else None
        self.conversation.show_turn(turn, position)
        self.composer.set_speaking(current is not None and current.turn.active)

    def turn_ended(self, turn: Turn) -> None:
        pass  # the console tells the history, with the announcement the turn said

    def timeline_changed(self, turn: Turn, timeline: UtteranceTimeline) -> None:
        last = self.controller.last_run
        if last is not None and last.turn is turn:
            self.latency.set_timeline(self.voice_input.timeline(turn, timeline), last.stalls, last.stalled_s)
            if self._latency_fitted:  # wider numbers may have wrapped its header onto another line
                self.fit_latency()

    def engine_status(self, status: EngineStatus) -> None:
        self.sidebar.engine.show_status(status.state, status.title, status.detail, status.message)
        if status.kind == "websocket" and status.state in (EngineState.ERROR, EngineState.READY):
            self.sidebar.engine.point_at_token(status.code == ErrorCode.UNAUTHORIZED)
        label = KIND_LABELS.get(status.kind, status.kind)
        self.header_engine.setText(f"{label} engine")
        self.header_status.show_state(status.state, status.title, status.detail)
        self.engines.status_changed(status)
        self.desktop.refresh()

    def notice(self, text: str, level: str = "info", topic: Topic = Topic.GENERAL) -> None:
        self.status.post(text, level, topic)

    # ---- reacting to the sidebar ------------------------------------------------------------------

    def _tick(self) -> None:
        run = self.controller.run
        if run is not None and run.turn.active:
            self.conversation.show_turn(run.turn, self.controller.heard_position())

    def _apply_voice(self) -> None:
        if self.sidebar.voice.chosen_missing():
            return  # keeps the last voice that works; the Voice card says why and offers the download
        voice = self.settings.voice
        text = TextSettings(lexicon=self.pronunciations.lexicon)
        self.controller.voice = SessionConfig(voice.spec(), voice.speed, round(voice.max_buffer_delay_ms), text)

    def voice_changed(self) -> None:
        if self._loading:
            return
        self.sidebar.voice.store(self.settings)
        self.status.clear(Topic.VOICE)
        self._apply_voice()
        if self.voice_input.language_changed():
            self.spawn(self.voice_input.apply(), Topic.MICROPHONE)
        self.settings_changed()

    def _agent_changed(self) -> None:
        if self._loading:
            return
        self.sidebar.agent.store(self.settings)
        self._update_source_label()
        self.settings_changed()

    def _microphone_changed(self) -> None:
        if self._loading:
            return
        before = self.settings.voice_input
        self.sidebar.microphone.store(self.settings)
        if self.settings.voice_input != before:  # a field losing the focus is no change
            self.settings_changed()
            self.spawn(self.voice_input.apply(), Topic.MICROPHONE)

    def _desktop_changed(self) -> None:
        if self._loading:
            return
        refused = self.desktop.refuse_a_taken_stop_shortcut()
        if refused:
            self.notice(refused, "warning", Topic.SETTINGS)
            return
        self.sidebar.desktop.store(self.settings)
        self.desktop.apply()
        self.settings_changed()

    def phrases_changed(self) -> None:
        self.console.phrases.set_phrases(self.settings.phrases)
        self.desktop.apply()
        self.settings_changed()

    def _mode_changed(self, mode: str) -> None:
        if self._loading:
            return
        self.settings.composer_mode = mode
        self._update_source_label()
        self.settings_changed()

    def _update_source_label(self) -> None:
        if self.composer.mode.value() != "agent":
            self.composer.set_source_label("Reads your text aloud, sentence by sentence, as soon as each is ready.")
            return
        source = self.settings.source
        names = {
            "scripted": f"Scripted agent · replays your text at {source.scripted_tokens_per_s:g} tokens/s",
            "openai": f"{source.openai_model or 'model?'} on {source.openai_base_url or 'server?'}",
            "bedrock": f"Amazon Bedrock · {source.bedrock_model_id or 'model?'}",
            "homeassistant": f"Home Assistant · {source.ha_url or 'URL?'}",
        }
        self.composer.set_source_label(f"Agent: {names.get(source.kind, source.kind)}")

    def settings_changed(self) -> None:
        if self._loading:
            return
        self._save_timer.start()

    def save_settings(self) -> None:
        self.sidebar.store(self.settings)
        self.settings.composer_mode = self.composer.mode.value() or "speak"
        self.settings.window_geometry = bytes(self.saveGeometry().toHex()).decode()
        # Only a split the person chose is kept; otherwise the next window shares its column by its own size.
        dragged = not self._latency_fitted
        self.settings.splitter_state = bytes(self.splitter.saveState().toHex()).decode() if dragged else ""
        try:
            save_settings(self.settings, self.settings_path)
        except OSError as exc:
            self.notice(f"Could not save the settings to {self.settings_path}: {exc}", "error", Topic.SETTINGS)
