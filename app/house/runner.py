"""Runs the house queue against the speech controller: one announcement at a time, an urgent one cutting in,
the cut one resumed from its next sentence; every outcome and state change reported (asyncio, no Qt).

Inputs (MQTT, HTTP, the window) call ``submit``; outputs (MQTT state and outcomes, the log) subscribe with
``on_report`` / ``on_state``. The engine and its failover are the controller's (``app.controller``): a remote
engine that fails mid-announcement continues on the local one. If the sound device stops taking audio, the
announcement fails with that reason and the player is opened again before the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from voicedesk.app.choices import whole
from voicedesk.app.controller import SpeechController
from voicedesk.app.conversation import Turn, TurnKind, TurnState
from voicedesk.app.engines import EngineState, EngineStatus
from voicedesk.app.house.chimes import Chimes
from voicedesk.app.house.loudness import LoudnessCache
from voicedesk.app.house.queue import HouseQueue, Item, Offered, Report, Request
from voicedesk.app.house.shaped_player import ShapedPlayer
from voicedesk.app.notices import Topic
from voicedesk.app.prepared_turn import TurnAhead
from voicedesk.engine.errors import VoicedeskError
from voicedesk.engine.events import SessionConfig

log = logging.getLogger(__name__)

STALL_S = 5.0
"""Playing, yet no sample taken by the device for this long: the sound device is gone."""


def remaining_text(turn: Turn) -> str:
    """What follows the sentence a cut turn was cut in: where a resumed announcement starts again."""
    cut = turn.cut
    if cut is None or not cut.heard_text.strip():
        return turn.text  # nothing was heard: all of it
    after = [] if cut.sentence is None else [s.text for s in turn.sentences[cut.sentence + 1 :]]
    return " ".join([*after, turn.pending.strip()]).strip()


@dataclass(frozen=True, slots=True)
class State:
    state: str
    """idle, speaking or error."""
    engine: str
    engine_state: str
    queued: int
    current: dict[str, object] | None
    error: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "state": self.state,
            "engine": self.engine,
            "engine_state": self.engine_state,
            "queued": self.queued,
            "current": self.current,
            "error": self.error,
        }


class HeadlessListener:
    """The controller's listener for a console without a window: notices go to the log and to the runner."""

    def __init__(self) -> None:
        self.runner: HouseRunner | None = None
        self.engine: EngineStatus | None = None

    def turn_changed(self, turn: Turn) -> None:
        pass

    def turn_ended(self, turn: Turn) -> None:
        pass

    def timeline_changed(self, turn: Turn, timeline: object) -> None:
        pass

    def engine_status(self, status: EngineStatus) -> None:
        self.engine = status
        log.info("engine %s: %s %s", status.kind, status.title, status.message)
        if self.runner is not None:
            self.runner.engine_changed(status)

    def notice(self, text: str, level: str, topic: Topic = Topic.GENERAL) -> None:
        getattr(log, "error" if level == "error" else "warning" if level == "warning" else "info")(text)
        if self.runner is not None and level == "error":
            self.runner.last_error = text


class HouseRunner:
    def __init__(
        self,
        controller: SpeechController,
        queue: HouseQueue,
        chimes: Chimes,
        player: ShapedPlayer | None,
        loudness: LoudnessCache | None = None,
        clock: Callable[[], float] = time.time,
        reopen_player: Callable[[], None] | None = None,
    ) -> None:
        self.controller = controller
        self.queue = queue
        self.chimes = chimes
        self.player = player
        self.loudness = loudness
        self.clock = clock
        self.reopen_player = reopen_player
        self.reports: list[Callable[[Report], None]] = []
        self.states: list[Callable[[State], None]] = []
        self.last_error = ""
        self.device_error = ""
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._cut_for_urgent = False
        self._background: set[asyncio.Future[object]] = set()
        self._last_state: State | None = None
        self._ahead = TurnAhead(controller)
        """The next announcement, synthesized while the current one plays (``SpeechController.prepare``)."""

    # ---- inputs -----------------------------------------------------------------------------------

    def submit(self, request: Request) -> Offered:
        """Queues ``request`` (raises ``QueueFull``); an urgent one cuts in on a less urgent one at once."""
        offered = self.queue.offer(request, self.clock())
        if offered.report is not None:
            self._report(offered.report)
        if offered.interrupt:
            self._cut_for_urgent = True
            self._spawn(self.controller.stop(quiet=True))
        self._wake.set()
        self.publish_state()
        return offered

    async def stop(self) -> None:
        """Stops what is being said (it ends as interrupted); the queue carries on."""
        self._cut_for_urgent = False
        await self.controller.stop(quiet=True)

    # ---- running ----------------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())
            self.publish_state()

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self._ahead.drop()
        await self.controller.aclose()

    async def _run(self) -> None:
        while True:
            now = self.clock()
            item, expired = self.queue.next(now)
            for report in expired:
                self._report(report)
            if self._ahead.key is not None and any(r.id == self._ahead.key[0] for r in expired):  # type: ignore[index]
                await self._ahead.drop()  # prepared ahead, expired before its turn: never played
            if item is None:
                self.publish_state()
                deadline = self.queue.next_deadline(now)
                self._wake.clear()
                timeout = None if deadline is None else max(deadline - now, 0.05)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout)
                continue
            try:
                report = await self._say(item)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # one announcement failing must not stop the announcer
                log.exception("announcement %s failed", item.id)
                report = self.queue.failed(item, f"internal error: {exc!r}", self.clock())
            if report is not None:
                self._report(report)

    async def _say(self, item: Item) -> Report | None:
        self._cut_for_urgent = False
        self.publish_state()
        if self.player is not None and self.device_error and self.reopen_player is not None:
            try:
                self.reopen_player()
                self.device_error = ""
                log.warning("the sound device is back")
            except VoicedeskError as exc:
                self.device_error = str(exc)
                return self.queue.failed(item, f"no sound device: {exc}", self.clock())
        voice = self._voice(item)
        if self.player is not None:
            gain = 1.0
            if self.loudness is not None:
                with contextlib.suppress(VoicedeskError):
                    gain = await self.loudness.gain(await self.controller.hub.engine(), voice.voice)
            chime = None if item.resumed else self.chimes.for_announcement(item.request.chime, item.priority)
            self.player.prepare(gain, self.queue.volume(item.priority, self.clock()), chime)
        self.last_error = ""
        prepared = await self._ahead.take((item.id, item.text))
        turn = await self.controller.speak(TurnKind.SPEAK, item.text, whole(item.text), voice, prepared)
        if turn is None:
            return self.queue.failed(item, self.last_error or "no engine could take it", self.clock())
        self._ahead.after(turn, self._upcoming)
        if self._cut_for_urgent:  # an urgent one arrived while this one was starting: it goes first
            await self.controller.stop(quiet=True)
        self.publish_state()
        stalled = await self._wait(turn)
        now = self.clock()
        if stalled:
            return self.queue.failed(item, self.device_error, now)
        match turn.state:
            case TurnState.DONE:
                return self.queue.spoken(item, now, note=" ".join(turn.notes))
            case TurnState.CUT:
                return self.queue.interrupted(item, remaining_text(turn), now, resume=self._cut_for_urgent)
            case _:
                return self.queue.failed(item, turn.error or self.last_error or "the engine failed", now)

    # ---- the next one, synthesized while this one plays ------------------------------------------------

    def _voice(self, item: Item) -> SessionConfig:
        speech = self.controller.voice
        return SessionConfig(item.request.voice or speech.voice, speech.speed, speech.max_buffer_delay_ms)

    def _upcoming(self) -> tuple[object, str, SessionConfig] | None:
        """The announcement due next (an urgent one still cuts in; one that expires or is overtaken meanwhile is
        discarded, never played)."""
        upcoming = self.queue.peek(self.clock())
        return None if upcoming is None else ((upcoming.id, upcoming.text), upcoming.text, self._voice(upcoming))

    async def _wait(self, turn: Turn) -> bool:
        """Waits for ``turn`` to end; True when the sound device stopped taking audio meanwhile (then it is cut)."""
        ended = asyncio.ensure_future(self.controller.wait_turn(turn))
        try:
            last, since = -1, self.clock()
            while not ended.done():
                await asyncio.wait([ended], timeout=0.5)
                if self.player is None or ended.done():
                    continue
                # Samples played or starved for: both mean the device's callback runs (a slow engine starves it,
                # which is not a lost device); neither moving while playing means the device stopped calling.
                buffer = self.player.buffer
                position = buffer.played_samples + buffer.underrun_frames
                if not buffer.playing or position != last:
                    last, since = position, self.clock()
                elif self.clock() - since > STALL_S:
                    self.device_error = f"the sound device stopped taking audio for {STALL_S:.0f} s"
                    log.error("%s; it is opened again before the next announcement", self.device_error)
                    await self.controller.stop(quiet=True)
                    self.publish_state()
                    return True
            return False
        finally:
            ended.cancel()

    # ---- outputs ----------------------------------------------------------------------------------

    def engine_changed(self, status: EngineStatus) -> None:
        self.publish_state()

    def state(self) -> State:
        listener = self.controller.listener
        status: EngineStatus | None = getattr(listener, "engine", None)
        current = self.queue.current
        engine_state = status.state.value if status is not None else "idle"
        error = self.device_error or (
            status.message if status is not None and status.state in (EngineState.ERROR, EngineState.MISSING) else ""
        )
        speaking = current is not None and self.controller.run is not None
        word = "error" if error else "speaking" if speaking else "idle"
        return State(
            word,
            status.kind if status is not None else self.controller.hub.spec.kind,
            engine_state,
            len(self.queue),
            None if current is None else current.describe(),
            error,
        )

    def publish_state(self) -> None:
        state = self.state()
        if state == self._last_state:
            return
        self._last_state = state
        for callback in self.states:
            callback(state)

    def _report(self, report: Report) -> None:
        log.info(
            "announcement %s (%s, %s): %s %s",
            report.id,
            report.source.value,
            report.priority.label,
            report.outcome.value,
            report.reason,
        )
        for callback in self.reports:
            callback(report)

    def _spawn(self, awaitable) -> None:
        task = asyncio.ensure_future(awaitable)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
