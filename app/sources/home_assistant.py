"""Home Assistant's conversation API (Assist) as the agent: it carries out commands and answers all at once; its
conversation id goes back with each question until the app starts a new conversation."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import httpx

from voicedesk.app.sources import ChatMessage
from voicedesk.engine.errors import ConnectionFailed, ErrorCode, UsageError, VoicedeskError
from voicedesk.engine.model.languages import LANGUAGES
from voicedesk.engine.model.voices import language_of

TOKEN_ENV = "HASS_TOKEN"  # when the Token field is empty (what Home Assistant's own CLI reads)
PROCESS_PATH = "/api/conversation/process"
TIMEOUT = httpx.Timeout(60.0, connect=5.0)  # an agent backed by a language model can take many seconds
TOKEN_HELP = (
    "Create a long-lived access token in Home Assistant (your profile › Security) and paste it into the Token "
    f"field of the Agent settings, or set {TOKEN_ENV}."
)


def assist_language(voice: str) -> str:
    """The voice's language, as Home Assistant tags it, when none is set."""
    code = language_of(voice)
    return {"a": "en-US", "b": "en-GB", "p": "pt-BR", "z": "zh-CN"}.get(code, LANGUAGES[code].tag)


class HomeAssistantSource:
    def __init__(self, base_url: str, token: str | None, language: str = "", agent_id: str = "") -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token or ""
        self.language = language.strip()
        self.agent_id = agent_id.strip()
        self.conversation_id: str | None = None
        self.name = f"Home Assistant · {self.base_url}"

    async def reply(self, messages: Sequence[ChatMessage]) -> AsyncIterator[str]:
        if not self.token:
            raise VoicedeskError(ErrorCode.UNAUTHORIZED, f"Home Assistant needs an access token. {TOKEN_HELP}")
        if len(messages) <= 1:
            self.conversation_id = None  # a new conversation
        body = {
            "text": messages[-1].text,
            "language": self.language,
            "agent_id": self.agent_id,
            "conversation_id": self.conversation_id,
        }
        try:
            async with httpx.AsyncClient(timeout=TIMEOUT) as client:
                response = await client.post(
                    self.base_url + PROCESS_PATH,
                    json={key: value for key, value in body.items() if value},  # unset: Home Assistant's default
                    headers={"Authorization": f"Bearer {self.token}"},
                )
        except httpx.TimeoutException as exc:
            raise ConnectionFailed(
                f"Home Assistant at {self.base_url} did not answer within {TIMEOUT.read:g} s."
            ) from exc
        except httpx.HTTPError as exc:
            raise ConnectionFailed(
                f"Could not reach Home Assistant at {self.base_url} ({exc}). Is it running? Check the URL in the "
                "Agent settings."
            ) from exc
        speech = self._speech(response)
        if speech:
            yield speech

    def _speech(self, response: httpx.Response) -> str:
        where = f"Home Assistant at {self.base_url}"
        if response.status_code in (401, 403):
            raise VoicedeskError(ErrorCode.UNAUTHORIZED, f"{where} refused the access token. {TOKEN_HELP}")
        if response.status_code == 404:
            raise UsageError(
                f"{where} has no conversation API ({PROCESS_PATH} answered 404). Is this Home Assistant's address, "
                "and is Assist on (`conversation:` or `default_config:` in its configuration.yaml)?"
            )
        try:
            data = response.json()
        except ValueError:
            data = None
        data = data if isinstance(data, dict) else {}
        if response.status_code == 400 and self.agent_id and "agent" in str(data.get("message", "")):
            raise UsageError(
                f"{where} has no conversation agent {self.agent_id!r}. Leave Agent empty for Home Assistant's own, "
                "or copy an agent's id from Settings › Voice assistants."
            )
        if response.status_code != 200:
            detail = data.get("message") or response.text[:200]
            raise ConnectionFailed(f"{where} answered {response.status_code}: {detail}")
        try:
            self.conversation_id = data.get("conversation_id") or self.conversation_id
            return str(data["response"]["speech"]["plain"]["speech"]).strip()
        except (AttributeError, KeyError, TypeError) as exc:
            raise ConnectionFailed(f"{where} sent an answer without speech ({response.text[:200]}).") from exc
