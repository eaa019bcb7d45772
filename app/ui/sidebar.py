"""The settings column: engine (with live status), voice, output device and agent source.

Widgets only: values are read from and written back to ``AppSettings``; the window reacts to the signals.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from app.settings import AppSettings
from app.ui.widgets import Card, Segmented, StatusPill, field_label, hint
from engine.voices import KNOWN_VOICES, LANGUAGES

ENGINE_PAGES = ("local", "websocket", "sagemaker")
SOURCE_PAGES = ("scripted", "openai", "bedrock")
LOCAL_DEVICES = (("auto", "Automatic (CUDA if present)"), ("cpu", "CPU"), ("cuda", "CUDA GPU"))


SHORT_LANGUAGES = {"a": "US", "b": "UK", "e": "ES", "f": "FR", "h": "HI", "i": "IT", "j": "JA", "p": "BR", "z": "ZH"}


def voice_title(name: str) -> str:
    """af_heart → "Heart · US ♀" (the full name and language are in the tooltip)."""
    if len(name) > 3 and name[2] == "_" and name[0] in SHORT_LANGUAGES and name[1] in "fm":
        return f"{name[3:].replace('_', ' ').title()} · {SHORT_LANGUAGES[name[0]]} {'♀' if name[1] == 'f' else '♂'}"
    return name


def voice_tooltip(name: str) -> str:
    if len(name) > 3 and name[0] in LANGUAGES and name[1] in "fm":
        return f"{name}: {LANGUAGES[name[0]]}, {'female' if name[1] == 'f' else 'male'}"
    return name


def _form() -> QFormLayout:
    form = QFormLayout()
    form.setContentsMargins(0, 0, 0, 0)
    form.setHorizontalSpacing(10)
    form.setVerticalSpacing(8)
    form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
    return form


class PageSwitcher(QWidget):
    """Shows one of several pages and is exactly as tall as that page (a QStackedWidget keeps the height of its
    tallest page once word-wrapped labels are involved)."""

    def __init__(self) -> None:
        super().__init__()
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._pages: list[QWidget] = []
        self._current = 0

    def addWidget(self, page: QWidget) -> int:
        self._pages.append(page)
        self._layout.addWidget(page)
        page.setVisible(len(self._pages) - 1 == self._current)
        return len(self._pages) - 1

    def setCurrentIndex(self, index: int) -> None:
        self._current = index
        for number, page in enumerate(self._pages):
            page.setVisible(number == index)

    def currentIndex(self) -> int:
        return self._current


def _combo(min_chars: int = 8) -> QComboBox:
    combo = QComboBox()
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    combo.setMinimumContentsLength(min_chars)
    return combo


def _page(form: QFormLayout, *extra: QWidget) -> QWidget:
    page = QWidget()
    layout = QVBoxLayout(page)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(8)
    layout.addLayout(form)
    for widget in extra:
        layout.addWidget(widget)
    return page


class EngineCard(Card):
    kind_changed = Signal(str)
    connect_requested = Signal()
    download_requested = Signal()
    changed = Signal()

    def __init__(self) -> None:
        super().__init__("Engine")
        self.switch = Segmented([("local", "Local"), ("websocket", "WebSocket"), ("sagemaker", "SageMaker")])
        self.switch.changed.connect(self._kind_clicked)
        self.body.addWidget(self.switch)
        self.status = StatusPill(stacked=True)
        self.body.addWidget(self.status)
        self.message = QLabel()
        self.message.setObjectName("Message")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.hide()
        self.body.addWidget(self.message)
        row = QHBoxLayout()
        self.download = QPushButton("Download model (330 MB)")
        self.download.setObjectName("Primary")
        self.download.clicked.connect(self.download_requested)
        self.progress = QProgressBar()
        self.progress.setRange(0, 0)
        self.progress.setMaximumHeight(8)
        row.addWidget(self.download)
        row.addWidget(self.progress, 1)
        self.body.addLayout(row)
        self.download.hide()
        self.progress.hide()

        self.pages = PageSwitcher()
        self.device = _combo()
        for key, text in LOCAL_DEVICES:
            self.device.addItem(text, key)
        local_form = _form()
        local_form.addRow(field_label("Device"), self.device)
        self.pages.addWidget(_page(local_form, hint("Kokoro-82M on this machine; works offline.")))

        self.ws_url = QLineEdit()
        self.ws_url.setPlaceholderText("ws://host:8080")
        self.ws_token = QLineEdit()
        self.ws_token.setEchoMode(QLineEdit.EchoMode.Password)
        self.ws_token.setPlaceholderText("optional (or VOICEDESK_TOKEN)")
        ws_form = _form()
        ws_form.addRow(field_label("URL"), self.ws_url)
        ws_form.addRow(field_label("Token"), self.ws_token)
        self.ws_connect = QPushButton("Connect")
        self.pages.addWidget(_page(ws_form, self.ws_connect))

        self.sm_endpoint = QLineEdit()
        self.sm_endpoint.setPlaceholderText("endpoint name")
        self.sm_region = QLineEdit()
        self.sm_region.setPlaceholderText("e.g. us-east-1")
        self.sm_profile = QLineEdit()
        self.sm_profile.setPlaceholderText("default credentials")
        sm_form = _form()
        sm_form.addRow(field_label("Endpoint"), self.sm_endpoint)
        sm_form.addRow(field_label("Region"), self.sm_region)
        sm_form.addRow(field_label("Profile"), self.sm_profile)
        self.sm_connect = QPushButton("Connect")
        self.pages.addWidget(_page(sm_form, self.sm_connect))
        self.body.addWidget(self.pages)

        self.failover = QCheckBox("Finish replies locally if a remote fails")
        self.failover.setToolTip(
            "If the WebSocket or SageMaker engine fails mid-reply, the local engine continues from the next "
            "sentence (when the model is on this machine)."
        )
        self.body.addWidget(self.failover)

        for button in (self.ws_connect, self.sm_connect):
            button.clicked.connect(self.connect_requested)
        for edit in (self.ws_url, self.ws_token, self.sm_endpoint, self.sm_region, self.sm_profile):
            edit.returnPressed.connect(self.connect_requested)
            edit.textEdited.connect(self.changed)
        self.device.currentIndexChanged.connect(self._device_changed)
        self.failover.toggled.connect(self.changed)

    def _kind_clicked(self, kind: str) -> None:
        self.pages.setCurrentIndex(ENGINE_PAGES.index(kind))
        self.kind_changed.emit(kind)

    def _device_changed(self) -> None:
        self.changed.emit()
        if self.switch.value() == "local":
            self.connect_requested.emit()

    def load(self, settings: AppSettings) -> None:
        engine = settings.engine
        self.switch.set_value(engine.kind)
        self.pages.setCurrentIndex(ENGINE_PAGES.index(engine.kind))
        self.device.blockSignals(True)
        self.device.setCurrentIndex(max(self.device.findData(engine.local_device), 0))
        self.device.blockSignals(False)
        self.ws_url.setText(engine.websocket_url)
        self.sm_endpoint.setText(engine.sagemaker_endpoint)
        self.sm_region.setText(engine.sagemaker_region)
        self.sm_profile.setText(engine.sagemaker_profile)
        self.failover.setChecked(engine.failover_to_local)

    def store(self, settings: AppSettings) -> None:
        engine = settings.engine
        engine.kind = self.switch.value() or "local"
        engine.local_device = self.device.currentData() or "auto"
        engine.websocket_url = self.ws_url.text().strip()
        engine.sagemaker_endpoint = self.sm_endpoint.text().strip()
        engine.sagemaker_region = self.sm_region.text().strip()
        engine.sagemaker_profile = self.sm_profile.text().strip()
        engine.failover_to_local = self.failover.isChecked()

    def show_status(self, state: str, title: str, detail: str, message: str) -> None:
        self.status.show_state(state, title, detail)
        self.message.setText(message)
        self.message.setObjectName("ErrorText" if state == "error" else "Message")
        self.message.setStyleSheet("")  # re-polish with the new object name
        self.message.setVisible(bool(message))
        self.download.setVisible(state == "missing")
        self.progress.setVisible(state == "downloading")


class VoiceCard(Card):
    changed = Signal()
    preview_requested = Signal()

    def __init__(self) -> None:
        super().__init__("Voice")
        row = QHBoxLayout()
        self.voice = _combo(12)
        self.preview = QPushButton("▶ Preview")
        self.preview.setToolTip("Hear this voice (and blend) say a short sentence")
        row.addWidget(self.voice, 1)
        row.addWidget(self.preview)
        self.body.addLayout(row)
        form = _form()
        self.blend = _combo(10)
        self.blend_weight = QSlider(Qt.Orientation.Horizontal)
        self.blend_weight.setRange(5, 95)
        self.blend_label = QLabel()
        self.blend_label.setMinimumWidth(36)
        blend_row = QHBoxLayout()
        blend_row.addWidget(self.blend_weight, 1)
        blend_row.addWidget(self.blend_label)
        self.speed = QSlider(Qt.Orientation.Horizontal)
        self.speed.setRange(50, 200)
        self.speed.setSingleStep(5)
        self.speed.setPageStep(10)
        self.speed_label = QLabel()
        self.speed_label.setMinimumWidth(36)
        speed_row = QHBoxLayout()
        speed_row.addWidget(self.speed, 1)
        speed_row.addWidget(self.speed_label)
        form.addRow(field_label("Blend with"), self.blend)
        form.addRow(field_label("Mix"), blend_row)
        form.addRow(field_label("Speed"), speed_row)
        self.body.addLayout(form)
        self.set_voices(list(KNOWN_VOICES))
        self.voice.currentIndexChanged.connect(self._changed)
        self.blend.currentIndexChanged.connect(self._changed)
        self.blend_weight.valueChanged.connect(self._changed)
        self.speed.valueChanged.connect(self._changed)
        self.preview.clicked.connect(self.preview_requested)
        self._changed()

    def set_voices(self, names: list[str], available: set[str] | None = None) -> None:
        """Fills both pickers; voices not on this machine are listed but cannot be chosen."""
        current, blend = self.voice.currentData(), self.blend.currentData()
        for combo in (self.voice, self.blend):
            combo.blockSignals(True)
            combo.clear()
        self.blend.addItem("No blend", "")
        for name in names:
            for combo in (self.voice, self.blend):
                combo.addItem(voice_title(name), name)
                combo.setItemData(combo.count() - 1, voice_tooltip(name), Qt.ItemDataRole.ToolTipRole)
                if available is not None and name not in available:
                    item = combo.model().item(combo.count() - 1)
                    item.setEnabled(False)
                    item.setToolTip("Not downloaded: run `voicedesk models fetch --voices all`")
        for combo, value in ((self.voice, current), (self.blend, blend)):
            index = combo.findData(value) if value is not None else -1
            combo.setCurrentIndex(max(index, 0))
            combo.blockSignals(False)

    def _changed(self) -> None:
        blending = bool(self.blend.currentData())
        self.blend_weight.setEnabled(blending)
        self.blend_label.setText(f"{self.blend_weight.value()} %" if blending else "–")
        self.speed_label.setText(f"{self.speed.value() / 100:.2f}×")
        self.changed.emit()

    def load(self, settings: AppSettings) -> None:
        voice = settings.voice
        for combo, value in ((self.voice, voice.voice), (self.blend, voice.blend_with)):
            index = combo.findData(value)
            if index < 0 and value:  # a voice pack of one's own: keep it selectable
                combo.addItem(value, value)
                index = combo.count() - 1
            combo.setCurrentIndex(max(index, 0))
        self.blend_weight.setValue(round(voice.blend_weight * 100))
        self.speed.setValue(round(voice.speed * 100))

    def store(self, settings: AppSettings) -> None:
        voice = settings.voice
        voice.voice = self.voice.currentData() or "af_heart"
        voice.blend_with = self.blend.currentData() or ""
        voice.blend_weight = self.blend_weight.value() / 100
        voice.speed = self.speed.value() / 100


class OutputCard(Card):
    changed = Signal()

    def __init__(self) -> None:
        super().__init__("Output")
        row = QHBoxLayout()
        self.device = _combo(12)
        self.refresh = QPushButton("↻")
        self.refresh.setToolTip("Look for output devices again")
        self.refresh.setFixedWidth(34)
        row.addWidget(self.device, 1)
        row.addWidget(self.refresh)
        self.body.addLayout(row)
        self.device.currentIndexChanged.connect(self.changed)

    def set_devices(self, names: list[str], current: str) -> None:
        self.device.blockSignals(True)
        self.device.clear()
        self.device.addItem("System default", "")
        for name in names:
            self.device.addItem(name, name)
        index = self.device.findData(current)
        if index < 0 and current:
            self.device.addItem(f"{current} (not found)", current)
            index = self.device.count() - 1
        self.device.setCurrentIndex(max(index, 0))
        self.device.blockSignals(False)

    def value(self) -> str:
        return self.device.currentData() or ""


class AgentCard(Card):
    changed = Signal()

    def __init__(self) -> None:
        super().__init__("Agent")
        self.source = _combo(12)
        self.source.addItem("Scripted replay", "scripted")
        self.source.addItem("OpenAI-compatible server", "openai")
        self.source.addItem("Amazon Bedrock", "bedrock")
        self.body.addWidget(self.source)
        self.pages = PageSwitcher()
        # A slider, not a spin box: styled spin boxes lose their text in Qt 6.12.
        self.tokens_per_s = QSlider(Qt.Orientation.Horizontal)
        self.tokens_per_s.setRange(1, 100)
        self.pace_label = QLabel()
        self.pace_label.setMinimumWidth(62)
        pace_row = QHBoxLayout()
        pace_row.addWidget(self.tokens_per_s, 1)
        pace_row.addWidget(self.pace_label)
        scripted = _form()
        scripted.addRow(field_label("Pace"), pace_row)
        self.pages.addWidget(_page(scripted, hint("Replays what you type, word by word, like a model writing.")))
        self.base_url = QLineEdit()
        self.base_url.setPlaceholderText("http://127.0.0.1:11434/v1")
        self.model = QLineEdit()
        self.model.setPlaceholderText("llama3.2")
        openai = _form()
        openai.addRow(field_label("Server"), self.base_url)
        openai.addRow(field_label("Model"), self.model)
        self.pages.addWidget(_page(openai, hint("llama.cpp, Ollama, vLLM or LM Studio; no internet needed.")))
        self.bedrock_model = QLineEdit()
        self.bedrock_region = QLineEdit()
        self.bedrock_profile = QLineEdit()
        self.bedrock_profile.setPlaceholderText("default credentials")
        bedrock = _form()
        bedrock.addRow(field_label("Model"), self.bedrock_model)
        bedrock.addRow(field_label("Region"), self.bedrock_region)
        bedrock.addRow(field_label("Profile"), self.bedrock_profile)
        self.pages.addWidget(_page(bedrock))
        self.body.addWidget(self.pages)
        self.instructions = QLineEdit()
        self.instructions.setPlaceholderText("System prompt")
        self.instructions.setToolTip("Instructions sent to the model with every question")
        self.body.addWidget(self.instructions)
        self.source.currentIndexChanged.connect(self._source_changed)
        self.tokens_per_s.valueChanged.connect(self._pace_changed)
        for edit in (
            self.base_url,
            self.model,
            self.bedrock_model,
            self.bedrock_region,
            self.bedrock_profile,
            self.instructions,
        ):
            edit.textEdited.connect(self.changed)

    def _pace_changed(self) -> None:
        self.pace_label.setText(f"{self.tokens_per_s.value()} tokens/s")
        self.changed.emit()

    def _source_changed(self) -> None:
        kind = self.source.currentData()
        self.pages.setCurrentIndex(SOURCE_PAGES.index(kind))
        self.instructions.setVisible(kind != "scripted")
        self.changed.emit()

    def load(self, settings: AppSettings) -> None:
        source = settings.source
        self.source.setCurrentIndex(max(self.source.findData(source.kind), 0))
        self._source_changed()
        self.tokens_per_s.setValue(round(source.scripted_tokens_per_s))
        self.pace_label.setText(f"{self.tokens_per_s.value()} tokens/s")
        self.base_url.setText(source.openai_base_url)
        self.model.setText(source.openai_model)
        self.bedrock_model.setText(source.bedrock_model_id)
        self.bedrock_region.setText(source.bedrock_region)
        self.bedrock_profile.setText(source.bedrock_profile)
        self.instructions.setText(source.system_prompt)

    def store(self, settings: AppSettings) -> None:
        source = settings.source
        source.kind = self.source.currentData()
        source.scripted_tokens_per_s = float(self.tokens_per_s.value())
        source.openai_base_url = self.base_url.text().strip()
        source.openai_model = self.model.text().strip()
        source.bedrock_model_id = self.bedrock_model.text().strip()
        source.bedrock_region = self.bedrock_region.text().strip()
        source.bedrock_profile = self.bedrock_profile.text().strip()
        source.system_prompt = self.instructions.text()


class Sidebar(QScrollArea):
    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("Sidebar")
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setFixedWidth(356)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        body = QWidget()
        body.setObjectName("SidebarBody")
        layout = QVBoxLayout(body)
        layout.setContentsMargins(14, 14, 8, 14)
        layout.setSpacing(12)
        self.engine = EngineCard()
        self.voice = VoiceCard()
        self.output = OutputCard()
        self.agent = AgentCard()
        for card in (self.engine, self.voice, self.output, self.agent):
            layout.addWidget(card)
        layout.addStretch(1)
        self.setWidget(body)

    def load(self, settings: AppSettings) -> None:
        self.engine.load(settings)
        self.voice.load(settings)
        self.agent.load(settings)

    def store(self, settings: AppSettings) -> None:
        self.engine.store(settings)
        self.voice.store(settings)
        self.agent.store(settings)
        settings.output_device = self.output.value()
