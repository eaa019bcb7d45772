"""What the window says and when: typed text, agent questions, saved phrases, replays and retries, through the
announcement queue; the history of what was said; the agent's conversation.

The queue itself (``app.announcer``) and the history file (``app.history``) know nothing of Qt; this class
turns the window's buttons and shortcuts into announcements and the controller's turns into history entries.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import astuple
from typing import TYPE_CHECKING

from voicedesk.app.announcements import Announcement, QueueFull
from voicedesk.app.announcer import Announcer
from voicedesk.app.choices import make_source, whole
from voicedesk.app.conversation import Turn, TurnKind, TurnState
from voicedesk.app.engines import EngineState
from voicedesk.app.history import History, HistoryEntry
from voicedesk.app.messages import error_text
from voicedesk.app.notices import Topic
from voicedesk.app.phrases import Phrase
from voicedesk.app.prepared_turn import TurnAhead
from voicedesk.app.sources import ChatMessage
from voicedesk.app.ui.dialogs import ask
from voicedesk.app.ui.phrase_dialog import PhraseDialog
from voicedesk.app.ui.sidebar import voice_title
from voicedesk.app.urls import SecretConsent, host_of
from voicedesk.engine.errors import VoicedeskError
from voicedesk.engine.events import SessionConfig
from voicedesk.engine.model.languages import LANGUAGES
from voicedesk.engine.model.voices import language_of

if TYPE_CHECKING:
    from voicedesk.app.ui.console_window import ConsoleWindow


class AnnounceActions:
    def __init__(self, window: ConsoleWindow, history: History) -> None:
        self.window = window
        self.history = history
        self.consent = SecretConsent()
        self.announcer = Announcer(self._start, window.controller.wait_turn, self._stop_speech, self.refresh)
        self._items: dict[int, Announcement] = {}
        """Turn id → the announcement it says (for the history and retries)."""
        self._agent_key: tuple[object, ...] | None = None
        self.ended: list[Callable[[Announcement | None, Turn], None]] = []
        """Told of every turn that ends, with the announcement it said (the house's outcomes: app.house)."""
        self.starting: Callable[[Announcement], Awaitable[bool]] | None = None
        """Asked as each announcement starts, its output chosen; False: it is not said (the house's rules: an
        expired one; and its chime, loudness and volume are set up here: app.house.window_house)."""
        self._ahead = TurnAhead(window.controller)
        """The next announcement, synthesized while the current one plays (SpeechController.prepare)."""

    # ---- asking for speech ------------------------------------------------------------------------

    def speak_composer(self, interrupt: bool = False) -> Announcement | None:
        window = self.window
        text = window.composer.text().strip()
        if not text:
            window.notice("Type something to say first.", "info")
            window.composer.editor.setFocus()
            return None
        if window.composer.mode.value() == "agent":
            item = self.agent_item(text)
        else:
            item = Announcement(TurnKind.SPEAK, text, origin="Typed")
        if self.submit(item, interrupt):
            window.composer.editor.clear()  # it is in the queue now (a failed question comes back)
            return item
        return None

    def agent_item(self, question: str, origin: str = "Question") -> Announcement:
        return Announcement(TurnKind.AGENT, question, origin=origin, fragments=lambda: self._agent_reply(question))

    def speak_phrase(self, number: int, interrupt: bool = False) -> Announcement | None:
        phrases = self.window.settings.phrases
        if not 0 <= number < len(phrases):
            return None
        phrase = phrases[number]
        item = Announcement(
            TurnKind.SPEAK, phrase.text, voice=phrase.voice, output=phrase.output, origin=f"Phrase · {phrase.title}"
        )
        return item if self.submit(item, interrupt) else None

    def preview_voice(self) -> Announcement | None:
        settings = self.window.settings
        said = voice_title(settings.voice.voice).split(" · ")[0]
        blend = settings.voice.blend_with
        if blend and blend != settings.voice.voice:
            said += f" blended with {voice_title(blend).split(' · ')[0]}"
        item = Announcement(TurnKind.PREVIEW, said, origin="Voice preview")
        sentence = preview_sentence(settings.voice.voice, said)
        item.fragments = lambda: whole(sentence)
        return item if self.submit(item) else None

    def replay(self, number: int) -> Announcement | None:
        entries = self.history.entries
        if not 0 <= number < len(entries):
            return None
        entry = entries[number]
        item = Announcement(TurnKind.SPEAK, entry.replay_text, voice=entry.voice, output=entry.output, origin="Replay")
        return item if self.submit(item) else None

    def retry(self, turn_id: int) -> Announcement | None:
        turn = next((t for t in self.window.controller.turns if t.id == turn_id), None)
        if turn is None or turn.kind is not TurnKind.AGENT:
            return None
        item = self.agent_item(turn.prompt, origin="Asked again")
        return item if self.submit(item) else None

    def submit(self, item: Announcement, interrupt: bool = False) -> bool:
        try:
            self.announcer.submit(item, interrupt)
        except QueueFull as exc:
            self.window.notice(str(exc), "warning")
            return False
        if self.announcer.busy and not interrupt:
            self.window.notice(f"Queued: “{item.label}” ({len(self.announcer.queue)} waiting).", "info", Topic.TURN)
        return True

    def speak_now(self, item_id: int) -> None:
        if self.announcer.queue.move_to_front(item_id):
            self.announcer.queue.paused = False
            self.refresh()
            self.window.spawn(self._stop_speech())
            self.announcer.resume()

    async def stop(self) -> None:
        await self.announcer.stop()

    def new_conversation(self) -> None:
        self.window.controller.new_conversation()
        self.window.notice("New conversation: the agent has forgotten what was said.", "info", Topic.AGENT)

    def clear_history(self) -> None:
        try:
            self.history.clear()
        except OSError as exc:
            self.window.notice(f"Could not clear the history: {exc}", "warning")
        self.window.console.announcements.show_history(self.history.entries)

    async def _stop_speech(self) -> object:
        return await self.window.controller.stop()

    # ---- starting one (the announcer calls this when it is its turn) --------------------------------

    async def _start(self, item: Announcement) -> Turn | None:
        window = self.window
        window.status.clear(Topic.TURN)
        await window.use_output(item.output or window.settings.output_device)
        if self.starting is not None and not await self.starting(item):
            return None
        voice = self._voice_of(item)
        try:
            fragments = item.fragments() if item.fragments is not None else whole(item.text)
            if item.kind is TurnKind.AGENT:
                fragments = await fragments  # the source is made (and the key question asked) first
        except VoicedeskError as exc:
            window.notice(error_text(exc), "error", Topic.AGENT)
            self._give_back(item)
            return None
        waiting = window.hub.status.state is EngineState.LOADING
        if waiting:  # the reply waits for the model (or the connection): say so, or Speak looks dead
            what = "the model is loading" if window.hub.status.kind == "local" else "the engine is connecting"
            window.notice(f"“{item.label}” waits: {what}; it is said as soon as it is ready.", "info", Topic.MODEL)
        prepared = await self._ahead.take((item.id, item.text))
        turn = await window.controller.speak(item.kind, item.text, fragments, voice, prepared)
        if waiting:
            window.status.clear(Topic.MODEL)
        if turn is not None:
            self._items[turn.id] = item
            self._ahead.after(turn, self._upcoming)
        return turn

    def _voice_of(self, item: Announcement) -> SessionConfig | None:
        speech = self.window.settings.voice
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

    async def _agent_reply(self, question: str):
        """The agent's reply stream for ``question``, with the history of this agent's conversation."""
        window = self.window
        window.sidebar.store(window.settings)
        source_settings = window.settings.source
        key = astuple(source_settings)
        if self._agent_key is not None and key != self._agent_key and window.controller.history:
            window.controller.new_conversation()
            window.notice("The agent changed, so it starts a new conversation.", "info", Topic.AGENT)
        self._agent_key = key
        api_key = None
        url = source_settings.openai_base_url
        if source_settings.kind == "openai" and os.environ.get("OPENAI_API_KEY"):
            allowed = self.consent.decided(url)
            if allowed is None:
                allowed = await ask(
                    window,
                    "Send your API key unencrypted?",
                    f"The chat server {url} is on another machine ({host_of(url)}) and the address starts with "
                    "http://, so OPENAI_API_KEY would cross the network unencrypted, readable by anyone on the "
                    "way.\n\nUse https:// if the server offers it. Send the key anyway?",
                    "Send the key",
                    "Ask without the key",
                )
                self.consent.record(url, allowed)
            if not allowed:
                api_key = "not-sent"  # the client insists on some key; a local server ignores it
        source = make_source(window.settings, api_key=api_key)
        messages = [*window.controller.history, ChatMessage("user", question)]
        return source.reply(messages)

    def _give_back(self, item: Announcement) -> None:
        """A question that could not be asked goes back into an empty composer, so nothing is lost."""
        composer = self.window.composer
        if item.kind is TurnKind.AGENT and not composer.text().strip():
            composer.set_mode("agent")
            composer.editor.setPlainText(item.text)

    # ---- when a turn ends ---------------------------------------------------------------------------

    def turn_ended(self, turn: Turn) -> None:
        item = self._items.pop(turn.id, None)
        for listener in self.ended:
            listener(item, turn)
        window = self.window
        if turn.state is TurnState.FAILED and item is not None:
            self._give_back(item)
        if turn.state is TurnState.DONE:
            if turn.kind is TurnKind.AGENT:
                window.status.clear(Topic.AGENT)
            if all(s.engine == turn.engine for s in turn.sentences) and turn.engine == window.selected_label():
                window.status.clear(Topic.ENGINE)  # the engine just worked: an old complaint is stale
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
            voice=(item.voice if item is not None and item.voice else window.controller.voice.voice),
            engine=engines,
            state=turn.state.value,
            output=item.output if item is not None else "",
            origin=item.origin if item is not None else "",
            whole=turn.text[:5000] if turn.text.strip() != said.strip() else "",
        )
        try:
            self.history.add(entry)
        except OSError as exc:
            window.notice(f"Could not save the history to {self.history.path}: {exc}", "warning")
        window.console.announcements.show_history(self.history.entries)

    # ---- phrases ------------------------------------------------------------------------------------

    def edit_phrase(self, number: int | None) -> PhraseDialog:
        """Opens the editor (``number`` None: a new phrase, from the composer's text); saves on Save."""
        window = self.window
        phrases = window.settings.phrases
        phrase = phrases[number] if number is not None else Phrase(text=window.composer.text().strip())
        voices = [(v, voice_title(v)) for v in window.voice_names()]
        outputs = [(key, title) for key, title, _detail in window.outputs.choices]
        taken = {p.shortcut: f"the phrase “{p.title}”" for n, p in enumerate(phrases) if n != number}
        taken[window.settings.desktop.stop_shortcut] = "Stop"
        dialog = PhraseDialog(phrase, voices, outputs, window, taken)
        dialog.recording.connect(window.suspend_shortcuts)

        def saved() -> None:
            if number is None:
                phrases.append(dialog.phrase())
            else:
                phrases[number] = dialog.phrase()
            window.phrases_changed()

        dialog.accepted.connect(saved)
        dialog.open()
        return dialog

    def delete_phrase(self, number: int) -> None:
        phrases = self.window.settings.phrases
        if 0 <= number < len(phrases):
            del phrases[number]
            self.window.phrases_changed()

    # ---- showing it ---------------------------------------------------------------------------------

    def refresh(self) -> None:
        announcer = self.announcer
        queue = announcer.queue
        self.window.console.announcements.show_queue(announcer.current, list(queue.items), queue.paused)
        self.window.refresh_desktop()


def preview_sentence(voice: str, said: str) -> str:
    """A voice previews itself in its own language (a Japanese voice reading English sounds like neither)."""
    code = language_of(voice)
    if code in "ab":
        return f"Hello, this is {said}."
    return LANGUAGES[code].sample.format(voice=said)
