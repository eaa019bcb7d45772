"""The latency panel: the turn's headline numbers, its live per-sentence waterfall, and export of the turn or the
session, in ``engine.measure.timeline``'s JSON/CSV forms (the same as ``voicedesk bench`` writes)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QLabel,
    QMenu,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from voicedesk.app.ui.flow_layout import FlowLayout
from voicedesk.app.ui.theme import PALETTE
from voicedesk.app.ui.waterfall import ROW_HEIGHT, WaterfallAxis, WaterfallRows, format_s
from voicedesk.engine.errors import UsageError
from voicedesk.engine.measure.timeline import CSV_COLUMNS, UtteranceTimeline, timelines_document

EXPORTS = {  # kind: (menu text, file filter, suggested name)
    "json": ("This turn as JSON…", "JSON (*.json)", "voicedesk-latency.json"),
    "csv": ("This turn's sentences as CSV…", "CSV (*.csv)", "voicedesk-latency.csv"),
    "session-json": ("Whole session as JSON…", "JSON (*.json)", "voicedesk-session-latency.json"),
    "session-csv": ("Whole session's sentences as CSV…", "CSV (*.csv)", "voicedesk-session-latency.csv"),
}
FOCUS_RING = f"QToolButton:focus {{ border: 2px solid {PALETTE.accent}; }}"
"""The app's sheet styles tool buttons without a focus ring; here every tab stop shows one."""


def write_json(timeline: UtteranceTimeline, path: Path) -> None:
    path.write_text(json.dumps(timeline.to_dict(), indent=2) + "\n", encoding="utf-8")


def write_csv(timelines: UtteranceTimeline | Iterable[UtteranceTimeline], path: Path) -> None:
    """One row per sentence (``engine.measure.timeline.CSV_COLUMNS``); the label column names its turn."""
    many = [timelines] if isinstance(timelines, UtteranceTimeline) else list(timelines)
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=list(CSV_COLUMNS))
        writer.writeheader()
        for timeline in many:
            for row in timeline.csv_rows():
                writer.writerow({k: "" if v is None else v for k, v in row.items()})


def write_session_json(timelines: Iterable[UtteranceTimeline], path: Path) -> None:
    path.write_text(json.dumps(timelines_document(timelines), indent=2) + "\n", encoding="utf-8")


class LatencyPanel(QFrame):
    """Title, headline numbers, export, and the waterfall of the turn being spoken (or the last one)."""

    export_requested = Signal(str)  # a key of EXPORTS

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("LatencyPanel")
        self.setStyleSheet(FOCUS_RING)
        self.session: dict[str, UtteranceTimeline] = {}
        """Every turn's latest timeline, by label, in the order the turns came."""
        self._sizes: list[int] | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 6)
        layout.setSpacing(4)
        # Title, headline chips and Export flow onto more lines in a narrow window (never behind a scroll bar).
        header_row = QWidget()
        header = FlowLayout(header_row)
        self.toggle = QToolButton()
        self.toggle.setText("Latency")
        self.toggle.setObjectName("PanelTitle")
        self.toggle.setCheckable(True)
        self.toggle.setChecked(True)
        self.toggle.setArrowType(Qt.ArrowType.DownArrow)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setToolTip("Show or hide the waterfall (drag the bar above the panel to resize it)")
        self.toggle.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.toggle.toggled.connect(lambda shown: self.set_collapsed(not shown))
        header.addWidget(self.toggle)
        self.metrics: dict[str, QLabel] = {}
        for key in ("first_audio", "dac", "rtf", "underruns"):
            chip = QLabel()
            chip.setObjectName("Metric")
            header.addWidget(chip)
            self.metrics[key] = chip
        self.export = QToolButton()
        self.export.setText("Export")
        self.export.setToolTip(
            "Save this turn's or the whole session's timelines (the `voicedesk bench --json` schema)"
        )
        self.export.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.export.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        menu = QMenu(self.export)
        self.export_actions = {}
        for kind, (text, _filter, _name) in EXPORTS.items():
            action = menu.addAction(text)
            action.triggered.connect(lambda _checked=False, k=kind: self.export_requested.emit(k))
            self.export_actions[kind] = action
        self.export.setMenu(menu)
        header.addWidget(self.export)
        layout.addWidget(header_row)
        self.header_row = header_row
        self.body = QWidget()
        body = QVBoxLayout(self.body)
        body.setContentsMargins(0, 0, 0, 0)
        body.setSpacing(0)
        self.axis = WaterfallAxis()
        self.rows = WaterfallRows()
        self.scroll = QScrollArea()
        self.scroll.setWidget(self.rows)
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # a tab stop here would show no ring; wheel scrolls
        self.scroll.setMinimumHeight(ROW_HEIGHT + 8)  # the splitter may make the panel as small as one row
        # Its wish for height counts for nothing: the panel is as tall as its header and one row, the rest is
        # given by the splitter (else the panel asks for more than a small window has, and scrolls as a whole).
        self.scroll.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Ignored)
        body.addWidget(self.axis)
        body.addWidget(self.scroll, 1)
        layout.addWidget(self.body, 1)
        self.set_timeline(None)

    def height_for(self, width: int, rows: int) -> int:
        """How tall the panel must be at ``width`` to show its header, legend, axis and ``rows`` whole rows."""
        margins = self.layout().contentsMargins()
        inner = width - margins.left() - margins.right()
        return (
            margins.top()
            + self.header_row.heightForWidth(inner)
            + self.layout().spacing()
            + self.axis.height_for(inner)
            + rows * ROW_HEIGHT
            + 8
            + margins.bottom()
        )

    # ---- data -------------------------------------------------------------------------------------

    @property
    def timeline(self) -> UtteranceTimeline | None:
        return self.rows.timeline

    def keep(self, timeline: UtteranceTimeline) -> None:
        """Remembers a turn's timeline for the session export (the latest one of each turn wins)."""
        self.session[timeline.label or f"turn {len(self.session) + 1}"] = timeline
        self._update_exports()

    def set_timeline(self, timeline: UtteranceTimeline | None, stalls: int = 0, stalled_s: float = 0.0) -> None:
        """Shows ``timeline``; ``stalls``, ``stalled_s``: the gaps the listener heard and the silence they added (the
        player measures both, at the device: the timeline's rows only count those a late sentence caused)."""
        if timeline is not None:
            self.keep(timeline)
        self.rows.set_timeline(timeline)
        self.axis.set_sentences(*((timeline.sentences, timeline.speech) if timeline is not None else ((), None)))
        summary = timeline.summary if timeline is not None else {}
        rtf = summary.get("rtf")
        self.metrics["first_audio"].setText(f"First audible <b>{format_s(summary.get('first_audible_at_s'))}</b>")
        since = "the end of your speech" if timeline is not None and timeline.speech else "the first text fragment"
        self.metrics["first_audio"].setToolTip(f"From {since} to the first audible sample")
        self.metrics["dac"].setText(f"Sound card <b>{format_s(summary.get('dac_at_s'))}</b>")
        self.metrics["dac"].setToolTip(f"From {since} to the first sample at the DAC")
        self.metrics["rtf"].setText(f"<b>{'–' if rtf is None else f'{rtf:.1f}×'}</b> RT")
        self.metrics["rtf"].setToolTip("Real time: seconds of audio made per second of synthesis")
        heard = f" · {format_s(stalled_s)}" if stalls and stalled_s > 0 else ""
        self.metrics["underruns"].setText(f"<b>{stalls}</b> {'stall' if stalls == 1 else 'stalls'}{heard}")
        self.metrics["underruns"].setToolTip(
            "Times the sound ran dry mid-reply and the listener heard a gap (one stall however many audio "
            "callbacks it lasted), and the silence they added up to"
        )
        self._update_exports()

    def save(self, kind: str, path: Path) -> None:
        """Writes ``kind`` (a key of EXPORTS) to ``path``; says what is missing when there is nothing yet."""
        if kind not in EXPORTS:
            raise UsageError(f"Unknown export {kind!r}; known: {', '.join(EXPORTS)}.")
        if kind.startswith("session"):
            if not self.session:
                raise UsageError("Nothing to export yet: speak something first.")
            (write_session_json if kind == "session-json" else write_csv)(self.session.values(), path)
            return
        if self.timeline is None:
            raise UsageError("Nothing to export yet: speak something first.")
        (write_json if kind == "json" else write_csv)(self.timeline, path)

    def _update_exports(self) -> None:
        # The button stays a tab stop even before the first turn; its entries say what there is to save.
        for kind, action in self.export_actions.items():
            action.setEnabled(bool(self.session) if kind.startswith("session") else self.timeline is not None)

    # ---- collapsing -------------------------------------------------------------------------------

    @property
    def collapsed(self) -> bool:
        return not self.toggle.isChecked()

    def showEvent(self, event) -> None:
        splitter, _pane = self._splitter()
        if splitter is not None and splitter.handleWidth() < 6:
            splitter.setHandleWidth(6)  # wide enough to find and drag
        super().showEvent(event)

    def set_collapsed(self, collapsed: bool) -> None:
        """Hides the waterfall (the header line stays) and gives the room to the pane above, or brings it back."""
        if self.toggle.isChecked() == collapsed:
            self.toggle.setChecked(not collapsed)  # re-enters through toggled
            return
        self.toggle.setArrowType(Qt.ArrowType.RightArrow if collapsed else Qt.ArrowType.DownArrow)
        splitter, pane = self._splitter()
        if collapsed and splitter is not None:
            self._sizes = splitter.sizes()
        self.body.setVisible(not collapsed)
        if splitter is None:
            return
        widget: QWidget | None = self
        while widget is not None and widget is not splitter:  # minimum sizes now, not at the next event
            if widget.layout() is not None:
                widget.layout().activate()
            widget = widget.parentWidget()
        index = splitter.indexOf(pane)
        sizes = splitter.sizes()
        total = sum(sizes)
        if collapsed:
            own = pane.minimumSizeHint().height()
            sizes[index] = own
            sizes[index - 1 if index else index + 1] = total - own
        elif self._sizes is not None and sum(self._sizes) == total:
            sizes = self._sizes
        splitter.setSizes(sizes)

    def _splitter(self) -> tuple[QSplitter | None, QWidget]:
        """The splitter this panel sits in (directly or inside a wrapper), and its pane."""
        pane: QWidget = self
        while pane.parentWidget() is not None and not isinstance(pane.parentWidget(), QSplitter):
            pane = pane.parentWidget()
        parent = pane.parentWidget()
        return (parent if isinstance(parent, QSplitter) else None), pane
