"""An OpenAI-compatible chat server as the agent (llama.cpp, Ollama, vLLM, LM Studio…): works offline."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence

from voicedesk.app.sources import ChatMessage
from voicedesk.engine.errors import ConnectionFailed, ErrorCode, UsageError, VoicedeskError


class OpenAICompatibleSource:
    def __init__(self, base_url: str, model: str, system_prompt: str = "", api_key: str | None = None) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise UsageError(
                f"The server URL {base_url!r} must start with http:// or https:// "
                "(e.g. http://127.0.0.1:11434/v1 for Ollama, http://127.0.0.1:8080/v1 for llama.cpp)."
            )
        if not model.strip():
            raise UsageError("Name the model to ask (e.g. llama3.2 for Ollama).")
        self.base_url = base_url.rstrip("/")
        self.model = model.strip()
        self.system_prompt = system_prompt
        # Local servers ignore the key, but the client insists on one.
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
        self.name = f"{self.model} · {self.base_url}"

    async def reply(self, messages: Sequence[ChatMessage]) -> AsyncIterator[str]:
        import openai

        # The client's default timeouts (5 s to connect, 10 min per request) suit a local model.
        client = openai.AsyncOpenAI(base_url=self.base_url, api_key=self.api_key, max_retries=0)
        wire = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        wire += [{"role": m.role, "content": m.text} for m in messages]
        try:
            stream = await client.chat.completions.create(model=self.model, messages=wire, stream=True)
            try:
                async for chunk in stream:
                    for choice in chunk.choices:
                        if choice.delta is not None and choice.delta.content:
                            yield choice.delta.content
            finally:
                await stream.close()  # an interrupt stops generation on the server, too
        except openai.APIConnectionError as exc:
            raise ConnectionFailed(
                f"Could not reach the chat server at {self.base_url} ({exc.__cause__ or exc}). "
                "Is llama.cpp, Ollama or vLLM running there? Check the URL in the Agent settings."
            ) from exc
        except openai.NotFoundError as exc:
            raise UsageError(
                f"The chat server at {self.base_url} has no model {self.model!r} or no chat endpoint "
                f"({_detail(exc)}). Check the model name (Ollama: `ollama list`)."
            ) from exc
        except openai.AuthenticationError as exc:
            raise VoicedeskError(
                ErrorCode.UNAUTHORIZED,
                f"The chat server at {self.base_url} refused the API key ({_detail(exc)}); set OPENAI_API_KEY.",
            ) from exc
        except openai.APIStatusError as exc:
            raise ConnectionFailed(
                f"The chat server at {self.base_url} answered {exc.status_code}: {_detail(exc)}"
            ) from exc
        finally:
            await client.close()


def _detail(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error")
        message = inner.get("message") if isinstance(inner, dict) else body.get("message")
        if message:
            return str(message)
    return str(getattr(exc, "message", exc))
