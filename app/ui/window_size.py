"""How big the window opens (never with parts off-screen) and how its centre column is shared (pure)."""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize

PREFERRED = QSize(1280, 800)
CONVERSATION_ROOM = 180
LATENCY_ROWS = 4  # the latency panel shows these when there is room


def fitted_geometry(saved: QRect | None, available: QRect, minimum: QSize) -> QRect:
    """``saved`` when it fits ``available``, else the preferred size, shrunk to fit, centred."""
    if saved is not None and saved.isValid() and available.contains(saved):
        return QRect(saved)
    size = PREFERRED.boundedTo(available.size()).expandedTo(minimum)
    placed = QRect(0, 0, size.width(), size.height())
    placed.moveCenter(available.center())
    placed.moveTop(max(placed.top(), available.top()))
    placed.moveLeft(max(placed.left(), available.left()))
    return placed


def latency_height(total: int, one_row: int, wanted: int) -> int:
    """``wanted`` when the conversation keeps its room, else what is left, but never less than ``one_row``."""
    return max(min(wanted, total - CONVERSATION_ROOM), min(one_row, total))
