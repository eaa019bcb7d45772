"""The voices a Wyoming server offers, and which one a request gets.

The catalogue is fixed at start (Home Assistant gives ``describe`` only a moment). ``probe_voices`` tries each
candidate on one session, which works for every engine without a voice-listing route the SageMaker contract lacks."""

from __future__ import annotations

import asyncio
import difflib
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from voicedesk.engine.api import Engine
from voicedesk.engine.errors import ConnectionFailed, VoicedeskError, VoiceError
from voicedesk.engine.events import Closed, Error, Flushed, SessionConfig
from voicedesk.engine.model.voices import LANGUAGES, is_path_spec, language_of, parse_voice_spec

log = logging.getLogger(__name__)

WYOMING_LANGUAGES: dict[str, str] = {
    "a": "en_US",
    "b": "en_GB",
    "e": "es_ES",
    "f": "fr_FR",
    "h": "hi_IN",
    "i": "it_IT",
    "j": "ja_JP",
    "p": "pt_BR",
    "z": "zh_CN",
}
"""Kokoro's language codes → the language tags Wyoming servers advertise (Home Assistant groups voices by them)."""

PROBE_PREFIX = "wyoming-voice-probe-"
PROBE_TIMEOUT_S = 120.0


@dataclass(frozen=True, slots=True)
class CatalogVoice:
    name: str
    """What a client asks for: a voice name, or the server's default spec (a blend or a .pt path)."""
    languages: tuple[str, ...]
    description: str


def wyoming_language(spec: str) -> str:
    """The Wyoming language tag of a voice spec (a blend speaks its first part's language)."""
    return WYOMING_LANGUAGES[language_of(parse_voice_spec(spec)[0].source)]


def describe_voice(name: str) -> str:
    """``af_heart`` → ``af_heart (American English, female)``; other names keep only their language."""
    code = language_of(name)
    gender = {"f": "female", "m": "male"}.get(name[1:2], "") if name[:1] == code and name[2:3] == "_" else ""
    detail = LANGUAGES[code] + (f", {gender}" if gender else "")
    return f"{name} ({detail})"


def _normalize_tag(tag: str) -> str:
    return tag.strip().replace("-", "_").lower()


def _primary(tag: str) -> str:
    return _normalize_tag(tag).split("_")[0]


@dataclass(frozen=True, slots=True)
class VoiceCatalog:
    voices: tuple[CatalogVoice, ...]
    default: str
    """The spec used when a request names no voice (a name, a blend or a .pt path: the server's --voice)."""

    @classmethod
    def build(cls, names: Sequence[str], default: str) -> VoiceCatalog:
        """The default first (as its own entry when it is a blend or a path), then every usable name."""
        voices: list[CatalogVoice] = []
        if default not in names:
            kind = "blend" if len(parse_voice_spec(default)) > 1 else "voice file" if is_path_spec(default) else "voice"
            voices.append(CatalogVoice(default, (wyoming_language(default),), f"server default {kind}: {default}"))
        voices += [CatalogVoice(n, (wyoming_language(n),), describe_voice(n)) for n in names]
        return cls(tuple(voices), default)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.voices)

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(lang for v in self.voices for lang in v.languages))

    def resolve(self, name: str | None = None, language: str | None = None) -> str:
        """The named voice, else one of the language, else the default; raises ``VoiceError`` naming what there is."""
        if name:
            if name in self.names:
                return name
            close = difflib.get_close_matches(name, self.names, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise VoiceError(
                f"This server has no voice {name!r}.{hint} Its voices: {', '.join(self.names)}. "
                "Pick one of them (Home Assistant lists them in the Assist pipeline's voice menu)."
            )
        if not language:
            return self.default
        wanted = _normalize_tag(language)
        primary = _primary(wanted)
        exact = [v.name for v in self.voices if wanted in map(_normalize_tag, v.languages)]
        same_language = [v.name for v in self.voices if primary in (_primary(t) for t in v.languages)]
        for fits in (exact, same_language):
            if fits:
                return self.default if self.default in fits else fits[0]
        raise VoiceError(f"No voice on this server speaks {language!r}; its languages are {', '.join(self.languages)}.")


async def probe_voices(
    engine: Engine,
    default: str,
    candidates: Sequence[str],
    speed: float = 1.0,
    timeout_s: float = PROBE_TIMEOUT_S,
) -> list[str]:
    """The candidates the engine can speak with, in order; raises when the default voice is unusable or unreachable."""
    try:
        session = await engine.open_session(SessionConfig(voice=default, speed=speed))
    except VoiceError as exc:
        raise VoiceError(f"The default voice {default!r} cannot be used: {exc}") from None
    reason = "no reason given"
    try:
        # Probe 0 is the default (sent with the session's opening config): its error must not be blamed on
        # the first candidate. Everything is sent at once: one round trip, even through SageMaker.
        names = [default, *candidates]
        for index, name in enumerate(names):
            if index:
                await session.configure(voice=name)
            await session.flush(f"{PROBE_PREFIX}{index}")
        usable: list[str] = []
        index = 0
        refusal: Error | None = None
        async with asyncio.timeout(timeout_s):
            async for event in session.events():
                match event:
                    case Error(fatal=True):
                        raise VoicedeskError(event.code, event.message)
                    case Error():
                        refusal = event
                    case Flushed(request_id=rid) if rid == f"{PROBE_PREFIX}{index}":
                        if index == 0 and refusal is not None:
                            raise VoicedeskError(
                                refusal.code, f"The default voice {default!r} cannot be used: {refusal.message}"
                            )
                        if refusal is None and index:
                            usable.append(names[index])
                        elif refusal is not None:
                            log.info("voice %s is not usable here: %s", names[index], refusal.message)
                        refusal = None
                        index += 1
                        if index == len(names):
                            return usable
                    case Closed(reason=reason):
                        break
        raise ConnectionFailed(f"The engine ended the session while its voices were being listed ({reason}).")
    except TimeoutError:
        raise ConnectionFailed(
            f"The engine did not confirm its voices within {timeout_s:g} s; is it overloaded?"
        ) from None
    finally:
        await session.aclose()
