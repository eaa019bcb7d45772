"""The app's settings and its lexicon: JSON files in the platformdirs config folder, read forgivingly, written
atomically.

Loading never fails (people edit the file by hand, programs crash mid-write): bad JSON or a bad value gives the default,
and the file is kept aside as ``settings.damaged-<time>.json``. Secrets are never written here: they come from the
environment or live only for the session."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

from voicedesk.app.json_file import keep_aside, read_json, write_json
from voicedesk.app.phrases import MAX_PHRASES, Phrase, default_phrases, phrase_problem
from voicedesk.app.urls import AGENT_SCHEMES, ENGINE_SCHEMES, url_problem
from voicedesk.app.voice.voice_input import VoiceSettings as VoiceInputSettings
from voicedesk.engine.events import DEFAULT_MAX_BUFFER_DELAY_MS
from voicedesk.engine.model.voices import DEFAULT_VOICE
from voicedesk.engine.protocol import BIDI_PATH
from voicedesk.engine.request_fields import MAX_BUFFER_DELAY_MS, MAX_SPEED, MIN_SPEED
from voicedesk.engine.text.frontend.lexicon import EMPTY_LEXICON, Lexicon, LexiconError, load_lexicon_file

SETTINGS_FILE = "settings.json"
LEXICON_FILE = "lexicon.json"
"""The app's pronunciation lexicon, next to the settings file, in the form ``voicedesk serve --lexicon`` takes."""
ENGINE_KINDS = ("local", "websocket", "sagemaker")
SOURCE_KINDS = ("scripted", "openai", "bedrock", "homeassistant")
COMPOSER_MODES = ("speak", "agent")
LOCAL_DEVICES = ("auto", "cpu", "cuda")
MAX_FILE_BYTES = 1 << 20
"""A settings file is a few kilobytes; anything over a megabyte is not one."""
MAX_TEXT_CHARS = 10_000


@dataclass
class EngineSettings:
    kind: str = "local"
    local_device: str = "auto"
    websocket_url: str = f"ws://127.0.0.1:8080{BIDI_PATH}"
    sagemaker_endpoint: str = ""
    sagemaker_region: str = ""
    sagemaker_profile: str = ""
    failover_to_local: bool = True
    """When a remote engine fails mid-reply, finish the reply on the local engine (if its model is here)."""
    health_interval_s: float = 15.0
    """How often a remote engine is checked in the background (and reconnected when it is back)."""


@dataclass
class VoiceSettings:
    voice: str = DEFAULT_VOICE
    blend_with: str = ""
    """A second voice mixed in (empty: none)."""
    blend_weight: float = 0.3
    """Share of ``blend_with`` in the mix, 0..1."""
    speed: float = 1.0
    max_buffer_delay_ms: float = float(DEFAULT_MAX_BUFFER_DELAY_MS)
    """How long an agent's text without a sentence end waits for more before it is spoken anyway (release on
    quiet; a finished sentence never waits more than 250 ms)."""

    def spec(self) -> str:
        """The engine's voice spec: a name, or a weighted blend ``a:0.7,b:0.3``."""
        weight = min(max(self.blend_weight, 0.0), 1.0)
        if not self.blend_with or self.blend_with == self.voice or weight <= 0.0:
            return self.voice
        if weight >= 1.0:
            return self.blend_with
        return f"{self.voice}:{1 - weight:.2f},{self.blend_with}:{weight:.2f}"


@dataclass
class SourceSettings:
    kind: str = "scripted"
    scripted_tokens_per_s: float = 20.0
    openai_base_url: str = "http://127.0.0.1:11434/v1"
    openai_model: str = "llama3.2"
    bedrock_model_id: str = "anthropic.claude-3-haiku-20240307-v1:0"
    bedrock_region: str = "us-east-1"
    bedrock_profile: str = ""
    ha_url: str = "http://homeassistant.local:8123"
    ha_language: str = ""
    """The language Assist is asked in; empty: the voice's."""
    ha_agent_id: str = ""
    """One of Home Assistant's conversation agents; empty: its own."""
    system_prompt: str = "You are a helpful voice assistant. Answer in a few short spoken sentences, without markdown."


@dataclass
class DesktopSettings:
    global_shortcuts: bool = True
    """Grab the stop and phrase shortcuts system-wide (X11 only; Wayland does not let a program do it)."""
    stop_shortcut: str = "Ctrl+Alt+S"
    talk_shortcut: str = "Ctrl+Alt+T"
    """Starts listening from anywhere; pressed again, ends what you say (a global shortcut sees no key release)."""
    tray_icon: bool = True


@dataclass
class AppSettings:
    engine: EngineSettings = field(default_factory=EngineSettings)
    voice: VoiceSettings = field(default_factory=VoiceSettings)
    source: SourceSettings = field(default_factory=SourceSettings)
    desktop: DesktopSettings = field(default_factory=DesktopSettings)
    voice_input: VoiceInputSettings = field(default_factory=VoiceInputSettings)
    """The microphone and speech-to-text (checked by ``VoiceInputSettings.from_dict``)."""
    phrases: list[Phrase] = field(default_factory=default_phrases)
    composer_mode: str = "speak"
    output_device: str = ""
    """The output device: a PortAudio device name, ``pulse-sink:NAME`` for a PulseAudio sink by name, or empty
    for the system default (``app.outputs``)."""
    window_geometry: str = ""
    """Qt's saveGeometry(), hex-encoded."""
    splitter_state: str = ""
    """The conversation / latency panel split, hex-encoded."""


def default_settings_path() -> Path:
    from platformdirs import user_config_dir

    return Path(user_config_dir("voicedesk", appauthor=False)) / SETTINGS_FILE


def lexicon_path(settings_path: Path) -> Path:
    """Where the app keeps its pronunciation lexicon: ``lexicon.json`` beside the settings file (so the platformdirs
    config folder, or a test's own folder)."""
    return settings_path.with_name(LEXICON_FILE)


@dataclass(frozen=True, slots=True)
class LoadedLexicon:
    lexicon: Lexicon
    message: str | None = None  # a damaged file set aside


def load_app_lexicon(path: Path) -> LoadedLexicon:
    if not path.exists():
        return LoadedLexicon(EMPTY_LEXICON)
    try:
        return LoadedLexicon(load_lexicon_file(path))
    except LexiconError as exc:
        kept = keep_aside(path)
        where = f" The file is kept as {kept.name}." if kept else ""
        return LoadedLexicon(EMPTY_LEXICON, f"The pronunciations could not be used: {exc.message}{where}")


def save_app_lexicon(lexicon: Lexicon, path: Path) -> None:
    write_json(path, lexicon.to_json(), indent=2)


@dataclass(frozen=True, slots=True)
class LoadedSettings:
    settings: AppSettings
    message: str | None = None
    """Something the person should know (corrupt file, values reset); None when all went well."""


def load_settings(path: Path) -> LoadedSettings:
    """Never raises: whatever the file holds, the window opens (see the module's docstring)."""
    try:
        data = read_json(path, MAX_FILE_BYTES)
        if not isinstance(data, dict):
            raise ValueError(f"the top level is a {type(data).__name__}, not an object")
    except FileNotFoundError:
        return LoadedSettings(AppSettings())
    except OSError as exc:
        return LoadedSettings(AppSettings(), f"Could not read the settings in {path} ({exc}); using defaults.")
    except ValueError as exc:
        kept = keep_aside(path)
        where = f" The old file was kept as {kept.name}." if kept else ""
        return LoadedSettings(
            AppSettings(), f"The settings file {path} was damaged ({_short(str(exc))}); the defaults are in use.{where}"
        )
    settings = AppSettings()
    rejected: list[str] = []
    _fill(settings, data, "", rejected)
    message = None
    if rejected:
        kept = keep_aside(path, move=False)
        where = f" The file as it was is kept as {kept.name}." if kept else ""
        message = f"Some settings in {path} were not valid and were reset: {', '.join(rejected)}.{where}"
    return LoadedSettings(settings, message)


def save_settings(settings: AppSettings, path: Path) -> None:
    write_json(path, asdict(settings) | {"voice_input": settings.voice_input.to_dict()}, indent=2, sort_keys=True)


# ---- validation -------------------------------------------------------------------------------------

_CHOICES: dict[str, tuple[str, ...]] = {
    "engine.kind": ENGINE_KINDS,
    "engine.local_device": LOCAL_DEVICES,
    "source.kind": SOURCE_KINDS,
    "composer_mode": COMPOSER_MODES,
}
_RANGES: dict[str, tuple[float, float]] = {
    "voice.speed": (MIN_SPEED, MAX_SPEED),
    "voice.max_buffer_delay_ms": (0.0, float(MAX_BUFFER_DELAY_MS)),
    "voice.blend_weight": (0.0, 1.0),
    "source.scripted_tokens_per_s": (0.5, 1000.0),
    "engine.health_interval_s": (2.0, 3600.0),
}


_URLS: dict[str, tuple[str, ...]] = {
    "engine.websocket_url": ENGINE_SCHEMES,
    "source.openai_base_url": AGENT_SCHEMES,
    "source.ha_url": AGENT_SCHEMES,
}


def _fill(target: Any, data: dict[str, Any], prefix: str, rejected: list[str]) -> None:
    for item in fields(target):
        if item.name not in data:
            continue
        name = f"{prefix}{item.name}"
        value = data[item.name]
        current = getattr(target, item.name)
        try:
            if name == "voice_input" and isinstance(value, dict):
                target.voice_input = VoiceInputSettings.from_dict(value, rejected)
                continue
            if is_dataclass(current):
                if isinstance(value, dict):
                    _fill(current, value, f"{name}.", rejected)
                else:
                    rejected.append(name)
                continue
            if name == "phrases":
                setattr(target, item.name, _phrases(value, rejected))
                continue
            checked = _check(name, value, current)
        except Exception:  # a value no check foresaw must reset that field, never stop the app
            checked = None
        if checked is None:
            rejected.append(name)
        else:
            setattr(target, item.name, checked)


def _check(name: str, value: Any, default: Any) -> Any:
    """The value if it fits the field (type, choices, range, URL), else None."""
    if isinstance(default, bool):
        return value if isinstance(value, bool) else None
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        try:
            number = float(value)  # a 400-digit integer overflows here
        except OverflowError:
            return None
        if not math.isfinite(number):
            return None
        low, high = _RANGES.get(name, (-math.inf, math.inf))
        return number if low <= number <= high else None
    if isinstance(default, str):
        if not isinstance(value, str) or len(value) > MAX_TEXT_CHARS or "\0" in value:
            return None
        choices = _CHOICES.get(name)
        if choices is not None and value not in choices:
            return None
        schemes = _URLS.get(name)
        if schemes is not None and value.strip() and url_problem(value, schemes) is not None:
            return None
        return value
    return None


def _phrases(value: Any, rejected: list[str]) -> list[Phrase]:
    if not isinstance(value, list):
        rejected.append("phrases")
        return default_phrases()
    phrases: list[Phrase] = []
    for number, item in enumerate(value[:MAX_PHRASES], start=1):
        phrase = Phrase()
        problems: list[str] = []
        if isinstance(item, dict):
            _fill(phrase, item, "", problems)
        if not isinstance(item, dict) or problems or phrase_problem(phrase) is not None:
            rejected.append(f"phrase {number}")
            continue
        phrases.append(phrase)
    if len(value) > MAX_PHRASES:
        rejected.append(f"phrases after the first {MAX_PHRASES}")
    return phrases


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
