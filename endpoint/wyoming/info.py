"""The ``info`` answer to ``describe``: one TTS program, its voices and languages, with
``supports_synthesize_streaming`` so Home Assistant streams an LLM's reply into it."""

from __future__ import annotations

from importlib import metadata

from wyoming.info import Attribution, Info, TtsProgram, TtsVoice

from voicedesk.endpoint.wyoming.catalog import VoiceCatalog

PROGRAM_NAME = "voicedesk"
KOKORO = Attribution(name="hexgrad (Kokoro-82M)", url="https://huggingface.co/hexgrad/Kokoro-82M")


def voicedesk_version() -> str | None:
    try:
        return metadata.version("voicedesk")
    except metadata.PackageNotFoundError:
        return None


def build_info(catalog: VoiceCatalog, engine_description: str, version: str | None = None) -> Info:
    voices = [
        TtsVoice(
            name=voice.name,
            attribution=KOKORO,
            installed=True,
            description=voice.description,
            version=None,
            languages=list(voice.languages),
        )
        for voice in catalog.voices
    ]
    program = TtsProgram(
        name=PROGRAM_NAME,
        attribution=KOKORO,
        installed=True,
        description=f"Kokoro-82M streaming speech by voicedesk ({engine_description} engine)",
        version=version or voicedesk_version(),
        voices=voices,
        supports_synthesize_streaming=True,
    )
    return Info(tts=[program])
