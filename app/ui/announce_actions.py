"""The window's announcement queue and history: typed text, questions (``agent_actions``), phrases
(``phrase_actions``), previews and replays are said one at a time, each turn then kept in the history. The queue
(``app.announcer``) and the history file (``app.history``) know nothing of Qt."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from voicedesk.app.announcements import Announcement, QueueFull
from voicedesk.app.announcer import Announcer
from voicedesk.app.choices import whole
from voicedesk.app.conversation import Turn, TurnKind, TurnState
from voicedesk.app.engines import EngineState
from voicedesk.app.history import History, HistoryEntry
from voicedesk.app.messages import error_text
from voicedesk.app.notices import Topic
from voicedesk.app.prepared_turn import TurnAhead
from voicedesk.app.ui.sidebar import voice_title
from voicedesk.engine.errors import VoicedeskError
from voicedesk.engine.events import SessionConfig
from voicedesk.engine.model.languages import LANGUAGES
from voicedesk.engine.model.voices import language_of

if TYPE_CHECKING:
    from voicedesk.app.controller import SpeechController
    from voicedesk.app.engines import EngineHub
    from voicedesk.app.settings import AppSettings
    from voicedesk.app.ui.console_panel import QueueCard
    from voicedesk.app.ui.status_line import StatusLine


class AnnounceActions:
    def __init__(
        self,
        history: History,
        controller: SpeechController,
        hub: EngineHub,
        settings: AppSettings,
        status: StatusLine,
        card: QueueCard,
        use_output: Callable[[str], Awaitable[None]],
        spawn: Callable[..., object],
        engine_label: Callable[[], str],
        on_change: Callable[[], None],
    ) -> None:
        """``card``: the console's queue and history; ``use_output``: makes a device the output of what is said
        next; ``engine_label``: the selected engine's name; ``on_change``: after the queue changes (the tray)."""
        self.history, self.controller, self.hub, self.settings = history, controller, hub, settings
        self.status, self.card, self.use_output, self.spawn = status, card, use_output, spawn
        self.engine_label, self.on_change = engine_label, on_change
        self.announcer = Announcer(self._start, controller.wait_turn, controller.stop, self.refresh)
        self._items: dict[int, Announcement] = {}
        """Turn id → the announcement it says (for the history and retries)."""
        self.ended: list[Callable[[Announcement | None, Turn], None]] = []
        """Told of every turn that ends, with the announcement it said (the house's outcomes: app.house), and of
        every announcement that could not start, with a FAILED turn that never began (its error: why)."""
        self.starting: Callable[[Announcement], Awaitable[bool]] | None = None
        """Asked as each announcement starts, its output chosen; False: it is not said (the house's rules: an
        expired one; and its chime, loudness and volume are set up here: app.house.window_house)."""
        self._ahead = TurnAhead(controller)
        """The next announcement, synthesized while the current one plays (SpeechController.prepare)."""

    # ---- asking for speech ------------------------------------------------------------------------

    def preview_voice(self) -> Announcement | None:
        voice = self.settings.voice
        said = voice_title(voice.voice).split(" · ")[0]
        if voice.blend_with and voice.blend_with != voice.voice:
            said += f" blended with {voice_title(voice.blend_with).split(' · ')[0]}"
        item = Announcement(TurnKind.PREVIEW, said, origin="Voice preview")
        sentence = preview_sentence(voice.voice, said)
        item.fragments = lambda: whole(sentence)
        return item if self.submit(item) else None

    def replay(self, number: int) -> Announcement | None:
        entries = self.history.entries
        if not 0 <= number < len(entries):
            return None
        entry = entries[number]
        item = Announcement(TurnKind.SPEAK, entry.replay_text, voice=entry.voice, output=entry.output, origin="Replay")
        return item if self.submit(item) else None

    def submit(self, item: Announcement, interrupt: bool = False) -> bool:
        try:
            self.announcer.submit(item, interrupt)
        except QueueFull as exc:
            self.status.post(str(exc), "warning")
            return False
        if self.announcer.busy and not interrupt:
            self.status.post(f"Queued: “{item.label}” ({len(self.announcer.queue)} waiting).", "info", Topic.TURN)
        return True

    def speak_now(self, item_id: int) -> None:
        if self.announcer.queue.move_to_front(item_id):
            self.announcer.queue.paused = False
            self.refresh()
            self.spawn(self.controller.stop())
            self.announcer.resume()

    async def stop(self) -> None:
        await self.announcer.stop()

    def clear_history(self) -> None:
        try:
            self.history.clear()
        except OSError as exc:
            self.status.post(f"Could not clear the history: {exc}", "warning")
        self.card.show_history(self.history.entries)

    # ---- starting one (the announcer calls this when it is its turn) --------------------------------

    async def _start(self, item: Announcement) -> Turn | None:
        """Its turn, or None: not said (``starting`` said no), or it could not start, which ends it at once as a
        FAILED turn with the reason (every announcement ends with one outcome)."""
        self.status.clear(Topic.TURN)
        try:
            await self.use_output(item.output or self.settings.output_device)
            if self.starting is not None and not await self.starting(item):
                return None
            turn = await self._speak(item)
        except Exception as exc:
            self.status.post(f"“{item.label}” could not start: {error_text(exc)}", "error")
            self._never_started(item, error_text(exc))
            raise  # the announcer logs it and carries on with the next
        if isinstance(turn, str):
            self._never_started(item, turn)
            return None
        return turn

    async def _speak(self, item: Announcement) -> Turn | str:
        """Its turn, or why it could not start (already shown)."""
        try:
            fragments = item.fragments() if item.fragments is not None else whole(item.text)
            if item.kind is TurnKind.AGENT:
                fragments = await fragments  # the source is made (and the key question asked) first
        except VoicedeskError as exc:
            self.status.post(error_text(exc), "error", Topic.AGENT)
            return error_text(exc)
        waiting = self.hub.status.state is EngineState.LOADING
        if waiting:  # the reply waits for the model (or the connection): say so, or Speak looks dead
            what = "the model is loading" if self.hub.status.kind == "local" else "the engine is connecting"
            self.status.post(f"“{item.label}” waits: {what}; it is said as soon as it is ready.", "info", Topic.MODEL)
        prepared = await self._ahead.take((item.id, item.text))
        turn = await self.controller.speak(item.kind, item.text, fragments, self._voice_of(item), prepared)
        if waiting:
            self.status.clear(Topic.MODEL)
        if turn is None:
            return self.controller.refusal
        self._items[turn.id] = item
        self._ahead.after(turn, self._upcoming)
        return turn

    def _never_started(self, item: Announcement, reason: str) -> None:
        failed = Turn(0, item.kind, item.text, self.engine_label(), state=TurnState.FAILED, error=reason)
        for listener in self.ended:
            listener(item, failed)

    def _voice_of(self, item: Announcement) -> SessionConfig | None:
        speech = self.settings.voice
        return SessionConfig(item.voice, speech.speed, round(speech.max_buffer_delay_ms)) if item.voice else None

    def _upcoming(self) -> tuple[object, str, SessionConfig | None] | None:
        """What to synthesize while the current turn plays: only plain text on the current output (an agent's
        reply is asked for when its turn comes); a Stop, an interruption or a reordered queue discards it."""
        queue = self.announcer.queue
        if queue.paused or not queue.items:
            return None
        upcoming = queue.items[0]
        if upcoming.kind is not TurnKind.SPEAK or upcoming.fragments is not None or upcoming.output:
            return None
        return (upcoming.id, upcoming.text), upcoming.text, self._voice_of(upcoming)

    # ---- when a turn ends ---------------------------------------------------------------------------

    def turn_ended(self, turn: Turn) -> None:
        item = self._items.pop(turn.id, None)
        for listener in self.ended:
            listener(item, turn)
        if turn.state is TurnState.DONE:
            if turn.kind is TurnKind.AGENT:
                self.status.clear(Topic.AGENT)
            if all(s.engine == turn.engine for s in turn.sentences) and turn.engine == self.engine_label():
                self.status.clear(Topic.ENGINE)  # the engine just worked: an old complaint is stale
        if turn.kind is TurnKind.PREVIEW:
            return
        said = turn.cut.heard_text if turn.cut is not None else turn.text
        if not said.strip():
            return
        engines = " → ".join(dict.fromkeys(s.engine for s in turn.sentences)) or turn.engine
        entry = HistoryEntry(
            at=time.time(),
            kind=turn.kind.value,
            text=said[:5000],
            prompt=turn.prompt if turn.kind is TurnKind.AGENT else "",
            voice=(item.voice if item is not None and item.voice else self.controller.voice.voice),
            engine=engines,
            state=turn.state.value,
            output=item.output if item is not None else "",
            origin=item.origin if item is not None else "",
            whole=turn.text[:5000] if turn.text.strip() != said.strip() else "",
        )
        try:
            self.history.add(entry)
        except OSError as exc:
            self.status.post(f"Could not save the history to {self.history.path}: {exc}", "warning")
        self.card.show_history(self.history.entries)

    # ---- showing it ---------------------------------------------------------------------------------

    def refresh(self) -> None:
        queue = self.announcer.queue
        self.card.show_queue(self.announcer.current, list(queue.items), queue.paused)
        self.on_change()


def preview_sentence(voice: str, said: str) -> str:
    """A voice previews itself in its own language (a Japanese voice reading English sounds like neither)."""
    code = language_of(voice)
    if code in "ab":
        return f"Hello, this is {said}."
    return LANGUAGES[code].sample.format(voice=said)
