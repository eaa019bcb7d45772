"""What the window's helpers (``announce_actions``, ``engine_actions``, ``desktop``) may use of the window.

They are given the window as this protocol, not as ``MainWindow``: the window module imports them, so their naming
it back made the one import circle left in the app (issue 19). The protocol lists the parts they work with and
the few things the window does for them; what one helper needs of another goes through the window by name
(``consent``, ``announcer``, ``speak_phrase``, ``refresh_desktop``, ``suspend_shortcuts``), so no helper imports
another either.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Protocol

from voicedesk.app.notices import Topic

if TYPE_CHECKING:
    from voicedesk.app.announcer import Announcer
    from voicedesk.app.controller import SpeechController
    from voicedesk.app.engines import EngineHub
    from voicedesk.app.settings import AppSettings
    from voicedesk.app.ui.composer import Composer
    from voicedesk.app.ui.console_panel import ConsolePanel
    from voicedesk.app.ui.output_actions import OutputActions
    from voicedesk.app.ui.sidebar import Sidebar
    from voicedesk.app.ui.status_line import StatusLine
    from voicedesk.app.urls import SecretConsent


class ConsoleWindow(Protocol):
    settings: AppSettings
    hub: EngineHub
    controller: SpeechController
    sidebar: Sidebar
    composer: Composer
    console: ConsolePanel
    status: StatusLine
    outputs: OutputActions
    connect_clicked: bool
    """The last engine selection came from a Connect click (ask again for a refused consent)."""

    @property
    def consent(self) -> SecretConsent: ...
    @property
    def announcer(self) -> Announcer: ...

    def notice(self, text: str, level: str = "info", topic: Topic = Topic.GENERAL) -> None: ...
    def spawn(self, coro: Awaitable[object], topic: Topic = Topic.GENERAL) -> asyncio.Future[object]: ...
    def settings_changed(self) -> None: ...
    def phrases_changed(self) -> None: ...
    def voice_changed(self) -> None: ...
    def selected_label(self) -> str: ...
    def voice_names(self) -> list[str]: ...
    async def use_output(self, device: str) -> None: ...
    def request_stop(self) -> None: ...
    def speak_phrase(self, number: int) -> object: ...
    def refresh_desktop(self) -> None: ...
    def suspend_shortcuts(self, suspended: bool) -> None: ...
    # The QWidget it is (dialogs and the tray icon are its children; the tray shows and closes it).
    def close(self) -> bool: ...
    def showNormal(self) -> None: ...
    def raise_(self) -> None: ...
    def activateWindow(self) -> None: ...
