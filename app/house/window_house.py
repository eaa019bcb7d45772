"""The house's inputs and outputs on the desktop window, under the same rules as ``voicedesk announcer``: MQTT and
HTTP announcements go through one ``HouseQueue`` (TTL, merging of duplicates, quiet hours, volume per priority)
and are said in the window's own queue (shown there, and in the history, as "MQTT · urgent", "HTTP · normal"),
after their chime, at their voice's loudness and their priority's volume; outcomes and state go back on MQTT.
The same adapters as the announcer (``app.house.mqtt``, ``app.house.http``), fed through this class instead of
``HouseRunner``.

As in the announcer, an urgent announcement cuts in on what is playing (unless that is urgent too: then it waits
behind it and the other urgent ones), and the cut one goes back into the window's queue right behind it, from its
next sentence, without its chime again; it still expires if its TTL passes meanwhile, and ends ``spoken`` (or
``interrupted`` when it was cut in its last sentence). The person's own plain-text announcements (typed, phrases,
replays) resume the same way; an agent's reply does not (its stream was cut: what the agent would have said next
is not known; "Ask again" is in the history) nor a voice preview. What stays the person's: their Stop ends what
plays ``interrupted``, never resumed, and pauses the window's queue; "Speak now" and their own interruptions cut
without resuming. An announcement held back by quiet hours waits here, not in the window's list, until the quiet
hours end or its TTL passes.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from voicedesk.app.announcements import Announcement
from voicedesk.app.announcements import QueueFull as WindowQueueFull
from voicedesk.app.conversation import Turn, TurnKind, TurnState
from voicedesk.app.house.chimes import Chimes
from voicedesk.app.house.loudness import LoudnessCache
from voicedesk.app.house.mqtt import MqttBridge, MqttSettings
from voicedesk.app.house.queue import HouseQueue, Item, Offered, Policy, Priority, QueueFull, Report, Request
from voicedesk.app.house.runner import State, remaining_text
from voicedesk.app.house.shaped_player import ShapedPlayer
from voicedesk.engine.errors import VoicedeskError


class HouseWindow(Protocol):
    """What this needs of ``app.ui.window.MainWindow`` (named by shape: the window imports this module)."""

    announce: Any  # app.ui.announce_actions.AnnounceActions
    hub: Any  # app.engines.EngineHub
    controller: Any  # app.controller.SpeechController


@dataclass(frozen=True, slots=True)
class HouseInputs:
    mqtt: MqttSettings | None = None
    http_host: str = "127.0.0.1"
    http_port: int | None = None
    http_token: str | None = None
    policy: Policy = field(default_factory=Policy)
    chimes: Chimes = field(default_factory=Chimes)
    loudness: bool = True
    """Each voice at one loudness (``app.house.loudness``, measured once per voice and cached)."""


class WindowHouse:
    def __init__(
        self,
        window: HouseWindow,
        inputs: HouseInputs,
        clock: Callable[[], float] = time.time,
        loudness: LoudnessCache | None = None,
    ) -> None:
        self.window = window
        self.inputs = inputs
        self.clock = clock
        self.rules = HouseQueue(inputs.policy)
        """The announcer's queue and rules; the window's own queue says what this one lets through."""
        self.chimes = inputs.chimes
        if loudness is None and inputs.loudness:
            from platformdirs import user_cache_dir

            loudness = LoudnessCache(Path(user_cache_dir("voicedesk")) / "loudness.json")  # the announcer's too
        self.loudness = loudness
        self.reports: list[Callable[[Report], None]] = []
        self.states: list[Callable[[State], None]] = []
        self._items: dict[int, Item] = {}
        """Window announcement id → the house item it says (only what is in the window's list or playing)."""
        self._cut_for_urgent: int | None = None
        """The window announcement an urgent house one is cutting: it resumes behind it when its turn ends cut."""
        self._shaped: ShapedPlayer | None = None
        self._wake = asyncio.Event()
        self._keeper: asyncio.Task[None] | None = None
        self.mqtt: MqttBridge | None = None
        self.http = None
        window.announce.ended.append(self._ended)
        window.announce.starting = self._starting

    async def start(self) -> None:
        self._keeper = asyncio.ensure_future(self._keep())
        if self.inputs.mqtt is not None:
            self.mqtt = MqttBridge(self, self.inputs.mqtt)  # type: ignore[arg-type]
            self.mqtt.start()
        if self.inputs.http_port is not None:
            from voicedesk.app.house.http import serve_announce

            self.http = await serve_announce(self, self.inputs.http_host, self.inputs.http_port, self.inputs.http_token)  # type: ignore[arg-type]

    async def aclose(self) -> None:
        if self._keeper is not None:
            self._keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keeper
        if self.http is not None:
            self.http.should_exit = True
            await self.http.task
        if self.mqtt is not None:
            await self.mqtt.aclose()

    # ---- what the adapters call -------------------------------------------------------------------

    def submit(self, request: Request) -> Offered:
        """Merged, held back (quiet hours) or put in the window's queue; raises ``QueueFull``."""
        now = self.clock()
        offered = self.rules.offer(request, now)
        if offered.report is not None:
            self._report(offered.report)
        elif offered.item is not None and self._may_start(offered.item, now):
            try:
                self._to_window(offered.item)
            except QueueFull:
                self.rules.waiting.remove(offered.item)
                raise
        self._wake.set()
        self.publish_state()
        return offered

    @property
    def queue(self) -> HouseQueue:
        return self.rules

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
            len(announcer.queue) + len(self._held()),
            None if current is None else current.describe(),
        )

    def publish_state(self) -> None:
        state = self.state()
        for callback in self.states:
            callback(state)

    # ---- the rules between the house and the window's queue ----------------------------------------

    def _may_start(self, item: Item, now: float) -> bool:
        return item.priority is Priority.URGENT or not self.rules.quiet(now)

    def _held(self) -> list[Item]:
        shown = {id(item) for item in self._items.values()}
        return [item for item in self.rules.waiting if id(item) not in shown]

    def _to_window(self, item: Item) -> None:
        """Into the window's queue: an urgent one behind the urgent ones first in line, cutting in on what plays
        unless that is urgent too; a resumed one behind them (the one that cut it is first, or playing); the rest
        last."""
        request = item.request
        origin = f"{request.source.value.upper()} · {item.priority.label}" + (" · resumed" if item.resumed else "")
        announcement = Announcement(TurnKind.SPEAK, item.text, voice=request.voice, origin=origin)
        announcer = self.window.announce.announcer
        urgent = item.priority is Priority.URGENT
        at = self._behind_urgent() if urgent or item.resumed else None
        current = announcer.current
        cut = urgent and not item.resumed and current is not None and not self._is_urgent(current)
        try:
            announcer.submit(announcement, interrupt=cut, at=at)
        except WindowQueueFull as exc:
            raise QueueFull(str(exc)) from None
        self._items[announcement.id] = item
        if cut:
            self._cut_for_urgent = current.id

    def _is_urgent(self, announcement: Announcement) -> bool:
        item = self._items.get(announcement.id)
        return item is not None and item.priority is Priority.URGENT

    def _behind_urgent(self) -> int:
        """The place behind the urgent house announcements first in the window's queue."""
        place = 0
        for waiting in self.window.announce.announcer.queue.items:
            if not self._is_urgent(waiting):
                break
            place += 1
        return place

    async def _keep(self) -> None:
        """Expires what waited past its TTL (taking it out of the window's list) and lets held announcements into
        the window's queue once the quiet hours end."""
        while True:
            now = self.clock()
            for report in self.rules.expire(now):
                self._forget_window_item(report.id)
                self._report(report)
            if not self.rules.quiet(now):
                for item in self._held():
                    with contextlib.suppress(QueueFull):  # it waits here for room, and may expire
                        self._to_window(item)
            self.publish_state()
            deadline = self.rules.next_deadline(now)
            self._wake.clear()
            timeout = None if deadline is None else max(deadline - now, 0.05)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    def _forget_window_item(self, item_id: str) -> None:
        for number, item in list(self._items.items()):
            if item.id == item_id:
                del self._items[number]
                self.window.announce.announcer.remove(number)

    async def _starting(self, announcement: Announcement) -> bool:
        """Called by the window as each announcement starts, its output chosen: a house one that expired is not
        said; one that may be said gets its chime, loudness gain and volume on the window's player."""
        self._unshape()
        item = self._items.get(announcement.id)
        if item is None:
            return True  # the person's own
        now = self.clock()
        if item.expires <= now or item not in self.rules.waiting:
            self._items.pop(announcement.id, None)
            if item in self.rules.waiting:
                self._report(self.rules.expire_item(item, now))
            return False
        self.rules.begin(item)
        controller = self.window.controller
        if controller.player is not None:
            gain = 1.0
            if self.loudness is not None:
                voice = item.request.voice or controller.voice.voice
                with contextlib.suppress(VoicedeskError):
                    gain = await self.loudness.gain(await self.window.hub.engine(), voice)
            self._shaped = ShapedPlayer(controller.player)
            chime = None if item.resumed else self.chimes.for_announcement(item.request.chime, item.priority)
            self._shaped.prepare(gain, self.rules.volume(item.priority, now), chime)
            controller.player = self._shaped
        self.publish_state()
        return True

    def _unshape(self) -> None:
        shaped, self._shaped = self._shaped, None
        controller = self.window.controller
        if shaped is not None and controller.player is shaped:
            controller.player = shaped.player

    # ---- what the window tells --------------------------------------------------------------------

    def _ended(self, announcement: Announcement | None, turn: Turn) -> None:
        item = self._items.pop(announcement.id, None) if announcement is not None else None
        cut_for_urgent = announcement is not None and announcement.id == self._cut_for_urgent
        if cut_for_urgent:
            self._cut_for_urgent = None
        resume = cut_for_urgent and turn.state is TurnState.CUT
        if item is not None:
            self._unshape()
            now = self.clock()
            if turn.state is TurnState.DONE:
                report = self.rules.spoken(item, now, note=" ".join(turn.notes))
            elif turn.state is TurnState.CUT:  # by an urgent one: resumed; by the person: not
                report = self.rules.interrupted(item, remaining_text(turn) if resume else "", now, resume=resume)
                if report is None:
                    self._resume(item)
            else:
                report = self.rules.failed(item, turn.error or "the engine failed", now)
            if report is not None:
                self._report(report)
        elif resume and announcement is not None:
            self._resume_own(announcement, turn)
        self._wake.set()
        self.publish_state()

    def _resume(self, item: Item) -> None:
        """The house announcement an urgent one cut goes back behind it (held here instead in quiet hours, or
        while the window's queue is full: the keeper lets it in later)."""
        resumed = next(waiting for waiting in self.rules.waiting if waiting.id == item.id and waiting.resumed)
        if self._may_start(resumed, self.clock()):
            with contextlib.suppress(QueueFull):
                self._to_window(resumed)

    def _resume_own(self, announcement: Announcement, turn: Turn) -> None:
        """The person's own plain text an urgent one cut goes back behind it, from its next sentence."""
        if announcement.kind is not TurnKind.SPEAK or announcement.fragments is not None:
            return  # an agent's reply or a voice preview: not known past the cut, or not worth repeating
        rest = remaining_text(turn)
        if not rest:
            return  # cut in its last sentence
        origin = f"{announcement.origin} · resumed" if announcement.origin else "Resumed"
        again = Announcement(TurnKind.SPEAK, rest, voice=announcement.voice, output=announcement.output, origin=origin)
        with contextlib.suppress(WindowQueueFull):  # a full queue: the rest is in the history to replay
            self.window.announce.announcer.submit(again, at=self._behind_urgent())

    def _report(self, report: Report) -> None:
        for callback in self.reports:
            callback(report)
