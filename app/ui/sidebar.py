"""The settings column: engine (with live status), voice, output device and agent source.

Widgets only: values are read from and written back to ``AppSettings``; the window reacts to the signals.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from app.settings import AppSettings
from app.ui.engine_card import EngineCard
from app.ui.forms import PageSwitcher, form_layout, page, picker
from app.ui.widgets import Card, field_label, hint
from engine.voices import KNOWN_VOICES, LANGUAGES

SOURCE_PAGES = ("scripted", "openai", "bedrock")


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


class VoiceCard(Card):
    changed = Signal()
    preview_requested = Signal()

    def __init__(self) -> None:
        super().__init__("Voice")
        row = QHBoxLayout()
        self.voice = picker(12)
        self.preview = QPushButton("▶ Preview")
        self.preview.setToolTip("Hear this voice (and blend) say a short sentence")
        row.addWidget(self.voice, 1)
        row.addWidget(self.preview)
        self.body.addLayout(row)
        form = form_layout()
        self.blend = picker(10)
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
        self.device = picker(12)
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
        self.source = picker(12)
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
        scripted = form_layout()
        scripted.addRow(field_label("Pace"), pace_row)
        self.pages.addWidget(page(scripted, hint("Replays what you type, word by word, like a model writing.")))
        self.base_url = QLineEdit()
        self.base_url.setPlaceholderText("http://127.0.0.1:11434/v1")
        self.model = QLineEdit()
        self.model.setPlaceholderText("llama3.2")
        openai = form_layout()
        openai.addRow(field_label("Server"), self.base_url)
        openai.addRow(field_label("Model"), self.model)
        self.pages.addWidget(page(openai, hint("llama.cpp, Ollama, vLLM or LM Studio; no internet needed.")))
        self.bedrock_model = QLineEdit()
        self.bedrock_region = QLineEdit()
        self.bedrock_profile = QLineEdit()
        self.bedrock_profile.setPlaceholderText("default credentials")
        bedrock = form_layout()
        bedrock.addRow(field_label("Model"), self.bedrock_model)
        bedrock.addRow(field_label("Region"), self.bedrock_region)
        bedrock.addRow(field_label("Profile"), self.bedrock_profile)
        self.pages.addWidget(page(bedrock))
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
