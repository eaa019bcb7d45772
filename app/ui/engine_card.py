"""The engine card: Local / WebSocket / SageMaker, each one's settings, and the live status of the selected one."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLineEdit, QProgressBar, QPushButton

from voicedesk.app.settings import AppSettings
from voicedesk.app.ui.forms import PageSwitcher, form_layout, page, picker
from voicedesk.app.ui.widgets import Card, Segmented, StatusPill, field_label, hint, label
from voicedesk.app.urls import engine_url

ENGINE_PAGES = ("local", "websocket", "sagemaker")
LOCAL_DEVICES = (("auto", "Automatic (CUDA if present)"), ("cpu", "CPU"), ("cuda", "CUDA GPU"))


class EngineCard(Card):
    kind_changed = Signal(str)
    connect_requested = Signal()
    download_requested = Signal()
    import_requested = Signal()
    changed = Signal()

    def __init__(self) -> None:
        super().__init__("Engine")
        self.switch = Segmented([("local", "Local"), ("websocket", "WebSocket"), ("sagemaker", "SageMaker")])
        self.switch.changed.connect(self._kind_clicked)
        self.body.addWidget(self.switch)
        self.status = StatusPill(stacked=True)
        self.body.addWidget(self.status)
        self.message = label("", "Message", wrap=True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.hide()
        self.body.addWidget(self.message)
        self.health = hint("")
        self.health.hide()
        self.body.addWidget(self.health)
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
        self.import_files = QPushButton("Import model files from a folder…")
        self.import_files.setObjectName("Link")
        self.import_files.setToolTip(
            "For a machine without internet: a folder holding config.json, kokoro-v1_0.pth and voices/*.pt "
            "(and optionally spaCy's en_core_web_sm wheel), as `voicedesk models import DIR` takes"
        )
        self.import_files.clicked.connect(self.import_requested)
        self.body.addWidget(self.import_files, 0, Qt.AlignmentFlag.AlignLeft)

        self.pages = PageSwitcher()
        self.device = picker()
        for key, text in LOCAL_DEVICES:
            self.device.addItem(text, key)
        local_form = form_layout()
        local_form.addRow(field_label("Device"), self.device)
        self.pages.addWidget(page(local_form, hint("Kokoro-82M on this machine; works offline.")))

        self.ws_url = QLineEdit()
        self.ws_url.setPlaceholderText("ws://host:8080")
        self.ws_token = QLineEdit()
        self.ws_token.setEchoMode(QLineEdit.EchoMode.Password)
        self.ws_token.setPlaceholderText("optional (or VOICEDESK_TOKEN)")
        ws_form = form_layout()
        ws_form.addRow(field_label("URL"), self.ws_url)
        ws_form.addRow(field_label("Token"), self.ws_token)
        self.ws_connect = QPushButton("Connect")
        self.pages.addWidget(page(ws_form, self.ws_connect))

        self.sm_endpoint = QLineEdit()
        self.sm_endpoint.setPlaceholderText("endpoint name")
        self.sm_region = QLineEdit()
        self.sm_region.setPlaceholderText("e.g. us-east-1")
        self.sm_profile = QLineEdit()
        self.sm_profile.setPlaceholderText("default credentials")
        sm_form = form_layout()
        sm_form.addRow(field_label("Endpoint"), self.sm_endpoint)
        sm_form.addRow(field_label("Region"), self.sm_region)
        sm_form.addRow(field_label("Profile"), self.sm_profile)
        self.sm_connect = QPushButton("Connect")
        self.pages.addWidget(page(sm_form, self.sm_connect))
        self.body.addWidget(self.pages)

        self.failover = QCheckBox("Finish replies locally if a remote fails")
        self.failover.setToolTip(
            "If the WebSocket or SageMaker engine fails mid-reply, the local engine continues from the next "
            "sentence (when the model is on this machine)."
        )
        self.body.addWidget(self.failover)

        for button in (self.ws_connect, self.sm_connect):
            button.clicked.connect(self.connect_requested)
        self.ws_token.textEdited.connect(
            lambda _text: self.point_at_token(False) if self.ws_token.objectName() else None
        )
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
        engine.websocket_url = engine_url(self.ws_url.text())
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

    def point_at_token(self, pointed: bool) -> None:
        """The server asked for a token or refused it: the Token field is marked and takes the keyboard."""
        self.ws_token.setObjectName("Invalid" if pointed else "")
        self.ws_token.setStyleSheet("")  # re-polish with the new object name
        if pointed:
            self.message.setText(f"{self.message.text()} Type it in the Token field (marked).")
            self.ws_token.setFocus()

    def show_health(self, text: str) -> None:
        self.health.setText(text)
        self.health.setVisible(bool(text))
