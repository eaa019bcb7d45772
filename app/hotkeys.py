"""Global shortcuts: stop speech and speak saved phrases from anywhere on the desktop.

Qt sees keys only while its window has the focus, so these come from ``pynput``'s ``GlobalHotKeys``. Wayland lets no
program watch another's keys; there, and wherever the grab fails, ``GlobalShortcuts.status`` says so. Callbacks arrive
on pynput's thread; ``dispatch`` hands them to the caller's loop."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from voicedesk.app.phrases import pynput_hotkey

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ShortcutStatus:
    active: bool
    text: str
    """One line for the window: which shortcuts work, or why none do."""


def unavailable_reason(environ: Mapping[str, str] | None = None, platform: str = sys.platform) -> str | None:
    """Why global shortcuts cannot work in this session, or None when they can be tried."""
    env = os.environ if environ is None else environ
    if env.get("VOICEDESK_NO_GLOBAL_SHORTCUTS"):
        return "Global shortcuts are off (VOICEDESK_NO_GLOBAL_SHORTCUTS is set)."
    if platform.startswith("linux"):
        if env.get("XDG_SESSION_TYPE", "").lower() == "wayland" or (
            env.get("WAYLAND_DISPLAY") and not env.get("DISPLAY")
        ):
            return (
                "Global shortcuts are off: under Wayland a program cannot watch keys pressed in other windows. "
                "The shortcuts work while this window has the focus; the tray icon's menu stops speech from anywhere."
            )
        if not env.get("DISPLAY"):
            return "Global shortcuts are off: there is no X display."
        if env.get("QT_QPA_PLATFORM", "").startswith("offscreen"):
            return "Global shortcuts are off: the window is drawn offscreen."
    return None


class GlobalShortcuts:
    """Grabs a set of shortcuts system-wide; ``update`` replaces them; ``stop`` lets go."""

    def __init__(self, dispatch: Callable[[Callable[[], None]], None]) -> None:
        self._dispatch = dispatch
        self._listener = None
        self.status = ShortcutStatus(False, "Global shortcuts are off.")

    def update(self, bindings: Mapping[str, Callable[[], None]], enabled: bool = True) -> ShortcutStatus:
        """``bindings``: Qt-style shortcut ("Ctrl+Alt+S") → action. Returns (and keeps) the new status."""
        self.stop()
        if not enabled:
            self.status = ShortcutStatus(False, "Global shortcuts are off (turned off in the settings).")
            return self.status
        reason = unavailable_reason()
        if reason is not None:
            self.status = ShortcutStatus(False, reason)
            return self.status
        keys: dict[str, Callable[[], None]] = {}
        skipped: list[str] = []
        for shortcut, action in bindings.items():
            hotkey = pynput_hotkey(shortcut)
            if hotkey is None or hotkey in keys:
                skipped.append(shortcut)
                continue
            keys[hotkey] = self._deliver(action)
        if not keys:
            self.status = ShortcutStatus(False, "No global shortcuts are set.")
            return self.status
        try:
            from pynput import keyboard

            listener = keyboard.GlobalHotKeys(keys)
            listener.start()
            listener.wait()  # raises here, not later on its thread, when the grab is refused
            if not listener.is_alive():
                raise RuntimeError("the keyboard listener stopped at once")
        except Exception as exc:  # no XRecord, no permission, no backend: say so, keep the window working
            log.info("global shortcuts unavailable: %r", exc)
            self.status = ShortcutStatus(
                False, f"Global shortcuts are off: the desktop refused them ({exc}). They work inside this window."
            )
            return self.status
        self._listener = listener
        names = ", ".join(s for s in bindings if s not in skipped)
        note = f" (not usable: {', '.join(skipped)})" if skipped else ""
        self.status = ShortcutStatus(True, f"Global shortcuts on: {names}{note}.")
        return self.status

    def _deliver(self, action: Callable[[], None]) -> Callable[[], None]:
        def on_press() -> None:  # pynput's thread
            self._dispatch(action)

        return on_press

    def stop(self) -> None:
        listener, self._listener = self._listener, None
        if listener is None:
            return
        listener.stop()
        # pynput's X11 listener sends its "disable" on the connection its own thread is blocked reading, so on a
        # quiet X server it only stops at the next key press (its thread, and its two X connections, live on).
        # Sending the same request on its second connection, as its own thread does on the way out, ends it now.
        stopper = getattr(listener, "_display_stop", None)
        context = getattr(listener, "_context", None)
        if stopper is not None and context is not None:
            try:
                stopper.record_disable_context(context)
                stopper.flush()
            except Exception:  # already closed: the thread is ending anyway
                log.debug("disabling the X record context failed", exc_info=True)
        listener.join(2)
        if listener.is_alive():
            log.warning("the global shortcut listener did not stop")
