"""The latency panel: a live per-sentence waterfall (QPainter) and the turn's headline numbers, with export.

Each row is one sentence on a shared time axis that starts at the turn's first text fragment:
text arriving → chunk released → sent → synthesis (first audio byte) → leading silence (first audible sample),
with a diamond where its first sample reached the DAC. The data and its JSON/CSV forms are
``engine.timeline.UtteranceTimeline``'s, the same as ``voicedesk bench`` writes.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPainterPath, QPen, QPolygonF
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QMenu, QSizePolicy, QToolButton, QVBoxLayout, QWidget

from app.ui.theme import PALETTE
from engine.timeline import CSV_COLUMNS, SentenceTimeline, UtteranceTimeline

SEGMENTS = (  # (from stage, to stage, colour, legend)
    ("fragment_in", "chunk_released", PALETTE.stage_text, "Text arriving"),
    ("chunk_released", "sent", PALETTE.stage_dispatch, "Queued → sent"),
    ("sent", "first_byte", PALETTE.stage_synthesis, "Engine, to first byte"),
    ("first_byte", "first_audible", PALETTE.stage_onset, "Leading silence"),
)
ROW_HEIGHT = 22
ROWS_TOP = 42
LABEL_WIDTH = 200
STATS_WIDTH = 190
TICK_STEPS_S = (0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0)


def format_s(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "–"
    return f"{seconds * 1000:.0f} ms" if abs(seconds) < 1 else f"{seconds:.2f} s"


def format_tick(seconds: float) -> str:
    if seconds == 0:
        return "0"
    return f"{seconds * 1000:g} ms" if seconds < 1 else f"{seconds:g} s"


def nice_step(span_s: float, max_ticks: int = 6) -> float:
    for step in TICK_STEPS_S:
        if span_s / step <= max_ticks:
            return step
    return TICK_STEPS_S[-1]


def write_json(timeline: UtteranceTimeline, path: Path) -> None:
    path.write_text(json.dumps(timeline.to_dict(), indent=2) + "\n", encoding="utf-8")


def write_csv(timeline: UtteranceTimeline, path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=list(CSV_COLUMNS))
        writer.writeheader()
        for row in timeline.csv_rows():
            writer.writerow({k: "" if v is None else v for k, v in row.items()})


class Waterfall(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.timeline: UtteranceTimeline | None = None
        self.setMouseTracking(True)
        self.setMinimumHeight(ROWS_TOP + 3 * ROW_HEIGHT + 4)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    def set_timeline(self, timeline: UtteranceTimeline | None) -> None:
        self.timeline = timeline
        self.update()

    # ---- geometry ---------------------------------------------------------------------------------

    def _rows(self) -> list[SentenceTimeline]:
        if self.timeline is None:
            return []
        capacity = max((self.height() - ROWS_TOP - 4) // ROW_HEIGHT, 1)
        return list(self.timeline.sentences[-capacity:])

    def _plot(self) -> QRectF:
        return QRectF(LABEL_WIDTH, 30, max(self.width() - LABEL_WIDTH - STATS_WIDTH - 16, 60), 0)

    def _span_s(self, rows: list[SentenceTimeline]) -> float:
        ends = [
            t
            for s in rows
            for t in (s.dac_at_s, s.first_audible_at_s, s.first_byte_at_s, s.sent_at_s, s.chunk_released_at_s)
            if t is not None
        ]
        return max(max(ends, default=0.0) * 1.08, 0.1)

    # ---- painting ---------------------------------------------------------------------------------

    def paintEvent(self, _event) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        rows = self._rows()
        small = QFont(self.font())
        small.setPointSizeF(max(self.font().pointSizeF() - 1.5, 7.5))
        painter.setFont(small)
        self._legend(painter)
        if not rows:
            painter.setPen(QColor(PALETTE.text_muted))
            painter.drawText(
                self.rect().adjusted(0, 30, 0, 0),
                Qt.AlignmentFlag.AlignCenter,
                "Speak something to see where the time goes:\n"
                "text → chunk → synthesis → first audible sample → the sound card.",
            )
            return
        plot = self._plot()
        span = self._span_s(rows)
        top = ROWS_TOP
        bottom = top + len(rows) * ROW_HEIGHT
        self._axis(painter, plot, span, top, bottom)
        metrics = QFontMetrics(small)
        for number, sentence in enumerate(rows):
            y = top + number * ROW_HEIGHT
            if number % 2 == 0:
                painter.fillRect(QRectF(0, y, self.width(), ROW_HEIGHT), QColor(PALETTE.surface_alt))
            self._row(painter, metrics, plot, span, y, sentence)

    def _legend(self, painter: QPainter) -> None:
        x = 8.0
        painter.setPen(QColor(PALETTE.text_secondary))
        for _start, _end, color, text in SEGMENTS:
            painter.fillRect(QRectF(x, 9, 12, 8), QColor(color))
            painter.drawText(QPointF(x + 17, 17), text)
            x += 34 + painter.fontMetrics().horizontalAdvance(text)
        _diamond(painter, QPointF(x + 5, 13), QColor(PALETTE.stage_output))
        painter.setPen(QColor(PALETTE.text_secondary))
        painter.drawText(QPointF(x + 15, 17), "First sample at the sound card")

    def _axis(self, painter: QPainter, plot: QRectF, span: float, top: float, bottom: float) -> None:
        step = nice_step(span)
        painter.setPen(QPen(QColor(PALETTE.border), 1))
        tick = 0.0
        while tick <= span + 1e-9:
            x = plot.left() + tick / span * plot.width()
            painter.setPen(QPen(QColor(PALETTE.border), 1, Qt.PenStyle.DotLine if tick else Qt.PenStyle.SolidLine))
            painter.drawLine(QPointF(x, top - 4), QPointF(x, bottom))
            painter.setPen(QColor(PALETTE.text_muted))
            label = format_tick(round(tick, 6))
            painter.drawText(QRectF(x - 40, top - 18, 80, 14), Qt.AlignmentFlag.AlignCenter, label)
            tick += step
        painter.setPen(QColor(PALETTE.text_muted))
        right = self.width() - STATS_WIDTH
        for offset, header in ((0, "audio"), (62, "RTF"), (120, "underruns")):
            painter.drawText(QRectF(right + offset, top - 18, 66, 14), Qt.AlignmentFlag.AlignLeft, header)

    def _row(
        self, painter: QPainter, metrics: QFontMetrics, plot: QRectF, span: float, y: float, s: SentenceTimeline
    ) -> None:
        mid = y + ROW_HEIGHT / 2
        painter.setPen(QColor(PALETTE.text_secondary))
        label = metrics.elidedText(f"{s.seq + 1}   {s.text or ''}", Qt.TextElideMode.ElideRight, LABEL_WIDTH - 16)
        painter.drawText(QRectF(8, y, LABEL_WIDTH - 12, ROW_HEIGHT), Qt.AlignmentFlag.AlignVCenter, label)

        def x_of(t: float) -> float:
            return plot.left() + max(t, 0.0) / span * plot.width()

        if s.first_byte_at_s is not None and s.dac_at_s is not None:
            painter.setPen(QPen(QColor(PALETTE.stage_output), 1.4, Qt.PenStyle.DashLine))
            painter.drawLine(QPointF(x_of(s.first_byte_at_s), mid), QPointF(x_of(s.dac_at_s), mid))
        for start, end, color, _text in SEGMENTS:
            a, b = s.at(start), s.at(end)
            if a is None or b is None:
                continue
            left, right = x_of(a), x_of(b)
            path = QPainterPath()
            path.addRoundedRect(QRectF(left, mid - 5, max(right - left, 2.0), 10), 3, 3)
            painter.fillPath(path, QColor(color))
        if s.first_audible_at_s is not None:
            painter.setPen(QPen(QColor(PALETTE.text), 1.6))
            x = x_of(s.first_audible_at_s)
            painter.drawLine(QPointF(x, mid - 7), QPointF(x, mid + 7))
        if s.dac_at_s is not None:
            _diamond(painter, QPointF(x_of(s.dac_at_s), mid), QColor(PALETTE.stage_output))
        right = self.width() - STATS_WIDTH
        painter.setPen(QColor(PALETTE.text_secondary))
        rtf = s.rtf
        cells = (
            (0, format_s(s.audio_s)),
            (62, "–" if rtf is None else f"{rtf:.1f}×"),
            (120, "–" if s.underruns is None else str(s.underruns)),
        )
        for offset, text in cells:
            if offset == 120 and s.underruns:
                painter.setPen(QColor(PALETTE.error))
            painter.drawText(QRectF(right + offset, y, 66, ROW_HEIGHT), Qt.AlignmentFlag.AlignVCenter, text)

    # ---- hover --------------------------------------------------------------------------------------

    def mouseMoveEvent(self, event) -> None:
        rows = self._rows()
        index = int((event.position().y() - ROWS_TOP) // ROW_HEIGHT)
        if not 0 <= index < len(rows) or event.position().y() < ROWS_TOP:
            self.setToolTip("")
            return
        s = rows[index]
        self.setToolTip(
            f"<b>Sentence {s.seq + 1}</b>: {s.text or ''}<br>"
            f"text in {format_s(s.fragment_in_at_s)} · released {format_s(s.chunk_released_at_s)} · "
            f"sent {format_s(s.sent_at_s)}<br>first byte {format_s(s.first_byte_at_s)} (TTFB {format_s(s.ttfb_s)}) · "
            f"first audible {format_s(s.first_audible_at_s)} · at the DAC {format_s(s.dac_at_s)}<br>"
            f"audio {format_s(s.audio_s)} in {format_s(s.synthesis_s)} of synthesis"
        )


def _diamond(painter: QPainter, at: QPointF, color: QColor) -> None:
    painter.setPen(QPen(QColor("white"), 1.2))
    painter.setBrush(color)
    painter.drawPolygon(
        QPolygonF(
            [
                QPointF(at.x(), at.y() - 6),
                QPointF(at.x() + 6, at.y()),
                QPointF(at.x(), at.y() + 6),
                QPointF(at.x() - 6, at.y()),
            ]
        )
    )
    painter.setBrush(Qt.BrushStyle.NoBrush)


class LatencyPanel(QFrame):
    """Title, headline numbers, export buttons, and the waterfall of the turn being spoken (or the last one)."""

    export_requested = Signal(str)  # "json" | "csv"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("LatencyPanel")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(14, 10, 14, 8)
        layout.setSpacing(4)
        header = QHBoxLayout()
        title = QLabel("Latency")
        title.setObjectName("PanelTitle")
        header.addWidget(title)
        self.metrics: dict[str, QLabel] = {}
        for key in ("first_audio", "dac", "rtf", "underruns"):
            chip = QLabel()
            chip.setObjectName("Metric")
            header.addWidget(chip)
            self.metrics[key] = chip
        header.addStretch(1)
        self.export = QToolButton()
        self.export.setText("Export")
        self.export.setToolTip("Save this turn's timeline (the same schema as `voicedesk bench --json`)")
        self.export.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.export)
        for kind, text in (("json", "Timeline as JSON…"), ("csv", "Sentences as CSV…")):
            menu.addAction(text).triggered.connect(lambda _checked=False, k=kind: self.export_requested.emit(k))
        self.export.setMenu(menu)
        header.addWidget(self.export)
        layout.addLayout(header)
        self.waterfall = Waterfall()
        layout.addWidget(self.waterfall, 1)
        self.set_timeline(None)

    @property
    def timeline(self) -> UtteranceTimeline | None:
        return self.waterfall.timeline

    def set_timeline(self, timeline: UtteranceTimeline | None) -> None:
        self.waterfall.set_timeline(timeline)
        summary = timeline.summary if timeline is not None else {}
        rtf = summary.get("rtf")
        underruns = summary.get("underruns")
        self.metrics["first_audio"].setText(f"First audible <b>{format_s(summary.get('first_audible_at_s'))}</b>")
        self.metrics["first_audio"].setToolTip("From the first text fragment to the first audible sample")
        self.metrics["dac"].setText(f"Sound card <b>{format_s(summary.get('dac_at_s'))}</b>")
        self.metrics["dac"].setToolTip("From the first text fragment to the first sample at the DAC")
        self.metrics["rtf"].setText(f"<b>{'–' if rtf is None else f'{rtf:.1f}×'}</b> real time")
        self.metrics["rtf"].setToolTip("Seconds of audio made per second of synthesis")
        self.metrics["underruns"].setText(f"<b>{underruns or 0}</b> underruns")
        self.export.setEnabled(timeline is not None)
