"""The agent's side of the window: the composer's text asked (or said) through the announcement queue, a failed
reply asked again, a new conversation, and consent before an API key crosses the network unencrypted."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import astuple, dataclass, field
from typing import TYPE_CHECKING

from voicedesk.app.choices import make_source
from voicedesk.app.console.announcement import Item, Request, Source
from voicedesk.app.conversation import Turn, TurnKind, TurnState
from voicedesk.app.notices import Topic
from voicedesk.app.sources import ChatMessage
from voicedesk.app.ui.dialogs import ask
from voicedesk.app.urls import SecretConsent, host_of

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget

    from voicedesk.app.controller import SpeechController
    from voicedesk.app.settings import AppSettings
    from voicedesk.app.ui.composer import Composer


@dataclass(eq=False)
class AgentActions:
    """``parent``: the consent dialog's; ``submit``: the announcement queue's; ``store_settings``: the sidebar writes
    its fields into the settings (the agent is made from them as each question starts)."""

    parent: QWidget
    settings: AppSettings
    composer: Composer
    controller: SpeechController
    submit: Callable[[Request, bool], Item | None]
    store_settings: Callable[[AppSettings], None]
    notice: Callable[..., None]
    consent: SecretConsent = field(default_factory=SecretConsent)
    _agent_key: tuple[object, ...] | None = None

    def speak_composer(self, interrupt: bool = False) -> Item | None:
        composer = self.composer
        text = composer.text().strip()
        if not text:
            self.notice("Type something to say first.", "info")
            composer.editor.setFocus()
            return None
        agent = composer.mode.value() == "agent"
        request = self.question(text) if agent else Request(text, source=Source.WINDOW, origin="Typed")
        item = self.submit(request, interrupt)
        if item is not None:
            composer.editor.clear()  # it is in the queue now (a failed question comes back)
        return item

    def question(self, question: str, origin: str = "Question") -> Request:
        reply = lambda: self._reply(question)  # noqa: E731
        return Request(question, kind=TurnKind.AGENT, source=Source.WINDOW, origin=origin, fragments=reply)

    def retry(self, turn_id: int) -> Item | None:
        turn = next((t for t in self.controller.turns if t.id == turn_id), None)
        if turn is None or turn.kind is not TurnKind.AGENT:
            return None
        return self.submit(self.question(turn.prompt, origin="Asked again"), False)

    def new_conversation(self) -> None:
        self.controller.new_conversation()
        self.notice("New conversation: the agent has forgotten what was said.", "info", Topic.AGENT)

    def turn_ended(self, item: Item, turn: Turn) -> None:
        """A question that could not be asked goes back into an empty composer, so nothing is lost."""
        failed = turn.state is TurnState.FAILED and item.request.kind is TurnKind.AGENT
        if failed and not self.composer.text().strip():
            self.composer.set_mode("agent")
            self.composer.editor.setPlainText(item.text)

    async def _reply(self, question: str):
        """The agent's reply stream for ``question``, with the history of this agent's conversation."""
        self.store_settings(self.settings)
        source_settings = self.settings.source
        key = astuple(source_settings)
        if self._agent_key is not None and key != self._agent_key and self.controller.history:
            self.controller.new_conversation()
            self.notice("The agent changed, so it starts a new conversation.", "info", Topic.AGENT)
        self._agent_key = key
        api_key = None
        url = source_settings.openai_base_url
        if source_settings.kind == "openai" and os.environ.get("OPENAI_API_KEY"):
            allowed = self.consent.decided(url)
            if allowed is None:
                allowed = await ask(
                    self.parent,
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
        source = make_source(self.settings, api_key=api_key)
        messages = [*self.controller.history, ChatMessage("user", question)]
        return source.reply(messages)
