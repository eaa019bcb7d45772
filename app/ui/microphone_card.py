"""The Microphone card: input device, level, talk button, hands-free, and how speech is heard (STT, barge-in).

Widgets only: values go to and from ``AppSettings.voice_input`` (``app.voice.voice_input.VoiceSettings``); the
window's ``voice_actions`` reacts to the signals.
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSlider,
)

from voicedesk.app.settings import AppSettings
from voicedesk.app.ui.forms import PageSwitcher, form_layout, page, picker
from voicedesk.app.ui.widgets import Card, field_label, hint
from voicedesk.app.voice.turns import Mode
from voicedesk.app.voice.voice_input import STT_DEVICES

STT_KINDS = (("whisper", "faster-whisper (this computer)"), ("wyoming", "Wyoming server (e.g. Home Assistant)"))
BARGE_IN = (("speech", "When I speak"), ("keyword", "Only on a keyword"), ("off", "Never"))
STT_COMPUTE = ("default", "int8", "int8_float16", "float16", "float32")
METER_FLOOR_DB = -60


def _slider(low: int, high: int) -> QSlider:
    slider = QSlider(Qt.Orientation.Horizontal)  # not a spin box: styled spin boxes lose their text in Qt 6.12
    slider.setRange(low, high)
    slider.setSingleStep(50)
    return slider


class MicrophoneCard(Card):
    changed = Signal()
    talk_pressed = Signal()
    talk_released = Signal()

    def __init__(self) -> None:
        super().__init__("Microphone")
        self.enabled = QCheckBox("Voice input")
        self.enabled.setToolTip("Open the microphone and talk to the agent (typing always works)")
        self.listening = QLabel("● Listening")
        self.listening.setObjectName("Listening")
        self.listening.setStyleSheet("color: #DC2626; font-weight: 600;")
        self.listening.setToolTip("The microphone is open")
        self.listening.hide()
        top = QHBoxLayout()
        top.addWidget(self.enabled, 1)
        top.addWidget(self.listening)
        self.body.addLayout(top)
        row = QHBoxLayout()
        self.device = picker(12)
        self.refresh = QPushButton("↻")
        self.refresh.setToolTip("Look for microphones again")
        self.refresh.setFixedWidth(34)
        row.addWidget(self.device, 1)
        row.addWidget(self.refresh)
        self.body.addLayout(row)
        self.level = QProgressBar()
        self.level.setRange(METER_FLOOR_DB, 0)
        self.level.setTextVisible(False)
        self.level.setFixedHeight(6)
        self.level.setToolTip("The microphone's level")
        self.body.addWidget(self.level)
        talk_row = QHBoxLayout()
        self.talk = QPushButton("Hold to talk")  # no emoji: many Linux desktops have no font for it (a box)
        self.talk.setToolTip("Push to talk: hold this, or F9 while the window has the focus")
        self.hands_free = QCheckBox("Hands-free")
        self.hands_free.setToolTip("Listen all the time; a pause ends what you say")
        talk_row.addWidget(self.talk, 1)
        talk_row.addWidget(self.hands_free)
        self.body.addLayout(talk_row)
        form = form_layout()
        self.end_silence = _slider(200, 3000)
        self.end_silence_label = QLabel()
        form.addRow(field_label("Pause"), self._with_label(self.end_silence, self.end_silence_label))
        self.barge_in = picker(10)
        for key, title in BARGE_IN:
            self.barge_in.addItem(title, key)
        self.barge_in.setToolTip("Whether speaking over a reply stops it")
        form.addRow(field_label("Barge in"), self.barge_in)
        self.barge_in_min = _slider(0, 2000)
        self.barge_in_min_label = QLabel()
        self.barge_in_min.setToolTip("Speech shorter than this (a cough, “mm-hm”) only pauses a reply")
        form.addRow(field_label("At least"), self._with_label(self.barge_in_min, self.barge_in_min_label))
        self.keywords = QLineEdit()
        self.keywords.setPlaceholderText("stop, wait")
        form.addRow(field_label("Keywords"), self.keywords)
        self.stt = picker(12)
        for key, title in STT_KINDS:
            self.stt.addItem(title, key)
        form.addRow(field_label("Speech to text"), self.stt)
        self.body.addLayout(form)
        self.stt_pages = PageSwitcher()
        self.model = QLineEdit()
        self.model.setPlaceholderText("small.en, or a folder")
        self.stt_device, self.compute = picker(6), picker(6)
        for combo, values in ((self.stt_device, STT_DEVICES), (self.compute, STT_COMPUTE)):
            for value in values:
                combo.addItem(value, value)
        whisper = form_layout()
        whisper.addRow(field_label("Model"), self.model)
        whisper.addRow(field_label("Device"), self.stt_device)
        whisper.addRow(field_label("Compute"), self.compute)
        self.stt_pages.addWidget(page(whisper, hint("Fetch a model once: voicedesk models fetch --stt small.en")))
        self.wyoming = QLineEdit()
        self.wyoming.setPlaceholderText("tcp://homeassistant.local:10300")
        self.stt_timeout = QDoubleSpinBox()
        self.stt_timeout.setRange(0.5, 300.0)
        self.stt_timeout.setSuffix(" s")
        self.stt_timeout.setToolTip("The longest the server may take over each step, the transcript included")
        wyoming = form_layout()
        wyoming.addRow(field_label("Server"), self.wyoming)
        wyoming.addRow(field_label("Timeout"), self.stt_timeout)
        self.stt_pages.addWidget(page(wyoming))
        self.body.addWidget(self.stt_pages)
        rest = form_layout()
        self.language = QLineEdit()
        self.language.setPlaceholderText("from the voice")
        rest.addRow(field_label("Language"), self.language)
        self.body.addLayout(rest)
        self.keep = QCheckBox("Keep recordings")
        self.keep.setToolTip("Save each utterance as a WAV file (off: nothing is written to disk)")
        self.body.addWidget(self.keep)
        self.status = hint("")
        self.body.addWidget(self.status)
        self.talk.pressed.connect(self.talk_pressed)
        self.talk.released.connect(self.talk_released)
        self.stt.currentIndexChanged.connect(self._stt_changed)
        self.end_silence.valueChanged.connect(self._sliders_changed)
        self.barge_in_min.valueChanged.connect(self._sliders_changed)
        for combo in (self.device, self.barge_in, self.stt_device, self.compute):
            combo.currentIndexChanged.connect(self.changed)
        for box in (self.enabled, self.hands_free, self.keep):
            box.toggled.connect(self.changed)
        for edit in (self.keywords, self.model, self.wyoming, self.language):
            edit.editingFinished.connect(self.changed)

    @staticmethod
    def _with_label(slider: QSlider, label: QLabel) -> QHBoxLayout:
        label.setMinimumWidth(52)
        row = QHBoxLayout()
        row.addWidget(slider, 1)
        row.addWidget(label)
        return row

    def _sliders_changed(self) -> None:
        self.end_silence_label.setText(f"{self.end_silence.value() / 1000:.2f} s")
        self.barge_in_min_label.setText(f"{self.barge_in_min.value() / 1000:.2f} s")
        self.changed.emit()

    def _stt_changed(self) -> None:
        self.stt_pages.setCurrentIndex(max(self.stt.currentIndex(), 0))
        self.changed.emit()

    def set_devices(self, choices: list[tuple[str, str]], current: str) -> None:
        """``choices``: (key, title) of each input (``app.voice.microphone.input_choices``)."""
        self.device.blockSignals(True)
        self.device.clear()
        self.device.addItem("System default", "")
        for key, title in choices:
            self.device.addItem(title, key)
        index = self.device.findData(current)
        if index < 0 and current:
            self.device.addItem(f"{current.removeprefix('pulse-source:')} (not found)", current)
            index = self.device.count() - 1
        self.device.setCurrentIndex(max(index, 0))
        self.device.blockSignals(False)

    def show_listening(self, listening: bool, level_dbfs: float) -> None:
        self.listening.setVisible(listening)
        self.level.setValue(round(max(level_dbfs, METER_FLOOR_DB)) if listening else METER_FLOOR_DB)

    def load(self, settings: AppSettings) -> None:
        voice = settings.voice_input
        widgets = (self.enabled, self.hands_free, self.keep, self.end_silence, self.barge_in_min, self.barge_in)
        for widget in (*widgets, self.stt, self.stt_device, self.compute):
            widget.blockSignals(True)
        self.enabled.setChecked(voice.enabled)
        self.talk.setEnabled(voice.enabled)
        if self.device.findData(voice.input_device) < 0:  # listed before the inputs are looked for: kept
            self.set_devices([], voice.input_device)
        self.hands_free.setChecked(voice.mode == "hands_free")
        self.keep.setChecked(voice.keep_recordings)
        self.end_silence.setValue(round(voice.end_silence_s * 1000))
        self.barge_in_min.setValue(round(voice.barge_in_min_s * 1000))
        self.barge_in.setCurrentIndex(max(self.barge_in.findData(voice.barge_in), 0))
        self.stt.setCurrentIndex(max(self.stt.findData(voice.stt), 0))
        self.stt_device.setCurrentIndex(max(self.stt_device.findData(voice.stt_device), 0))
        self.compute.setCurrentIndex(max(self.compute.findData(voice.stt_compute), 0))
        self.stt_pages.setCurrentIndex(max(self.stt.currentIndex(), 0))
        self.keywords.setText(", ".join(voice.barge_in_keywords))
        self.model.setText(voice.stt_model)
        self.wyoming.setText(voice.wyoming_uri)
        self.stt_timeout.setValue(voice.stt_timeout_s)
        self.language.setText(voice.language or "")
        self.end_silence_label.setText(f"{self.end_silence.value() / 1000:.2f} s")
        self.barge_in_min_label.setText(f"{self.barge_in_min.value() / 1000:.2f} s")
        for widget in (*widgets, self.stt, self.stt_device, self.compute):
            widget.blockSignals(False)

    def store(self, settings: AppSettings) -> None:
        keywords = tuple(w for w in (k.strip().lower() for k in self.keywords.text().split(",")) if w)
        settings.voice_input = replace(
            settings.voice_input,
            enabled=self.enabled.isChecked(),
            input_device=self.device.currentData() or "",
            mode=Mode.HANDS_FREE if self.hands_free.isChecked() else Mode.PUSH_TO_TALK,
            keep_recordings=self.keep.isChecked(),
            end_silence_s=self.end_silence.value() / 1000,
            barge_in_min_s=self.barge_in_min.value() / 1000,
            barge_in=self.barge_in.currentData(),
            barge_in_keywords=keywords or settings.voice_input.barge_in_keywords,
            stt=self.stt.currentData(),
            stt_device=self.stt_device.currentData(),
            stt_compute=self.compute.currentData(),
            stt_model=self.model.text().strip() or settings.voice_input.stt_model,
            wyoming_uri=self.wyoming.text().strip(),
            stt_timeout_s=self.stt_timeout.value(),
            language=self.language.text().strip() or None,
        )
