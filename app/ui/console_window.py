"""What ``announce_actions`` may use of the window, the one helper still given the window (the engine actions and
the desktop integration get the few objects they use).

It is given the window as this protocol, not as ``MainWindow``: the window module imports it, so its naming it
back would make an import circle. What it needs of another helper goes through the window by name
(``refresh_desktop``, ``suspend_shortcuts``), so no helper imports another either.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Protocol

from voicedesk.app.notices import Topic

if TYPE_CHECKING:
    from voicedesk.app.controller import SpeechController
    from voicedesk.app.engines import EngineHub
    from voicedesk.app.settings import AppSettings
    from voicedesk.app.ui.composer import Composer
    from voicedesk.app.ui.console_panel import ConsolePanel
    from voicedesk.app.ui.output_actions import OutputActions
    from voicedesk.app.ui.sidebar import Sidebar
    from voicedesk.app.ui.status_line import StatusLine


class ConsoleWindow(Protocol):
    settings: AppSettings
    hub: EngineHub
    controller: SpeechController
    sidebar: Sidebar
    composer: Composer
    console: ConsolePanel
    status: StatusLine
    outputs: OutputActions

    def notice(self, text: str, level: str = "info", topic: Topic = Topic.GENERAL) -> None: ...
    def spawn(self, coro: Awaitable[object], topic: Topic = Topic.GENERAL) -> asyncio.Future[object]: ...
    def phrases_changed(self) -> None: ...
    def selected_label(self) -> str: ...
    def voice_names(self) -> list[str]: ...
    async def use_output(self, device: str) -> None: ...
    def refresh_desktop(self) -> None: ...
    def suspend_shortcuts(self, suspended: bool) -> None: ...
