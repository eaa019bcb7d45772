"""The agent's side of the window: the composer's text asked (or said) through the announcement queue, a failed
reply asked again, a new conversation, and consent before an API key or token crosses the network unencrypted."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import astuple, dataclass, field
from typing import TYPE_CHECKING

from voicedesk.app.choices import make_source
from voicedesk.app.console.announcement import Item, Request, Source
from voicedesk.app.conversation import Turn, TurnKind, TurnState
from voicedesk.app.notices import Topic
from voicedesk.app.sources import ChatMessage, TextSource
from voicedesk.app.sources.home_assistant import TOKEN_ENV
from voicedesk.app.ui.forms import ask
from voicedesk.app.urls import SecretConsent, host_of
from voicedesk.engine.errors import UsageError

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget

    from voicedesk.app.controller import SpeechController
    from voicedesk.app.settings import AppSettings
    from voicedesk.app.ui.composer import Composer


@dataclass(eq=False)
class AgentActions:
    """``parent``: the consent dialog's; ``submit``: the announcement queue's; ``store_settings``: the sidebar writes
    its fields into the settings (the agent is made from them as each question starts); ``token``: the Token
    field's (Home Assistant's), never saved."""

    parent: QWidget
    settings: AppSettings
    composer: Composer
    controller: SpeechController
    submit: Callable[[Request, bool], Item | None]
    store_settings: Callable[[AppSettings], None]
    notice: Callable[..., None]
    consent: SecretConsent = field(default_factory=SecretConsent)
    token: Callable[[], str] = str
    source: TextSource | None = None
    """The agent asked last: kept while nothing it is made from changes (Home Assistant's conversation id)."""
    _agent_key: tuple[object, ...] | None = None
    _made_from: tuple[object, ...] | None = None

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
        secret = await self._secret()
        made_from = (key, self.settings.voice.voice, secret)
        if self.source is None or made_from != self._made_from:
            self.source, self._made_from = make_source(self.settings, secret), made_from
        messages = [*self.controller.history, ChatMessage("user", question)]
        return self.source.reply(messages)

    async def _secret(self) -> str | None:
        """OPENAI_API_KEY or Home Assistant's token: over http:// to another machine only after the person's yes."""
        source = self.settings.source
        if source.kind == "homeassistant":
            url, secret, noun = source.ha_url, self.token() or os.environ.get(TOKEN_ENV), "token"
        elif source.kind == "openai":
            url, secret, noun = source.openai_base_url, os.environ.get("OPENAI_API_KEY"), "key"
        else:
            return None
        allowed = self.consent.decided(url) if secret else True
        if allowed is None:
            allowed = await ask(
                self.parent,
                f"Send your {noun} unencrypted?",
                f"The agent {url} is on another machine ({host_of(url)}) and the address starts with http://, so "
                f"your {noun} would cross the network unencrypted, readable by anyone on the way.\n\nUse https:// "
                f"if the server offers it. Send the {noun} anyway?",
                f"Send the {noun}",
                f"Ask without the {noun}",
            )
            self.consent.record(url, allowed)
        if allowed:
            return secret
        if source.kind == "openai":
            return "not-sent"  # the client insists on some key; a local server ignores it
        raise UsageError(
            f"Not asked: you chose not to send the token to {host_of(url)} unencrypted. Use https:// (Home "
            "Assistant's own certificate or a proxy in front of it), or restart the app to be asked again.",
        )
