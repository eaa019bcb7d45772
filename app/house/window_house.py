"""The house's inputs and outputs on the desktop window: MQTT and HTTP announcements go into the window's own queue
(shown there, and in the history, as "MQTT · urgent", "HTTP · normal"), and the window's outcomes and state go back
on MQTT. The same adapters as ``voicedesk announcer`` (``app.house.mqtt``, ``app.house.http``), fed through this
class instead of ``HouseRunner``.

The window keeps its own queue's rules: an urgent announcement interrupts (the person's Stop pauses the queue), the
others queue in arrival order; an announcement cut by the window is reported ``interrupted`` and not resumed. TTL,
merging, quiet hours, chimes and loudness are the headless announcer's (docs/house.md).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Any, Protocol

from voicedesk.app.announcements import Announcement
from voicedesk.app.announcements import QueueFull as WindowQueueFull
from voicedesk.app.conversation import Turn, TurnKind, TurnState
from voicedesk.app.house.chimes import Chimes
from voicedesk.app.house.mqtt import MqttBridge, MqttSettings
from voicedesk.app.house.queue import Item, Offered, Outcome, Priority, QueueFull, Report, Request
from voicedesk.app.house.runner import State


class HouseWindow(Protocol):
    """What this needs of ``app.ui.window.MainWindow`` (named by shape: the window imports this module)."""

    announce: Any  # app.ui.announce_actions.AnnounceActions
    hub: Any  # app.engines.EngineHub


@dataclass(frozen=True, slots=True)
class HouseInputs:
    mqtt: MqttSettings | None = None
    http_host: str = "127.0.0.1"
    http_port: int | None = None
    http_token: str | None = None


class WindowHouse:
    def __init__(self, window: HouseWindow, inputs: HouseInputs) -> None:
        self.window = window
        self.inputs = inputs
        self.chimes = Chimes()  # names accepted in payloads (the window plays no chime)
        self.reports: list = []
        self.states: list = []
        self._items: dict[int, Item] = {}
        """Window announcement id → the house item it says."""
        self._ids = itertools.count(1)
        self.mqtt: MqttBridge | None = None
        self.http = None
        window.announce.ended.append(self._ended)

    @property
    def queue(self) -> list[Announcement]:
        return self.window.announce.announcer.queue.items

    async def start(self) -> None:
        if self.inputs.mqtt is not None:
            self.mqtt = MqttBridge(self, self.inputs.mqtt)  # type: ignore[arg-type]
            self.mqtt.start()
        if self.inputs.http_port is not None:
            from voicedesk.app.house.http import serve_announce

            self.http = await serve_announce(self, self.inputs.http_host, self.inputs.http_port, self.inputs.http_token)  # type: ignore[arg-type]

    async def aclose(self) -> None:
        if self.http is not None:
            self.http.should_exit = True
            await self.http.task
        if self.mqtt is not None:
            await self.mqtt.aclose()

    # ---- what the adapters call -------------------------------------------------------------------

    def submit(self, request: Request) -> Offered:
        now = time.time()
        origin = f"{request.source.value.upper()} · {request.priority.label}"
        announcement = Announcement(TurnKind.SPEAK, request.text, voice=request.voice, origin=origin)
        item = Item(request.id or f"w{next(self._ids)}", request, now, float("inf"), request.text, request.priority)
        try:
            self.window.announce.announcer.submit(announcement, interrupt=request.priority is Priority.URGENT)
        except WindowQueueFull as exc:
            raise QueueFull(str(exc)) from None
        self._items[announcement.id] = item
        self.publish_state()
        return Offered(item)

    async def stop(self) -> None:
        await self.window.announce.stop()

    def state(self) -> State:
        announcer = self.window.announce.announcer
        current = self._items.get(announcer.current.id) if announcer.current is not None else None
        status = self.window.hub.status
        return State(
            "speaking" if announcer.busy else "idle",
            status.kind,
            status.state.value,
            len(announcer.queue),
            None if current is None else current.describe(),
        )

    def publish_state(self) -> None:
        state = self.state()
        for callback in self.states:
            callback(state)

    # ---- what the window tells --------------------------------------------------------------------

    def _ended(self, announcement: Announcement | None, turn: Turn) -> None:
        item = self._items.pop(announcement.id, None) if announcement is not None else None
        if item is not None:
            outcome, reason = {
                TurnState.DONE: (Outcome.SPOKEN, ""),
                TurnState.CUT: (Outcome.INTERRUPTED, "stopped in the window"),
            }.get(turn.state, (Outcome.FAILED, turn.error or "the engine failed"))
            report = Report(item.id, outcome, item.source, item.request.text, item.priority, time.time(), reason)
            for callback in self.reports:
                callback(report)
        self.publish_state()
