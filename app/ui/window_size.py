"""How big the window opens and how its centre column is shared (pure, on Qt's value types).

The window opens at its preferred 1280×800, or as large as the screen's available area when that is smaller
(never with parts off-screen); a saved geometry is restored only when it fits the screen it is on now. The latency
panel gets the height to show its header and a few whole rows, never cutting a row in half, while the conversation
keeps at least ``CONVERSATION_ROOM``.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize

PREFERRED = QSize(1280, 800)
CONVERSATION_ROOM = 180
LATENCY_ROWS = 4
"""Rows the latency panel shows when there is room (one at the least)."""


def fitted_geometry(saved: QRect | None, available: QRect, minimum: QSize) -> QRect:
    """Where the window goes: ``saved`` when it lies within ``available``, else the preferred size (shrunk to
    ``available``, not below ``minimum``) centred in it."""
    if saved is not None and saved.isValid() and available.contains(saved):
        return QRect(saved)
    size = PREFERRED.boundedTo(available.size()).expandedTo(minimum)
    placed = QRect(0, 0, size.width(), size.height())
    placed.moveCenter(available.center())
    placed.moveTop(max(placed.top(), available.top()))
    placed.moveLeft(max(placed.left(), available.left()))
    return placed


def latency_height(total: int, one_row: int, wanted: int) -> int:
    """The latency pane's share of ``total``: ``wanted`` (several rows) when the conversation keeps its room,
    else what is left for it, but never less than ``one_row`` (its header and one whole row)."""
    return max(min(wanted, total - CONVERSATION_ROOM), min(one_row, total))
