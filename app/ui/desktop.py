"""The console away from its window: the tray icon and the global shortcuts (stop, saved phrases).

Both say plainly when the desktop does not allow them (no tray, Wayland, a refused grab); the Desktop card shows it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QMainWindow

from voicedesk.app.hotkeys import GlobalShortcuts
from voicedesk.app.ui.tray_icon import TrayIcon, tray_look

if TYPE_CHECKING:
    from voicedesk.app.console.runner import ConsoleRunner
    from voicedesk.app.engines import EngineHub
    from voicedesk.app.settings import AppSettings
    from voicedesk.app.ui.sidebar import DesktopCard


class DesktopIntegration:
    def __init__(
        self,
        window: QMainWindow,
        settings: AppSettings,
        card: DesktopCard,
        hub: EngineHub,
        console: ConsoleRunner,
        stop: Callable[[], None],
        speak_phrase: Callable[[int], object],
        engine_label: Callable[[], str],
    ) -> None:
        """``window``: the tray shows and closes it and its shortcuts live in it; ``card``: the Desktop card."""
        self.window, self.settings, self.card, self.hub, self.console = window, settings, card, hub, console
        self.stop, self.speak_phrase, self.engine_label = stop, speak_phrase, engine_label
        self.tray = TrayIcon(window)
        self.tray.show_requested.connect(self._show_window)
        self.tray.stop_requested.connect(stop)
        self.tray.quit_requested.connect(window.close)
        self.tray.phrase_requested.connect(speak_phrase)
        self.shortcuts = GlobalShortcuts(self._dispatch)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._window_shortcuts: list[QShortcut] = []
        self.talk: Callable[[], None] | None = None
        """Push-to-talk's toggle (the window's voice input), once it exists."""
        self.presses = 0
        self.suspended = False
        """A shortcut is being recorded: none fires."""
        """Global shortcut presses handled (for the Desktop card and tests)."""

    def apply(self) -> None:
        """(Re)grabs the shortcuts and shows or hides the tray icon, as the settings say."""
        if self.suspended:
            return  # grabbed again when the recording ends
        settings = self.settings
        self._loop = asyncio.get_event_loop()
        bindings = {}
        if settings.desktop.stop_shortcut:
            bindings[settings.desktop.stop_shortcut] = self.stop
        if settings.desktop.talk_shortcut and self.talk is not None:
            bindings.setdefault(settings.desktop.talk_shortcut, self.talk)
        for number, phrase in enumerate(settings.phrases):
            if phrase.shortcut:
                bindings.setdefault(phrase.shortcut, lambda n=number: self.speak_phrase(n))
        status = self.shortcuts.update(bindings, settings.desktop.global_shortcuts)
        card = self.card
        card.shortcut_status.setText(status.text)
        card.shortcut_status.setObjectName(
            "Hint" if status.active or not settings.desktop.global_shortcuts else "Message"
        )
        self.tray.set_enabled(settings.desktop.tray_icon)
        self.tray.set_phrases([p.title for p in settings.phrases])
        card.tray_status.setText(self.tray.status if settings.desktop.tray_icon else "Tray icon off.")
        self.bind_window_shortcuts()
        self.refresh()

    def refuse_a_taken_stop_shortcut(self) -> str | None:
        """The Stop field put back when it names a phrase's shortcut (it took it silently); why, or None."""
        field, kept = self.card.stop_shortcut, self.settings.desktop.stop_shortcut
        keys = field.text().strip()
        taken = next((p for p in self.settings.phrases if keys and p.shortcut == keys and keys != kept), None)
        if taken is None:
            return None
        field.setText(kept)
        return f"{keys} is the shortcut of the phrase “{taken.title}”; Stop keeps {kept or 'none'}. Choose another."

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
        for shortcut in self._window_shortcuts:
            shortcut.setEnabled(False)
            shortcut.deleteLater()
        self._window_shortcuts = []
        if self.shortcuts.status.active:
            return
        bindings = [(self.settings.desktop.stop_shortcut, self.stop)]
        if self.talk is not None:
            bindings.append((self.settings.desktop.talk_shortcut, self.talk))
        bindings += [(p.shortcut, lambda n=n: self.speak_phrase(n)) for n, p in enumerate(self.settings.phrases)]
        for keys, action in bindings:
            if keys:
                self._window_shortcuts.append(QShortcut(QKeySequence(keys), self.window, activated=action))

    def refresh(self) -> None:
        core, status = self.console.core, self.hub.status
        look = tray_look(
            speaking=self.console.busy,
            queued=len(core),
            paused=core.paused,
            engine=self.engine_label(),
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
