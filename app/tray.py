"""The tray icon's look, from the console's state (pure): speaking / idle, the queue, the engine's health.

``tray_look`` decides; ``app.ui.tray_icon`` draws it and builds the menu. Where the desktop has no tray
(many Wayland shells, a bare X server), the window says so instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from voicedesk.app.engines import EngineState


@dataclass(frozen=True, slots=True)
class TrayLook:
    activity: str
    """'speaking' or 'idle': the icon's shape."""
    health: str
    """'ok', 'busy' or 'down': the icon's badge colour."""
    tooltip: str


def tray_look(speaking: bool, queued: int, paused: bool, engine: str, state: EngineState, title: str) -> TrayLook:
    if state is EngineState.READY:
        health = "ok"
    elif state in (EngineState.LOADING, EngineState.DOWNLOADING, EngineState.IDLE):
        health = "busy"
    else:
        health = "down"
    lines = [f"voicedesk — {'speaking' if speaking else 'idle'}"]
    if queued:
        lines.append(f"{queued} waiting" + (" (paused)" if paused else ""))
    lines.append(f"{engine}: {title}")
    return TrayLook("speaking" if speaking else "idle", health, "\n".join(lines))
