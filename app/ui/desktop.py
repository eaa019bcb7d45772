"""The console away from its window: the tray icon and the global shortcuts (stop, saved phrases).

Both say plainly when the desktop does not allow them (no tray, Wayland, a refused grab); the Desktop card
shows it. Shortcut presses arrive on another thread and are handed to Qt's loop.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from PySide6.QtGui import QKeySequence, QShortcut

from voicedesk.app.hotkeys import GlobalShortcuts
from voicedesk.app.tray import tray_look
from voicedesk.app.ui.tray_icon import TrayIcon

if TYPE_CHECKING:
    from voicedesk.app.ui.console_window import ConsoleWindow


class DesktopIntegration:
    def __init__(self, window: ConsoleWindow) -> None:
        self.window = window
        self.tray = TrayIcon(window)
        self.tray.show_requested.connect(self._show_window)
        self.tray.stop_requested.connect(window.request_stop)
        self.tray.quit_requested.connect(window.close)
        self.tray.phrase_requested.connect(lambda n: window.speak_phrase(n))
        self.shortcuts = GlobalShortcuts(self._dispatch)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._window_shortcuts: list[QShortcut] = []
        self.presses = 0
        self.suspended = False
        """A shortcut is being recorded: none fires."""
        """Global shortcut presses handled (for the Desktop card and tests)."""

    def apply(self) -> None:
        """(Re)grabs the shortcuts and shows or hides the tray icon, as the settings say."""
        window = self.window
        if self.suspended:
            return  # grabbed again when the recording ends
        settings = window.settings
        self._loop = asyncio.get_event_loop()
        bindings = {}
        if settings.desktop.stop_shortcut:
            bindings[settings.desktop.stop_shortcut] = window.request_stop
        for number, phrase in enumerate(settings.phrases):
            if phrase.shortcut:
                bindings.setdefault(phrase.shortcut, lambda n=number: window.speak_phrase(n))
        status = self.shortcuts.update(bindings, settings.desktop.global_shortcuts)
        card = window.sidebar.desktop
        card.shortcut_status.setText(status.text)
        card.shortcut_status.setObjectName(
            "Hint" if status.active or not settings.desktop.global_shortcuts else "Message"
        )
        self.tray.set_enabled(settings.desktop.tray_icon)
        self.tray.set_phrases([p.title for p in settings.phrases])
        card.tray_status.setText(self.tray.status if settings.desktop.tray_icon else "Tray icon off.")
        self.bind_window_shortcuts()
        self.refresh()

    def suspend(self, suspended: bool) -> None:
        """Holds every shortcut (global and in the window) while one is being recorded, so pressing the
        combination to record it does not also say a phrase; then grabs them again."""
        if suspended == self.suspended:
            return
        self.suspended = suspended
        if suspended:
            self.shortcuts.stop()
            for shortcut in self._window_shortcuts:
                shortcut.setEnabled(False)
        else:
            self.apply()

    def bind_window_shortcuts(self) -> None:
        """The stop and phrase shortcuts inside the window, where the global ones are off (a global shortcut
        also sees keys pressed in this window: binding both would say a phrase twice)."""
        window = self.window
        for shortcut in self._window_shortcuts:
            shortcut.setEnabled(False)
            shortcut.deleteLater()
        self._window_shortcuts = []
        if self.shortcuts.status.active:
            return
        bindings = [(window.settings.desktop.stop_shortcut, window.request_stop)]
        bindings += [(p.shortcut, lambda n=n: window.speak_phrase(n)) for n, p in enumerate(window.settings.phrases)]
        for keys, action in bindings:
            if keys:
                self._window_shortcuts.append(QShortcut(QKeySequence(keys), window, activated=action))

    def refresh(self) -> None:
        window = self.window
        announcer = window.announcer
        status = window.hub.status
        look = tray_look(
            speaking=announcer.busy,
            queued=len(announcer.queue),
            paused=announcer.queue.paused,
            engine=window.selected_label(),
            state=status.state,
            title=status.title,
        )
        self.tray.show_look(look)

    def _dispatch(self, action) -> None:
        """Called on the shortcut library's thread."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return

        def run() -> None:
            self.presses += 1
            action()

        loop.call_soon_threadsafe(run)

    def _show_window(self) -> None:
        window = self.window
        window.showNormal()
        window.raise_()
        window.activateWindow()

    def close(self) -> None:
        self.shortcuts.stop()
        self.tray.set_enabled(False)
