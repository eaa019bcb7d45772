"""The latency waterfall: one row per sentence on a shared time axis (QPainter), its axis pinned above the rows.

The axis and the rows are two widgets sharing one ``Geometry``, so rows scroll while the axis stays in sight; layout is
worked out by pure functions (``geometry``, ``axis_ticks``, ``legend_layout``), apart from the painting."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPainterPath, QPen, QPolygonF
from PySide6.QtWidgets import QSizePolicy, QWidget

from voicedesk.app.ui.theme import PALETTE
from voicedesk.engine.measure.timeline import SentenceTimeline, SpeechMarks, UtteranceTimeline

SEGMENTS = (  # (from stage, to stage, colour, legend)
    ("fragment_in", "chunk_released", PALETTE.stage_text, "Text arriving"),
    ("chunk_released", "sent", PALETTE.stage_dispatch, "Queued → sent"),
    ("sent", "first_byte", PALETTE.stage_synthesis, "Engine, to first byte"),
    ("first_byte", "first_audible", PALETTE.stage_onset, "Leading silence"),
)
DAC_LEGEND = "First sample at the sound card"
LEGEND_MEANINGS = (
    "the sentence's text arriving",
    "queued, then sent to the engine",
    "the engine, until its first audio byte",
    "leading silence, until the first audible sample",
    "the diamond: the first sample at the sound card",
)
ROW_HEIGHT = 22
LEGEND_LINE = 18
AXIS_HEIGHT = 20
LABEL_WIDTH = 200
STATS_COLUMNS = ((0, "audio"), (62, "RTF"), (120, "stalls"))
STATS_WIDTH = 190
NARROW_STATS_WIDTH = 130
GAP = 16
"""Space between the plot and the numbers at the right: no axis label may reach into it."""
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


# ---- geometry (pure) ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Geometry:
    width: float
    plot_left: float
    plot_right: float
    stats_left: float
    span_s: float

    def x_of(self, t: float) -> float:
        return self.plot_left + max(t, 0.0) / self.span_s * (self.plot_right - self.plot_left)

    def stats_x(self, offset: float) -> float:
        """Where a number column starts (the columns close up in a narrow panel)."""
        return self.stats_left + offset * (self.width - self.stats_left) / STATS_WIDTH

    def stats_header(self, offset: float, text_width: float) -> QRectF:
        return QRectF(self.stats_x(offset), 0, text_width, AXIS_HEIGHT)


def span_of(sentences: Sequence[SentenceTimeline], speech: SpeechMarks | None = None) -> float:
    ends = [] if speech is None else [speech.final_transcript_at_s]
    ends += [
        t
        for s in sentences
        for t in (s.dac_at_s, s.first_audible_at_s, s.first_byte_at_s, s.sent_at_s, s.chunk_released_at_s)
        if t is not None
    ]
    return max(max(ends, default=0.0) * 1.08, 0.1)


def geometry(width: float, sentences: Sequence[SentenceTimeline], speech: SpeechMarks | None = None) -> Geometry:
    label = min(LABEL_WIDTH, max(width * 0.22, 90.0))  # narrow windows give the plot a fair share
    stats_left = width - min(STATS_WIDTH, max(NARROW_STATS_WIDTH, width * 0.3))  # narrow: the columns close up
    plot_right = max(stats_left - GAP, label + 60)
    return Geometry(width, label, plot_right, stats_left, span_of(sentences, speech))


@dataclass(frozen=True, slots=True)
class Tick:
    x: float
    text: str
    left: float
    right: float
    """Where its label is drawn: never right of the plot (the column headers start after the gap)."""


def axis_ticks(g: Geometry, text_width: Callable[[str], float]) -> list[Tick]:
    plot_width = g.plot_right - g.plot_left
    step = nice_step(g.span_s, max_ticks=max(2, int(plot_width // 70)))
    ticks: list[Tick] = []
    k = 0
    while (t := k * step) <= g.span_s + 1e-9:
        text = format_tick(round(t, 6))
        x = g.x_of(t)
        half = text_width(text) / 2 + 2
        left = min(max(x - half, 0.0), g.plot_right - 2 * half)
        if not ticks or left >= ticks[-1].right + 4:  # a label that would touch the previous one is left out
            ticks.append(Tick(x, text, left, left + 2 * half))
        k += 1
    return ticks


SHORT_LEGEND = ("Text", "Queued", "Engine", "Silence", "Sound card")
"""The legend in a narrower panel, where the full one would take a second line from the rows it explains (the
axis's tooltip keeps the full wording)."""


def legend_layout(width: float, text_width: Callable[[str], float]) -> list[tuple[float, int, str]]:
    """(x, line, text) of each legend entry (the four segments, then the DAC mark) on one line of ``width``: the
    full wording when it fits, else the short one, else none."""
    for entries in ([text for *_, text in SEGMENTS] + [DAC_LEGEND], list(SHORT_LEGEND)):
        placed = _legend_lines(entries, width, text_width)
        if all(line == 0 for _, line, _ in placed):
            return placed
    return []  # too narrow even for the short one: the rows keep the room, the axis's tooltip explains


def _legend_lines(entries: list[str], width: float, text_width: Callable[[str], float]) -> list[tuple[float, int, str]]:
    placed = []
    x, line = 8.0, 0
    for text in entries:
        needed = 17 + text_width(text)
        if x > 8.0 and x + needed > width - 8:
            x, line = 8.0, line + 1
        placed.append((x, line, text))
        x += needed + 17
    return placed


def _small_font(widget: QWidget) -> QFont:
    small = QFont(widget.font())
    small.setPointSizeF(max(widget.font().pointSizeF() - 1.5, 7.5))
    return small


def _diamond(painter: QPainter, at: QPointF, color: QColor) -> None:
    painter.setPen(QPen(QColor("white"), 1.2))
    painter.setBrush(color)
    x, y = at.x(), at.y()
    painter.drawPolygon(QPolygonF([QPointF(x, y - 6), QPointF(x + 6, y), QPointF(x, y + 6), QPointF(x - 6, y)]))
    painter.setBrush(Qt.BrushStyle.NoBrush)


# ---- widgets ---------------------------------------------------------------------------------------


class WaterfallAxis(QWidget):
    """The legend, the time axis and the column headers, above the rows."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.sentences: tuple[SentenceTimeline, ...] = ()
        self.speech: SpeechMarks | None = None
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setToolTip(
            "<br>".join(f"<b>{short}</b>: {full}" for short, full in zip(SHORT_LEGEND, LEGEND_MEANINGS, strict=True))
        )
        self._relayout()

    def set_sentences(self, sentences: tuple[SentenceTimeline, ...], speech: SpeechMarks | None = None) -> None:
        self.sentences, self.speech = sentences, speech
        self.update()

    def metrics(self) -> QFontMetrics:
        return QFontMetrics(_small_font(self))

    def legend(self) -> list[tuple[float, int, str]]:
        return legend_layout(self.width(), self.metrics().horizontalAdvance)

    def ticks(self) -> list[Tick]:
        return axis_ticks(geometry(self.width(), self.sentences, self.speech), self.metrics().horizontalAdvance)

    def header_rects(self) -> list[QRectF]:
        g = geometry(self.width(), self.sentences, self.speech)
        top = self._axis_top()
        return [
            g.stats_header(offset, self.metrics().horizontalAdvance(text)).translated(0, top)
            for offset, text in STATS_COLUMNS
        ]

    def _axis_top(self, width: float | None = None) -> float:
        legend = legend_layout(self.width() if width is None else width, self.metrics().horizontalAdvance)
        return (max(line for _, line, _ in legend) + 1) * LEGEND_LINE + 4 if legend else 4

    def height_for(self, width: float) -> int:
        """Its height at ``width`` (the legend wraps)."""
        return int(self._axis_top(width) + AXIS_HEIGHT)

    def _relayout(self) -> None:
        self.setFixedHeight(int(self._axis_top() + AXIS_HEIGHT))

    def resizeEvent(self, event) -> None:
        self._relayout()
        super().resizeEvent(event)

    def paintEvent(self, _event) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setFont(_small_font(self))
        colors = [color for _, _, color, _ in SEGMENTS]
        for k, (x, line, text) in enumerate(self.legend()):
            y = line * LEGEND_LINE + 13
            if k < len(colors):
                painter.fillRect(QRectF(x, y - 8, 12, 8), QColor(colors[k]))
            else:
                _diamond(painter, QPointF(x + 6, y - 4), QColor(PALETTE.stage_output))
            painter.setPen(QColor(PALETTE.text_secondary))
            painter.drawText(QPointF(x + 17, y), text)
        if not self.sentences:
            return
        top = self._axis_top()
        painter.setPen(QColor(PALETTE.text_muted))
        for tick in self.ticks():
            painter.drawText(
                QRectF(tick.left, top, tick.right - tick.left, 14), Qt.AlignmentFlag.AlignCenter, tick.text
            )
        for rect, (_, text) in zip(self.header_rects(), STATS_COLUMNS, strict=True):
            painter.drawText(rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop, text)


class WaterfallRows(QWidget):
    """The sentences, one row each, as tall as they need (the panel scrolls them)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.timeline: UtteranceTimeline | None = None
        self.setMouseTracking(True)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.MinimumExpanding)
        self.set_timeline(None)

    @property
    def sentences(self) -> tuple[SentenceTimeline, ...]:
        return self.timeline.sentences if self.timeline is not None else ()

    @property
    def speech(self) -> SpeechMarks | None:
        return self.timeline.speech if self.timeline is not None else None

    @property
    def first(self) -> int:
        """The first sentence's row (1 below the person's, in a spoken turn)."""
        return int(self.speech is not None)

    def set_timeline(self, timeline: UtteranceTimeline | None) -> None:
        self.timeline = timeline
        self.setMinimumHeight(max(len(self.sentences) + self.first, 2) * ROW_HEIGHT + 4)
        self.update()

    def row_rect(self, index: int) -> QRectF:
        return QRectF(0, index * ROW_HEIGHT, self.width(), ROW_HEIGHT)

    def paintEvent(self, _event) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        small = _small_font(self)
        painter.setFont(small)
        if not self.sentences:
            painter.setPen(QColor(PALETTE.text_muted))
            painter.drawText(
                self.rect(),
                Qt.AlignmentFlag.AlignCenter,
                "Speak something to see where the time goes:\n"
                "text → chunk → synthesis → first audible sample → the sound card.",
            )
            return
        g = geometry(self.width(), self.sentences, self.speech)
        metrics = QFontMetrics(small)
        for number in range(0, len(self.sentences) + self.first, 2):
            painter.fillRect(self.row_rect(number), QColor(PALETTE.surface_alt))
        bottom = (len(self.sentences) + self.first) * ROW_HEIGHT
        for tick in axis_ticks(g, metrics.horizontalAdvance):  # the axis's grid, continued through the rows
            style = Qt.PenStyle.DotLine if tick.x > g.plot_left else Qt.PenStyle.SolidLine
            painter.setPen(QPen(QColor(PALETTE.border), 1, style))
            painter.drawLine(QPointF(tick.x, 0), QPointF(tick.x, bottom))
        several = len({s.engine for s in self.sentences}) > 1  # after a failover: say which engine spoke each
        if self.speech is not None:
            self._speech_row(painter, metrics, g, self.speech)
        for number, sentence in enumerate(self.sentences, start=self.first):
            self._row(painter, metrics, g, number * ROW_HEIGHT, sentence, several)

    def _speech_row(self, painter: QPainter, metrics: QFontMetrics, g: Geometry, speech: SpeechMarks) -> None:
        painter.setPen(QColor(PALETTE.text_secondary))
        said = f"You   spoke {format_s(-speech.speech_start_at_s)}"
        painter.drawText(QRectF(8, 0, g.plot_left - 12, ROW_HEIGHT), Qt.AlignmentFlag.AlignVCenter, said)
        path = QPainterPath()
        right = g.x_of(speech.final_transcript_at_s)
        path.addRoundedRect(QRectF(g.plot_left, ROW_HEIGHT / 2 - 5, max(right - g.plot_left, 2.0), 10), 3, 3)
        painter.fillPath(path, QColor(PALETTE.stage_text))

    def _row(self, painter: QPainter, metrics: QFontMetrics, g: Geometry, y: float, s: SentenceTimeline, by: bool):
        mid = y + ROW_HEIGHT / 2
        painter.setPen(QColor(PALETTE.text_secondary))
        name = f"{s.seq + 1}   " + (f"{s.engine} · " if by and s.engine else "") + (s.text or "")
        label = metrics.elidedText(name, Qt.TextElideMode.ElideRight, int(g.plot_left) - 16)
        painter.drawText(QRectF(8, y, g.plot_left - 12, ROW_HEIGHT), Qt.AlignmentFlag.AlignVCenter, label)
        if s.first_byte_at_s is not None and s.dac_at_s is not None:
            painter.setPen(QPen(QColor(PALETTE.stage_output), 1.4, Qt.PenStyle.DashLine))
            painter.drawLine(QPointF(g.x_of(s.first_byte_at_s), mid), QPointF(g.x_of(s.dac_at_s), mid))
        for start, end, color, _text in SEGMENTS:
            a, b = s.at(start), s.at(end)
            if a is None or b is None:
                continue
            left, right = g.x_of(a), g.x_of(b)
            path = QPainterPath()
            path.addRoundedRect(QRectF(left, mid - 5, max(right - left, 2.0), 10), 3, 3)
            painter.fillPath(path, QColor(color))
        if s.first_audible_at_s is not None:
            painter.setPen(QPen(QColor(PALETTE.text), 1.6))
            x = g.x_of(s.first_audible_at_s)
            painter.drawLine(QPointF(x, mid - 7), QPointF(x, mid + 7))
        if s.dac_at_s is not None:
            _diamond(painter, QPointF(g.x_of(s.dac_at_s), mid), QColor(PALETTE.stage_output))
        rtf = s.rtf
        cells = (
            format_s(s.audio_s),
            "–" if rtf is None else f"{rtf:.1f}×",
            "–" if s.underruns is None else str(s.underruns),
        )
        for (offset, _), text in zip(STATS_COLUMNS, cells, strict=True):
            painter.setPen(QColor(PALETTE.error if offset == 120 and s.underruns else PALETTE.text_secondary))
            rect = QRectF(g.stats_x(offset), y, 66, ROW_HEIGHT)
            painter.drawText(rect, Qt.AlignmentFlag.AlignVCenter, text)

    def mouseMoveEvent(self, event) -> None:
        index = int(event.position().y() // ROW_HEIGHT) - self.first
        if index == -1 and self.speech is not None:
            speech = self.speech
            self.setToolTip(
                f"<b>You</b>: spoke for {format_s(-speech.speech_start_at_s)}; the clock starts where your speech "
                f"ended (VAD); the final transcript was ready {format_s(speech.final_transcript_at_s)} later"
            )
            return
        if not 0 <= index < len(self.sentences):
            self.setToolTip("")
            return
        s = self.sentences[index]
        spoken_by = f" (spoken by {s.engine})" if s.engine else ""
        self.setToolTip(
            f"<b>Sentence {s.seq + 1}</b>{spoken_by}: {s.text or ''}<br>"
            f"text in {format_s(s.fragment_in_at_s)} · released {format_s(s.chunk_released_at_s)} · "
            f"sent {format_s(s.sent_at_s)}<br>first byte {format_s(s.first_byte_at_s)} (TTFB {format_s(s.ttfb_s)}) · "
            f"first audible {format_s(s.first_audible_at_s)} · at the DAC {format_s(s.dac_at_s)}<br>"
            f"audio {format_s(s.audio_s)} in {format_s(s.synthesis_s)} of synthesis"
        )
