"""Runs the console core against the speech controller, one announcement at a time (asyncio, no Qt): the window and
the headless announcer both drive it; MQTT, HTTP and the voice input are its inputs too.

Inputs call ``submit`` / ``stop`` / ``listen`` / ``heard``; outputs subscribe to ``reports`` (one outcome per
announcement), ``states`` (the console's state), ``changes`` (the queue changed) and ``ended`` (each turn, with the
announcement it said). ``before`` is the front-end's one hook as each announcement starts (the window picks its
output; the announcer reopens a lost sound device). House announcements are said after their chime, at their voice's
loudness and their priority's volume; a sound device that stops taking audio fails the announcement.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import asdict, dataclass

from voicedesk.app.choices import whole
from voicedesk.app.console.announcement import Item, Report, Request
from voicedesk.app.console.core import ConsoleCore, Offered
from voicedesk.app.controller import SpeechController
from voicedesk.app.conversation import Turn, TurnState
from voicedesk.app.engines import KIND_LABELS, EngineState
from voicedesk.app.house.chimes import Chimes
from voicedesk.app.house.loudness import LoudnessCache
from voicedesk.app.house.shaped_player import ShapedPlayer
from voicedesk.app.messages import error_text
from voicedesk.app.notices import Topic
from voicedesk.app.prepared_turn import TurnAhead
from voicedesk.app.wakeup import Wakeup, loop_running
from voicedesk.engine.errors import VoicedeskError
from voicedesk.engine.events import SessionConfig
from voicedesk.engine.tasks import cancel_and_wait

log = logging.getLogger(__name__)

STALL_S = 5.0
"""Playing, yet no sample taken by the device for this long: the sound device is gone."""


def remaining_text(turn: Turn, said: str) -> str:
    """What follows the sentence a cut turn was cut in: where a resumed announcement starts again; ``said``, all of
    it, when nothing was heard (cut before its text even reached the engine, the turn holds none of it)."""
    cut = turn.cut
    if cut is None or not cut.heard_text.strip():
        return said
    after = [] if cut.sentence is None else [s.text for s in turn.sentences[cut.sentence + 1 :]]
    return " ".join([*after, turn.pending.strip()]).strip()


@dataclass(frozen=True, slots=True)
class State:
    state: str
    """idle, speaking, listening or error."""
    engine: str
    engine_state: str
    queued: int
    current: dict[str, object] | None
    error: str = ""

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


class ConsoleRunner:
    def __init__(
        self,
        controller: SpeechController,
        core: ConsoleCore | None = None,
        chimes: Chimes | None = None,
        loudness: LoudnessCache | None = None,
        before: Callable[[Item], Awaitable[None]] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.controller = controller
        self.core = core or ConsoleCore()
        self.chimes = chimes or Chimes()
        self.loudness = loudness
        self.before = before
        """Called as each announcement starts; if it raises, the announcement fails with that reason."""
        self.clock = clock
        self.reports: list[Callable[[Report], None]] = []
        self.states: list[Callable[[State], None]] = []
        self.changes: list[Callable[[], None]] = []
        self.ended: list[Callable[[Item, Turn], None]] = []
        self.on_listen: list[Callable[[], None]] = []
        """The voice input opens its microphone when the house asks it to listen (push-to-talk)."""
        self.device_error = ""
        self._wake = Wakeup()
        self._task: asyncio.Task[None] | None = None
        self._background: set[asyncio.Future[object]] = set()
        self._last_state: State | None = None
        self._ahead = TurnAhead(controller)
        """The next announcement, synthesized while the current one plays (``SpeechController.prepare``)."""

    # ---- inputs -----------------------------------------------------------------------------------

    def submit(self, request: Request, first: bool = False) -> Offered:
        """Queues ``request`` (raises ``QueueFull``); ``first``: the person's choice, said next, cutting what plays."""
        offered = self.core.offer(request, self.clock(), first)
        if offered.report is not None:
            self._report(offered.report)
        if offered.interrupt:
            self._spawn(self.controller.stop(quiet=True))
        self._wake.set()
        self._changed()
        return offered

    async def stop(self, hold: bool = False) -> None:
        """Stops what is said (it ends interrupted); ``hold``: the person's Stop, which also holds what waits."""
        if self.core.stop(hold):
            await self.controller.stop(quiet=not hold)
        self._changed()

    def speak_now(self, item_id: str) -> None:
        if self.core.speak_now(item_id):
            self._spawn(self.controller.stop(quiet=True))
            self._wake.set()
            self._changed()

    def remove(self, item_id: str) -> None:
        report = self.core.remove(item_id, self.clock())
        if report is not None:
            self._report(report)
        self._changed()

    def clear(self) -> None:
        for report in self.core.clear(self.clock()):
            self._report(report)
        self._changed()

    def resume(self) -> None:
        self.core.resume()
        self._wake.set()
        self._changed()

    # ---- the voice input (issue 29): see app.console.core ------------------------------------------

    async def listen(self) -> None:
        """Push-to-talk from the house, or the person started speaking (barge-in): what plays is cut (heard-up-to
        kept in its turn) and nothing starts until ``heard`` or ``not_heard``."""
        cut = self.core.listen()
        for callback in self.on_listen:
            callback()
        if cut:
            await self.controller.stop(quiet=True)
        self._changed()

    def heard(self, request: Request) -> Offered:
        """The person's spoken turn (``Source.VOICE``, usually a question with its agent's ``fragments``)."""
        offered = self.core.heard(request, self.clock())
        self._wake.set()
        self._changed()
        return offered

    def not_heard(self) -> None:
        self.core.not_heard()
        self._wake.set()
        self._changed()

    # ---- running ----------------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())
            self.publish_state()

    async def aclose(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None
        await self._ahead.drop()

    @property
    def busy(self) -> bool:
        return self.core.current is not None

    async def _run(self) -> None:
        while True:
            if not loop_running():  # woken by Qt outside the loop's run (pytest-qt): wait until it runs
                self._wake.set_later()
                await self._wake.wait()
                continue
            now = self.clock()
            await self._expire()
            item, _expired = self.core.next(now)
            if item is None:
                self.publish_state()
                deadline = self.core.next_deadline(now)
                await self._wake.wait(None if deadline is None else max(deadline - now, 0.05))
                continue
            self._changed()
            try:
                report = await self._say(item)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # one announcement failing must not stop the console
                log.exception("announcement %s failed", item.id)
                self._unshape()
                report = self.core.failed(item, f"internal error: {exc!r}", self.clock())
            if report is not None:
                self._report(report)
            self._changed()

    async def _say(self, item: Item) -> Report | None:
        controller = self.controller
        try:
            if self.before is not None:
                await self.before(item)
            fragments = await self._fragments(item)
        except Exception as exc:  # it ends failed, with the reason; the console carries on
            if not isinstance(exc, VoicedeskError):
                log.exception("announcement %s could not start", item.id)
            return self._never_started(item, error_text(exc))
        voice = item.request.voice or controller.voice.voice
        self._shape(item, voice)
        prepared = await self._ahead.take((item.id, item.text))
        turn = await controller.speak(item.request.kind, item.text, fragments, self._voice(item), prepared)
        if turn is None:
            self._unshape()
            return self._never_started(item, controller.refusal or "no engine could take it", notice=False)
        self._ahead.after(turn, self._upcoming)
        if self.core.cutting is not None:  # cut while it was starting: stop it now it exists
            await controller.stop(quiet=True)
        self._changed()  # it is heard now ("Speaking:", the state)
        stalled = await self._wait(turn)
        self._unshape()
        await self._learn_loudness(turn, voice)
        for listener in self.ended:
            listener(item, turn)
        now = self.clock()
        if stalled:
            return self.core.failed(item, self.device_error, now)
        if turn.state is TurnState.DONE:
            return self.core.spoken(item, now, note=" ".join(turn.notes))
        if turn.state is TurnState.CUT:
            return self.core.cut(item, remaining_text(turn, item.text), now)
        return self.core.failed(item, turn.error or "the engine failed", now)

    async def _fragments(self, item: Item) -> AsyncIterator[str]:
        if item.request.fragments is None:
            return whole(item.text)
        made = item.request.fragments()
        return await made if inspect.isawaitable(made) else made  # an agent's source is made (and asked) first

    def _never_started(self, item: Item, reason: str, notice: bool = True) -> Report:
        """It could not start (the reason already shown unless ``notice``): a FAILED turn that never began."""
        if notice:
            self.controller.listener.notice(f"“{item.label}” could not start: {reason}", "error", Topic.AGENT)
        label = KIND_LABELS.get(self.controller.hub.spec.kind, self.controller.hub.spec.kind)
        failed = Turn(0, item.request.kind, item.text, label, state=TurnState.FAILED, error=reason)
        for listener in self.ended:
            listener(item, failed)
        return self.core.failed(item, reason, self.clock())

    def _voice(self, item: Item) -> SessionConfig | None:
        speech = self.controller.voice
        voice = item.request.voice
        return SessionConfig(voice, speech.speed, speech.max_buffer_delay_ms) if voice else None

    def _upcoming(self) -> tuple[object, str, SessionConfig | None] | None:
        """Plain text on the current output, due next (an urgent one still cuts in; one that expires or is overtaken
        meanwhile is discarded, never played)."""
        upcoming = None if self.core.paused else self.core.peek(self.clock())
        if upcoming is None or not upcoming.request.resumable or upcoming.request.output:
            return None
        return (upcoming.id, upcoming.text), upcoming.text, self._voice(upcoming)

    async def _wait(self, turn: Turn) -> bool:
        """Waits for ``turn`` to end; True when the sound device stopped taking audio meanwhile (then it is cut)."""
        ended = asyncio.ensure_future(self.controller.wait_turn(turn))
        try:
            last, since = -1, self.clock()
            while not ended.done():
                await asyncio.wait([ended], timeout=0.5)
                await self._expire()  # what waits past its TTL meanwhile is reported now, not after this one
                player = self.controller.player
                if player is None or ended.done():
                    continue
                # Samples played or starved for: both mean the device's callback runs (a slow engine starves it,
                # which is not a lost device); neither moving while playing means the device stopped calling.
                position = player.buffer.played_samples + player.buffer.underrun_frames
                if not player.buffer.playing or position != last:
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

    async def _expire(self) -> None:
        expired = self.core.expire(self.clock())
        for report in expired:
            self._report(report)
        key = self._ahead.key
        if expired and isinstance(key, tuple) and any(report.id == key[0] for report in expired):
            await self._ahead.drop()  # prepared ahead, expired before its turn: never played
        if expired:
            self._changed()

    # ---- the house's sound: chime, loudness, volume --------------------------------------------------

    def _shape(self, item: Item, voice: str) -> None:
        player = self.controller.player
        if player is None or not item.source.house:
            return
        shaped = ShapedPlayer(player.player if isinstance(player, ShapedPlayer) else player)
        gain = self.loudness.gain(self._loudness_key(voice)) if self.loudness is not None else 1.0
        chime = None if item.resumed else self.chimes.for_announcement(item.request.chime, item.priority)
        shaped.prepare(gain, self.core.volume(item.priority, self.clock()), chime)
        self.controller.player = shaped

    def _unshape(self) -> None:
        player = self.controller.player
        if isinstance(player, ShapedPlayer):
            self.controller.player = player.player

    def _loudness_key(self, voice: str) -> str:
        return f"{self.controller.hub.spec.kind}:{voice}"

    async def _learn_loudness(self, turn: Turn, voice: str) -> None:
        """What was just said refines its voice's loudness (no synthesis of its own: the model stays free)."""
        run = self.controller.last_run
        if self.loudness is not None and run is not None and run.turn is turn and run.pcm:
            await self.loudness.learn(self._loudness_key(voice), b"".join(run.pcm))

    # ---- outputs ----------------------------------------------------------------------------------

    def state(self) -> State:
        status = self.controller.hub.status
        current = self.core.current
        down = status.state in (EngineState.ERROR, EngineState.MISSING)
        error = self.device_error or (status.message if down else "")
        speaking = current is not None and self.controller.run is not None
        word = "error" if error else "listening" if self.core.listening else "speaking" if speaking else "idle"
        engine = status.kind or self.controller.hub.spec.kind
        described = None if current is None else current.describe()
        return State(word, engine, status.state.value, len(self.core), described, error)

    def publish_state(self) -> None:
        state = self.state()
        if state == self._last_state:
            return
        self._last_state = state
        for callback in self.states:
            callback(state)

    def _changed(self) -> None:
        for callback in self.changes:
            callback()
        self.publish_state()

    def _report(self, report: Report) -> None:
        what = (report.id, report.source.value, report.priority.label, report.outcome.value, report.reason)
        log.info("announcement %s (%s, %s): %s %s", *what)
        for callback in self.reports:
            callback(report)

    def _spawn(self, awaitable: Awaitable[object]) -> None:
        task = asyncio.ensure_future(awaitable)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
