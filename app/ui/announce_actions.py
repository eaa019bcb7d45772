"""The window's side of the console: what the person asks for goes into the one console core (``app.console``), each
turn is then kept in the history, and the queue card and status line say what happens. The core and the history file
(``app.history``) know nothing of Qt."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from voicedesk.app.choices import whole
from voicedesk.app.console.announcement import Item, Request, Source
from voicedesk.app.console.core import ConsoleCore, QueueFull
from voicedesk.app.console.runner import ConsoleRunner
from voicedesk.app.conversation import Turn, TurnKind, TurnState
from voicedesk.app.engines import EngineState
from voicedesk.app.history import History, HistoryEntry
from voicedesk.app.notices import Topic
from voicedesk.app.ui.forms import ask
from voicedesk.app.ui.sidebar import voice_title
from voicedesk.engine.model.languages import LANGUAGES
from voicedesk.engine.model.voices import language_of

WINDOW = Source.WINDOW

if TYPE_CHECKING:
    from voicedesk.app.controller import SpeechController
    from voicedesk.app.engines import EngineHub
    from voicedesk.app.house.inputs import HouseInputs
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
        engine_label: Callable[[], str],
        on_change: Callable[[], None],
        house: HouseInputs | None = None,
    ) -> None:
        """``card``: the console's queue and history; ``use_output``: makes a device the output of what is said
        next; ``engine_label``: the selected engine's name; ``on_change``: after the queue changes (the tray);
        ``house``: the house's rules (chimes, loudness, TTL…) when the house's inputs are on."""
        from voicedesk.app.house.inputs import loudness_cache

        self.history, self.controller, self.hub, self.settings = history, controller, hub, settings
        self.status, self.card, self.use_output = status, card, use_output
        self.engine_label, self.on_change = engine_label, on_change
        core = ConsoleCore(house.policy if house is not None else None)
        chimes = house.chimes if house is not None else None
        self.console = ConsoleRunner(controller, core, chimes, loudness_cache(house), before=self._before)
        self.console.changes.append(self.refresh)
        self.console.ended.append(self._ended)
        self.ended = self.console.ended
        """Told of every turn that ends, with the announcement it said (a FAILED turn that never began: why)."""

    # ---- asking for speech ------------------------------------------------------------------------

    def preview_voice(self) -> Item | None:
        voice = self.settings.voice
        said = voice_title(voice.voice).split(" · ")[0]
        if voice.blend_with and voice.blend_with != voice.voice:
            said += f" blended with {voice_title(voice.blend_with).split(' · ')[0]}"
        sentence = preview_sentence(voice.voice, said)
        fragments = lambda: whole(sentence)  # noqa: E731
        return self.submit(
            Request(said, kind=TurnKind.PREVIEW, source=WINDOW, origin="Voice preview", fragments=fragments)
        )

    def replay(self, number: int) -> Item | None:
        entries = self.history.entries
        if not 0 <= number < len(entries):
            return None
        entry = entries[number]
        return self.submit(
            Request(entry.replay_text, voice=entry.voice, output=entry.output, origin="Replay", source=WINDOW)
        )

    def submit(self, request: Request, interrupt: bool = False) -> Item | None:
        """Queues the person's ``request`` (``interrupt``: said now, cutting what plays); None: the queue is full."""
        busy = self.console.busy
        try:
            item = self.console.submit(request, first=interrupt).item
        except QueueFull as exc:
            self.status.post(f"{str(exc)[0].upper()}{str(exc)[1:]}, or clear it.", "warning")
            return None
        if busy and not interrupt and item is not None:
            self.status.post(f"Queued: “{item.label}” ({len(self.console.core)} waiting).", "info", Topic.TURN)
        return item

    def speak_now(self, item_id: str) -> None:
        self.console.speak_now(item_id)

    async def stop(self) -> None:
        await self.console.stop(hold=True)

    async def clear_history(self) -> None:
        """Asks first: the history is what Replay and Ask again work from, and it cannot be brought back."""
        count = len(self.history.entries)
        entries = f"{count} {'entry' if count == 1 else 'entries'}"
        question = f"{entries} will be deleted for good, and with them what Replay and Ask again can say."
        if not count or not await ask(self.card, "Clear the history?", question, "Clear history", "Keep it"):
            return
        try:
            self.history.clear()
        except OSError as exc:
            self.status.post(f"Could not clear the history: {exc}", "warning")
        self.card.show_history(self.history.entries)

    # ---- each announcement --------------------------------------------------------------------------

    async def _before(self, item: Item) -> None:
        """As it starts: its output, and a word when it must wait for the model (or Speak looks dead)."""
        self.status.clear(Topic.TURN)
        await self.use_output(item.request.output or self.settings.output_device)
        if self.hub.status.state is EngineState.LOADING:
            what = "the model is loading" if self.hub.status.kind == "local" else "the engine is connecting"
            self.status.post(f"“{item.label}” waits: {what}; it is said as soon as it is ready.", "info", Topic.MODEL)

    def _ended(self, item: Item, turn: Turn) -> None:
        self.status.clear(Topic.MODEL)
        if turn.state is TurnState.DONE:
            if turn.kind is TurnKind.AGENT:
                self.status.clear(Topic.AGENT)
            if all(s.engine == turn.engine for s in turn.sentences) and turn.engine == self.engine_label():
                self.status.clear(Topic.ENGINE)  # the engine just worked: an old complaint is stale
        said = turn.cut.heard_text if turn.cut is not None else turn.text
        if turn.kind is TurnKind.PREVIEW or turn.id == 0 or not said.strip():
            return
        engines = " → ".join(dict.fromkeys(s.engine for s in turn.sentences)) or turn.engine
        entry = HistoryEntry(
            at=time.time(),
            kind=turn.kind.value,
            text=said[:5000],
            prompt=turn.prompt if turn.kind is TurnKind.AGENT else "",
            voice=item.request.voice or self.controller.voice.voice,
            engine=engines,
            state=turn.state.value,
            output=item.request.output,
            origin=item.origin,
            whole=turn.text[:5000] if turn.text.strip() != said.strip() else "",
        )
        try:
            self.history.add(entry)
        except OSError as exc:
            self.status.post(f"Could not save the history to {self.history.path}: {exc}", "warning")
        self.card.show_history(self.history.entries)

    def refresh(self) -> None:
        core, now = self.console.core, self.console.clock()
        held = frozenset(item.id for item in core.waiting if core.held(item, now))
        speaking = self.controller.run is not None
        self.card.show_queue(core.current, list(core.waiting), core.paused, speaking, held)
        self.on_change()


def preview_sentence(voice: str, said: str) -> str:
    """A voice previews itself in its own language (a Japanese voice reading English sounds like neither)."""
    code = language_of(voice)
    if code in "ab":
        return f"Hello, this is {said}."
    return LANGUAGES[code].sample.format(voice=said)
