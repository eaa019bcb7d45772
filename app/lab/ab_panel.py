"""The A/B runs window (Tools ▸ A/B latency runs…): the same text N times through the app's engine, alone (A/A)
or alternating with another engine, and each stage's p50/p90/p99 side by side.

A thin view over ``app.lab.ab_runs.AbRunner``: it reads the form, starts and cancels the runner, and shows its
progress; the numbers are ``app.lab.table.ab_stage_table``'s cells, the ones ``voicedesk bench ab`` prints.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialogButtonBox,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMainWindow,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from voicedesk.app.lab.ab_runs import MAX_RUNS, AbPhase, AbProgress, AbRequest, AbRunner, EngineFactory
from voicedesk.app.lab.context import DEFAULT_TEXT
from voicedesk.app.lab.table import ab_stage_table, num
from voicedesk.app.messages import error_text
from voicedesk.app.ui.theme import PALETTE
from voicedesk.engine.errors import UsageError, VoicedeskError

SAME = "same"
FOCUS_RING = f"""
    QPushButton:focus, QToolButton:focus {{ border: 2px solid {PALETTE.accent}; }}
    QTableWidget:focus, QPlainTextEdit:focus {{ border: 1px solid {PALETTE.accent}; }}
"""
"""Every tab stop here shows where the keyboard is (the app's sheet styles buttons without a focus ring)."""


@dataclass(frozen=True, slots=True)
class EngineChoice:
    """An engine the runner can use: how to open it, whether the runner closes it after, and its name."""

    open: EngineFactory
    owned: bool
    label: str


class AbEngines:
    """What the window offers: engine A (the app's selected engine) and the other kinds for B."""

    def __init__(
        self,
        engine_a: Callable[[], EngineChoice],
        engine_b: Callable[[str], EngineChoice],
        kinds: dict[str, str],
        stop_speech: Callable[[], Awaitable[object]],
        voice: Callable[[], str],
    ) -> None:
        self.engine_a = engine_a
        self.engine_b = engine_b
        self.kinds = kinds
        """kind → label ("local" → "Local")."""
        self.stop_speech = stop_speech
        self.voice = voice


class RunCount(QWidget):
    """How many runs per engine: the number, with − and + (a styled QSpinBox draws its text and arrows cut off
    in Qt 6.12)."""

    def __init__(self, value: int) -> None:
        super().__init__()
        self._value = value
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        self.label = QLabel()
        self.label.setMinimumWidth(self.label.fontMetrics().horizontalAdvance(f"{MAX_RUNS} per engine") + 8)
        self.fewer, self.more = QPushButton("−"), QPushButton("+")
        self.fewer.setToolTip("One run fewer per engine")
        self.more.setToolTip("One run more per engine")
        for button, step in ((self.fewer, self.stepDown), (self.more, self.stepUp)):
            button.setMinimumWidth(34)
            button.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
            button.clicked.connect(step)
        for widget in (self.label, self.fewer, self.more):
            layout.addWidget(widget)
        self.setValue(value)

    def value(self) -> int:
        return self._value

    def setValue(self, value: int) -> None:
        self._value = min(max(int(value), 1), MAX_RUNS)
        self.label.setText(f"{self._value} per engine")
        self.fewer.setEnabled(self._value > 1)
        self.more.setEnabled(self._value < MAX_RUNS)

    def stepUp(self) -> None:
        self.setValue(self._value + 1)

    def stepDown(self) -> None:
        self.setValue(self._value - 1)


class AbWindow(QWidget):
    def __init__(self, engines: AbEngines, parent: QWidget | None = None) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setWindowTitle("A/B latency runs — voicedesk")
        self.setObjectName("AbWindow")
        self.setStyleSheet(f"QWidget#AbWindow {{ background: {PALETTE.window}; }}" + FOCUS_RING)
        self.engines = engines
        self.runner: AbRunner | None = None
        self._task: asyncio.Future[object] | None = None
        self._build()
        self.resize(1040, 640)
        screen = (parent.screen() if parent is not None else None) or QGuiApplication.primaryScreen()
        if screen is not None:  # never larger than the screen it opens on
            self.resize(self.size().boundedTo(screen.availableGeometry().size()))
        self.show_progress(AbProgress(AbPhase.IDLE))

    # ---- layout -----------------------------------------------------------------------------------

    def _build(self) -> None:
        outer = QVBoxLayout(self)
        outer.setContentsMargins(18, 14, 18, 14)
        outer.setSpacing(8)
        title = QLabel("A/B latency runs")
        title.setObjectName("PanelTitle")
        outer.addWidget(title)
        about = QLabel(
            "The same text N times per engine, A B A B …, each run on a fresh session and not played — measured "
            "and summarized by the code <code>voicedesk bench ab</code> runs, so the numbers are the bench's."
        )
        about.setObjectName("Hint")
        about.setWordWrap(True)
        outer.addWidget(about)
        form = QGridLayout()
        form.setHorizontalSpacing(10)
        form.setVerticalSpacing(6)
        self.text = QPlainTextEdit(DEFAULT_TEXT)
        self.text.setTabChangesFocus(True)
        lines = self.text.fontMetrics().lineSpacing()
        self.text.setMinimumHeight(3 * lines + 16)  # three whole lines at any width (it scrolls beyond)
        self.text.setMaximumHeight(5 * lines + 16)
        self.runs = RunCount(5)
        self.engine_a = QLabel()
        self.engine_b = QComboBox()
        self.engine_b.setMinimumWidth(240)
        form.addWidget(QLabel("Text"), 0, 0, Qt.AlignmentFlag.AlignTop)
        form.addWidget(self.text, 0, 1, 1, 5)
        form.addWidget(QLabel("Runs"), 1, 0)
        form.addWidget(self.runs, 1, 1)
        form.addWidget(QLabel("A"), 1, 2)
        form.addWidget(self.engine_a, 1, 3)
        form.addWidget(QLabel("B"), 1, 4)
        form.addWidget(self.engine_b, 1, 5)
        form.setColumnStretch(3, 1)
        outer.addLayout(form)
        buttons = QHBoxLayout()
        self.start = QPushButton("Start runs  ▶")
        self.start.setObjectName("Primary")
        self.cancel = QPushButton("Cancel")
        self.export = QPushButton("Export report…")
        self.export.setToolTip("The runs as the voicedesk.bench-lab/1 report `voicedesk bench ab --json` writes")
        self.progress = QProgressBar()
        self.status = QLabel()
        self.status.setObjectName("Hint")
        for button in (self.start, self.cancel, self.export):
            buttons.addWidget(button)
        buttons.addWidget(self.progress, 1)
        outer.addLayout(buttons)
        outer.addWidget(self.status)
        self.table = QTableWidget()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.setAlternatingRowColors(True)
        outer.addWidget(self.table, 1)
        self.ratio = QLabel()
        self.ratio.setWordWrap(True)
        outer.addWidget(self.ratio)
        closing = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.close_button = closing.button(QDialogButtonBox.StandardButton.Close)
        closing.rejected.connect(self.close)
        outer.addWidget(closing)
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self, activated=self.close)
        self.start.clicked.connect(self.request_start)
        self.cancel.clicked.connect(self.request_cancel)
        self.export.clicked.connect(self.export_dialog)
        self.setTabOrder(self.text, self.runs.fewer)
        self.setTabOrder(self.runs.fewer, self.runs.more)
        self.setTabOrder(self.runs.more, self.engine_b)
        self.setTabOrder(self.engine_b, self.start)
        self.setTabOrder(self.start, self.cancel)
        self.setTabOrder(self.cancel, self.export)
        self.setTabOrder(self.export, self.table)
        self.setTabOrder(self.table, self.close_button)

    def refresh_engines(self) -> None:
        """Engine A is whatever the app speaks with now; B is A again or one of the other kinds."""
        a = self.engines.engine_a()
        self.engine_a.setText(f"<b>{a.label}</b>  (the app's engine)")
        chosen = self.engine_b.currentData()
        self.engine_b.clear()
        self.engine_b.addItem(f"{a.label} again (A/A: shows the noise)", SAME)
        for kind, label in self.engines.kinds.items():
            if not a.label.startswith(label):
                self.engine_b.addItem(label, kind)
        index = self.engine_b.findData(chosen)
        self.engine_b.setCurrentIndex(max(index, 0))

    def showEvent(self, event) -> None:
        self.refresh_engines()
        super().showEvent(event)

    # ---- actions ----------------------------------------------------------------------------------

    def request_start(self) -> asyncio.Future[object]:
        self._task = asyncio.ensure_future(self.start_runs())
        return self._task

    async def start_runs(self) -> None:
        if self.runner is not None and self.runner.running:
            return
        await self.engines.stop_speech()  # a reply playing would share the model with the runs
        a = self.engines.engine_a()
        kind = self.engine_b.currentData()
        b = None if kind in (None, SAME) else self.engines.engine_b(kind)
        self.runner = AbRunner(a.open, b.open if b else None, self.show_progress, owns_b=b.owned if b else False)
        voice = self.engines.voice()
        request = AbRequest(self.text.toPlainText(), self.runs.value(), a.label, b.label if b else None, voice)
        try:
            self.runner.start(request)
        except VoicedeskError as exc:
            self.show_progress(AbProgress(AbPhase.FAILED, message=error_text(exc)))
            return
        await self.runner.wait()

    def request_cancel(self) -> None:
        if self.runner is not None:
            self.runner.cancel()

    def export_report(self, path: Path) -> None:
        document = self.runner.document() if self.runner is not None else None
        if document is None:
            raise UsageError("Nothing to export yet: start some runs first.")
        path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        self.status.setText(f"Report saved to {path}")

    def export_dialog(self) -> None:
        name, _ = QFileDialog.getSaveFileName(self, "Export A/B report", "voicedesk-ab.json", "JSON (*.json)")
        if name:
            try:
                self.export_report(Path(name))
            except (VoicedeskError, OSError) as exc:
                self.status.setText(getattr(exc, "message", None) or str(exc))

    # ---- showing the runner's state ---------------------------------------------------------------

    def show_progress(self, progress: AbProgress) -> None:
        running = progress.phase is AbPhase.RUNNING
        self.start.setEnabled(not running)
        self.cancel.setEnabled(running)
        self.export.setEnabled(progress.summary is not None)
        for field in (self.text, self.runs, self.engine_b):
            field.setEnabled(not running)
        self.progress.setRange(0, max(progress.total, 1))
        self.progress.setValue(progress.done)
        words = {
            AbPhase.IDLE: "Pick the engines and the number of runs, then start.",
            AbPhase.RUNNING: f"Running: {progress.done} of {progress.total} runs measured",
            AbPhase.DONE: f"Done: {progress.done} runs",
            AbPhase.CANCELLED: f"Cancelled after {progress.done} of {progress.total} runs (kept below)",
            AbPhase.FAILED: "Failed",
        }[progress.phase]
        self.status.setText(words + (f" — {progress.message}" if progress.message else ""))
        self.show_summary(progress.summary)

    def show_summary(self, summary: dict[str, Any] | None) -> None:
        if summary is None:
            self.table.clear()
            self.table.setRowCount(0)
            self.table.setColumnCount(0)
            self.ratio.setText("")
            return
        header, *rows = ab_stage_table(summary)
        engines = summary["engines"]
        self.table.setColumnCount(len(header))
        self.table.setRowCount(len(rows))
        self.table.setHorizontalHeaderLabels(header)
        for r, row in enumerate(rows):
            for c, cell in enumerate(row):
                item = QTableWidgetItem(cell)
                align = Qt.AlignmentFlag.AlignLeft if c == 0 else Qt.AlignmentFlag.AlignRight
                item.setTextAlignment(align | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(r, c, item)
        heading = self.table.horizontalHeader()
        heading.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        for c in range(1, len(header)):
            heading.setSectionResizeMode(c, QHeaderView.ResizeMode.Stretch)
        runs = summary["groups"]["A"]["runs"]
        self.ratio.setText(
            f"A = {engines['A']}, B = {engines['B']}. Times in ms (RTF ×realtime), over {runs} run(s) per engine: "
            "with few runs p90 and p99 are close to the slowest run. An A/A run's B ÷ A shows the noise. "
            f"{summary['ratio_of']}: <b>{num(summary['ratio'], 3)}</b>"
        )

    def cell_texts(self) -> list[list[str]]:
        """The table as shown: header, then one row per stage (for tests and screenshots)."""
        header = [self.table.horizontalHeaderItem(c).text() for c in range(self.table.columnCount())]
        columns = range(self.table.columnCount())
        rows = [[self.table.item(r, c).text() for c in columns] for r in range(self.table.rowCount())]
        return [header, *rows] if header else []


class AbRunsAction:
    """Tools ▸ A/B latency runs… on the main window; the window is made on first use and kept."""

    def __init__(self, window: QMainWindow, engines: Callable[[], AbEngines]) -> None:
        self._window = window
        self._engines = engines
        self.view: AbWindow | None = None
        menu = window.menuBar().addMenu("&Tools")
        self.action = QAction("A/B latency runs…", window)
        self.action.setShortcut(QKeySequence("Ctrl+Shift+B"))
        self.action.triggered.connect(self.open)
        menu.addAction(self.action)

    def open(self) -> AbWindow:
        if self.view is None:
            self.view = AbWindow(self._engines(), self._window)
        self.view.show()
        self.view.raise_()
        self.view.activateWindow()
        return self.view


def install(window: Any) -> AbRunsAction:
    """The window tool (entry point ``voicedesk.window_tools``): Tools ▸ A/B latency runs on ``window``."""
    return AbRunsAction(window, lambda: window_engines(window))


def window_engines(window: Any) -> AbEngines:
    """The main window's engines as the A/B window sees them (read when a run starts, so they are current)."""
    from voicedesk.app.choices import engine_spec
    from voicedesk.app.engines import KIND_LABELS
    from voicedesk.engine.factory import open_engine

    def engine_a() -> EngineChoice:
        spec = window.hub.spec
        label = KIND_LABELS[spec.kind] + (f" {spec.target}" if spec.target else "")
        return EngineChoice(window.hub.engine, False, label)  # the app's own engine: the runner never closes it

    def engine_b(kind: str) -> EngineChoice:
        if kind == "local":
            return EngineChoice(lambda: window.hub.local(report=False), False, KIND_LABELS["local"])
        window.sidebar.store(window.settings)  # the fields as typed, even if not applied yet
        spec = engine_spec(window.settings, window.sidebar.engine.ws_token.text(), kind=kind)
        return EngineChoice(lambda: open_engine(spec), True, f"{KIND_LABELS[kind]} {spec.target or ''}".strip())

    controller = window.controller
    return AbEngines(engine_a, engine_b, dict(KIND_LABELS), controller.stop, lambda: controller.voice.voice)
