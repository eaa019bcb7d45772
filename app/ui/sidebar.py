"""The settings column: engine (with live status), voice, output device, microphone and agent source.
Widgets only: values are read from and written back to ``AppSettings``; the window reacts to the signals."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSlider,
)

from voicedesk.app.settings import AppSettings
from voicedesk.app.ui.engine_card import EngineCard
from voicedesk.app.ui.forms import CardColumn, PageSwitcher, form_layout, page, picker
from voicedesk.app.ui.microphone_card import MicrophoneCard
from voicedesk.app.ui.theme import PALETTE
from voicedesk.app.ui.widgets import Card, field_label, hint
from voicedesk.engine.model.languages import language_status
from voicedesk.engine.model.voices import DEFAULT_VOICE, KNOWN_VOICES, LANGUAGES, language_of

SOURCE_PAGES = ("scripted", "openai", "bedrock", "homeassistant")


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


NOT_HERE = "not downloaded"
NOT_SET_UP = "language not set up"


def slider_row(low: int, high: int, label_width: int) -> tuple[QSlider, QLabel, QHBoxLayout]:
    """A slider with its value's label at its right (not a spin box: styled spin boxes lose their text in Qt 6.12)."""
    slider = QSlider(Qt.Orientation.Horizontal)
    slider.setRange(low, high)
    value = QLabel()
    value.setMinimumWidth(label_width)
    row = QHBoxLayout()
    row.addWidget(slider, 1)
    row.addWidget(value)
    return slider, value, row


def _first_choice(combo: QComboBox) -> int:
    """The first entry that is a choice (headings carry no data)."""
    return next((i for i in range(combo.count()) if combo.itemData(i) is not None), 0)


class VoiceCard(Card):
    changed = Signal()
    preview_requested = Signal()
    download_requested = Signal(str)

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
        self.blend_weight, self.blend_label, blend_row = slider_row(5, 95, 36)
        self.speed, self.speed_label, speed_row = slider_row(50, 200, 36)
        self.speed.setSingleStep(5)
        self.speed.setPageStep(10)
        form.addRow(field_label("Blend with"), self.blend)
        form.addRow(field_label("Mix"), blend_row)
        form.addRow(field_label("Speed"), speed_row)
        self.body.addLayout(form)
        self.message = QLabel()
        self.message.setObjectName("Message")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.hide()
        self.download = QPushButton("Download this voice")
        self.download.setObjectName("Primary")
        self.download.hide()
        self.download.clicked.connect(lambda: self.download_requested.emit(self.voice.currentData() or ""))
        self.note = hint("")
        self.note.hide()
        self.body.addWidget(self.message)
        self.body.addWidget(self.download, 0, Qt.AlignmentFlag.AlignLeft)
        self.body.addWidget(self.note)
        self.missing: set[str] = set()
        self.unready: set[str] = set()
        """Voices whose language's G2P is not set up here (also in ``missing``)."""
        """Voices listed but not on the engine (chosen: the card says so and offers the download)."""
        self.set_voices(list(KNOWN_VOICES))
        self.voice.currentIndexChanged.connect(self._changed)
        self.blend.currentIndexChanged.connect(self._changed)
        self.blend_weight.valueChanged.connect(self._changed)
        self.speed.valueChanged.connect(self._changed)
        self.preview.clicked.connect(self.preview_requested)
        self._changed()

    def set_voices(
        self,
        names: list[str],
        available: set[str] | None = None,
        missing_hint: str = "",
        unready_languages: set[str] | frozenset[str] = frozenset(),
    ) -> None:
        """Fills both pickers, grouped by language under a header per language. Voices not on the engine
        (``available`` given) are marked "not downloaded" in grey, and those of a language not set up on this
        machine (``unready_languages``: Kokoro's codes) say so; choosing one says what to do (``missing_hint``:
        what to say instead, e.g. for a remote engine)."""
        current, blend = self.voice.currentData(), self.blend.currentData()
        self.unready = {n for n in names if language_of(n) in unready_languages}
        self.missing = {n for n in names if available is not None and n not in available} | self.unready
        self._missing_hint = missing_hint
        for combo in (self.voice, self.blend):
            combo.blockSignals(True)
            combo.clear()
        self.blend.addItem("No blend", "")
        groups: dict[str, list[str]] = {}
        for name in names:
            groups.setdefault(language_of(name), []).append(name)
        for code in sorted(groups, key=list(LANGUAGES).index):
            header = LANGUAGES[code] + (f" — {NOT_SET_UP}" if code in unready_languages else "")
            for combo in (self.voice, self.blend):
                combo.addItem(header, None)
                combo.model().item(combo.count() - 1).setEnabled(False)  # a heading, not a choice
            for name in groups[code]:
                self._add_voice(name)
        for combo, value in ((self.voice, current), (self.blend, blend)):
            index = combo.findData(value) if value is not None else -1
            combo.setCurrentIndex(index if index >= 0 else _first_choice(combo))
            combo.blockSignals(False)
        self._show_missing()

    def _add_voice(self, name: str) -> None:
        state = NOT_SET_UP if name in self.unready else NOT_HERE if name in self.missing else ""
        for combo in (self.voice, self.blend):
            combo.addItem(f"{voice_title(name)} — {state}" if state else voice_title(name), name)
            tip = f"{voice_tooltip(name)} ({state})" if state else voice_tooltip(name)
            combo.setItemData(combo.count() - 1, tip, Qt.ItemDataRole.ToolTipRole)
            if state:
                grey = QBrush(QColor(PALETTE.text_muted))
                combo.setItemData(combo.count() - 1, grey, Qt.ItemDataRole.ForegroundRole)

    def set_note(self, text: str) -> None:
        """A line about the engine's voices (e.g. that a SageMaker endpoint cannot list them)."""
        self.note.setText(text)
        self.note.setVisible(bool(text))

    def names(self) -> list[str]:
        """The voices offered (the language headings between the groups carry none)."""
        return [name for i in range(self.voice.count()) if (name := self.voice.itemData(i)) is not None]

    def chosen_missing(self) -> list[str]:
        """The chosen voices (voice, blend) the engine does not have."""
        return [v for v in (self.voice.currentData(), self.blend.currentData()) if v and v in self.missing]

    def _show_missing(self) -> None:
        missing = self.chosen_missing()
        if not missing:
            self.message.hide()
            self.download.hide()
            return
        names = " and ".join(voice_title(v).split(" · ")[0] for v in missing)
        unready = [v for v in missing if v in self.unready]
        if unready and not self._missing_hint:
            status = language_status(language_of(unready[0]))
            self.message.setText(
                f"{names} speaks {status.language.name}, which is not set up on this machine "
                f"({', '.join(status.missing)}); replies keep the last voice that works. Set it up with {status.fix}."
            )
            self.message.show()
            self.download.hide()
            return
        text = self._missing_hint or (
            f"{names} is not downloaded, so it cannot speak yet; replies keep the last voice that works. "
            "Download it, or import model files from a folder (Engine card)."
        )
        self.message.setText(text.format(names=names))
        self.message.show()
        self.download.setVisible(not self._missing_hint)

    def _changed(self) -> None:
        self._show_missing()
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
            combo.setCurrentIndex(index if index >= 0 else _first_choice(combo))
        self.blend_weight.setValue(round(voice.blend_weight * 100))
        self.speed.setValue(round(voice.speed * 100))

    def store(self, settings: AppSettings) -> None:
        voice = settings.voice
        voice.voice = self.voice.currentData() or DEFAULT_VOICE
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

    def set_devices(self, choices: list[tuple[str, str, str]], current: str) -> None:
        """``choices``: (key, title, detail) of each output, as ``app.outputs`` lists them."""
        self.device.blockSignals(True)
        self.device.clear()
        self.device.addItem("System default", "")
        for key, title, detail in choices:
            self.device.addItem(title, key)
            if detail:
                self.device.setItemData(self.device.count() - 1, detail, Qt.ItemDataRole.ToolTipRole)
        index = self.device.findData(current)
        if index < 0 and current:
            shown = current.removeprefix("pulse-sink:")
            self.device.addItem(f"{shown} (not found)", current)
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
        self.source.addItem("Home Assistant", "homeassistant")
        self.body.addWidget(self.source)
        self.pages = PageSwitcher()
        self.tokens_per_s, self.pace_label, pace_row = slider_row(1, 100, 62)
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
        self.ha_url, self.ha_token, self.ha_language, self.ha_agent = (QLineEdit() for _ in range(4))
        self.ha_token.setEchoMode(QLineEdit.EchoMode.Password)  # kept for the session only, like the engine's
        ha = form_layout()
        for label, edit, placeholder in (
            ("Server", self.ha_url, "http://homeassistant.local:8123"),
            ("Token", self.ha_token, "long-lived (or HASS_TOKEN)"),
            ("Language", self.ha_language, "the voice's"),
            ("Agent", self.ha_agent, "Home Assistant's own"),
        ):
            edit.setPlaceholderText(placeholder)
            ha.addRow(field_label(label), edit)
        self.pages.addWidget(page(ha, hint("Assist: commands carried out in the house, answered aloud.")))
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
            self.ha_url,
            self.ha_language,
            self.ha_agent,
            self.instructions,
        ):
            edit.textEdited.connect(self.changed)

    def _pace_changed(self) -> None:
        self.pace_label.setText(f"{self.tokens_per_s.value()} tokens/s")
        self.changed.emit()

    def _source_changed(self) -> None:
        kind = self.source.currentData()
        self.pages.setCurrentIndex(SOURCE_PAGES.index(kind))
        self.instructions.setVisible(kind in ("openai", "bedrock"))
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
        self.ha_url.setText(source.ha_url)
        self.ha_language.setText(source.ha_language)
        self.ha_agent.setText(source.ha_agent_id)
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
        source.ha_url = self.ha_url.text().strip()
        source.ha_language = self.ha_language.text().strip()
        source.ha_agent_id = self.ha_agent.text().strip()
        source.system_prompt = self.instructions.text()


class DesktopCard(Card):
    """Global shortcuts and the tray icon: on or off, and in plain words whether this desktop allows them."""

    changed = Signal()

    def __init__(self) -> None:
        super().__init__("Desktop")
        self.global_shortcuts = QCheckBox("Shortcuts work from any window")
        self.stop_shortcut = QLineEdit()
        self.stop_shortcut.setPlaceholderText("e.g. Ctrl+Alt+S")
        self.stop_shortcut.setToolTip("Stops speech from anywhere on the desktop (where the desktop allows it)")
        self.talk_shortcut = QLineEdit()
        self.talk_shortcut.setPlaceholderText("e.g. Ctrl+Alt+T")
        self.talk_shortcut.setToolTip("Starts listening from anywhere; pressed again, ends what you say")
        form = form_layout()
        form.addRow(field_label("Stop"), self.stop_shortcut)
        form.addRow(field_label("Talk"), self.talk_shortcut)
        self.shortcut_status = hint("")
        self.tray_icon = QCheckBox("Tray icon")
        self.tray_status = hint("")
        self.body.addWidget(self.global_shortcuts)
        self.body.addLayout(form)
        self.body.addWidget(self.shortcut_status)
        self.body.addWidget(self.tray_icon)
        self.body.addWidget(self.tray_status)
        self.global_shortcuts.toggled.connect(self.changed)
        self.tray_icon.toggled.connect(self.changed)
        self.stop_shortcut.editingFinished.connect(self.changed)
        self.talk_shortcut.editingFinished.connect(self.changed)

    def load(self, settings: AppSettings) -> None:
        for widget in (self.global_shortcuts, self.tray_icon, self.stop_shortcut, self.talk_shortcut):
            widget.blockSignals(True)
        self.global_shortcuts.setChecked(settings.desktop.global_shortcuts)
        self.tray_icon.setChecked(settings.desktop.tray_icon)
        self.stop_shortcut.setText(settings.desktop.stop_shortcut)
        self.talk_shortcut.setText(settings.desktop.talk_shortcut)
        for widget in (self.global_shortcuts, self.tray_icon, self.stop_shortcut, self.talk_shortcut):
            widget.blockSignals(False)

    def store(self, settings: AppSettings) -> None:
        settings.desktop.global_shortcuts = self.global_shortcuts.isChecked()
        settings.desktop.tray_icon = self.tray_icon.isChecked()
        settings.desktop.stop_shortcut = self.stop_shortcut.text().strip()
        settings.desktop.talk_shortcut = self.talk_shortcut.text().strip()


class Sidebar(CardColumn):
    def __init__(self) -> None:
        super().__init__(290, (14, 14, 8, 14))
        self.setMaximumWidth(380)
        self.engine = EngineCard()
        self.voice = VoiceCard()
        self.output = OutputCard()
        self.microphone = MicrophoneCard()
        self.agent = AgentCard()
        self.desktop = DesktopCard()
        for card in (self.engine, self.voice, self.output, self.microphone, self.agent, self.desktop):
            self.column.addWidget(card)
        self.column.addStretch(1)

    def load(self, settings: AppSettings) -> None:
        self.engine.load(settings)
        self.voice.load(settings)
        self.microphone.load(settings)
        self.agent.load(settings)
        self.desktop.load(settings)

    def store(self, settings: AppSettings) -> None:
        self.engine.store(settings)
        self.voice.store(settings)
        self.microphone.store(settings)
        self.agent.store(settings)
        self.desktop.store(settings)
        settings.output_device = self.output.value()
