"""From settings to the things they describe: the engine spec, the agent source, the audio player."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from voicedesk.app.settings import AppSettings
from voicedesk.app.sources.bedrock import BedrockSource
from voicedesk.app.sources.home_assistant import HomeAssistantSource, assist_language
from voicedesk.app.sources.openai_compat import OpenAICompatibleSource
from voicedesk.app.sources.scripted import ScriptedSource
from voicedesk.app.urls import AGENT_SCHEMES, check_url
from voicedesk.engine.engine_spec import EngineSpec


def default_player_factory(device: str | None, on_event: Callable, loop: asyncio.AbstractEventLoop) -> object:
    from voicedesk.app.player import AudioPlayer

    return AudioPlayer(device=device or None, on_event=on_event, loop=loop)


def engine_spec(settings: AppSettings, token: str = "", kind: str | None = None) -> EngineSpec:
    engine = settings.engine
    kind = kind or engine.kind
    if kind == "websocket":
        return EngineSpec("websocket", target=engine.websocket_url, token=token or None)
    if kind == "sagemaker":
        return EngineSpec(
            "sagemaker",
            target=engine.sagemaker_endpoint,
            region=engine.sagemaker_region or None,
            profile=engine.sagemaker_profile or None,
        )
    return EngineSpec("local", device=None if engine.local_device == "auto" else engine.local_device)


def make_source(settings: AppSettings, secret: str | None = None):
    """The agent the settings describe. ``secret``: the API key (instead of OPENAI_API_KEY, e.g. when the person
    chose not to send theirs over an unencrypted connection) or Home Assistant's token."""
    source = settings.source
    if source.kind == "openai":
        url = check_url(source.openai_base_url, AGENT_SCHEMES, "chat server URL", "http://127.0.0.1:11434/v1 (Ollama)")
        return OpenAICompatibleSource(url, source.openai_model, source.system_prompt, api_key=secret)
    if source.kind == "homeassistant":
        url = check_url(source.ha_url, AGENT_SCHEMES, "Home Assistant URL", "http://homeassistant.local:8123")
        language = source.ha_language.strip() or assist_language(settings.voice.voice)
        return HomeAssistantSource(url, secret, language, source.ha_agent_id)
    if source.kind == "bedrock":
        return BedrockSource(
            source.bedrock_model_id, source.bedrock_region, source.bedrock_profile, source.system_prompt
        )
    return ScriptedSource(source.scripted_tokens_per_s)


async def whole(text: str) -> AsyncIterator[str]:
    yield text
