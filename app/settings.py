"""The app's settings: one JSON file in the platformdirs config folder, read forgivingly, written atomically.

A settings file is something people edit by hand and programs crash halfway through writing, so loading
never fails: unreadable JSON gives the defaults (the bad file is kept next to it, renamed, so nothing is lost),
and a value of the wrong type or out of range falls back to that field's default. Either way ``load_settings``
returns a message for the window to show.

Secrets (the WebSocket bearer token, API keys) are not written here: they come from the environment
(``VOICEDESK_TOKEN``, ``OPENAI_API_KEY``) or live only for the session.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

SETTINGS_FILE = "settings.json"
ENGINE_KINDS = ("local", "websocket", "sagemaker")
SOURCE_KINDS = ("scripted", "openai", "bedrock")
COMPOSER_MODES = ("speak", "agent")
LOCAL_DEVICES = ("auto", "cpu", "cuda")


@dataclass
class EngineSettings:
    kind: str = "local"
    local_device: str = "auto"
    websocket_url: str = "ws://127.0.0.1:8080/invocations-bidirectional-stream"
    sagemaker_endpoint: str = ""
    sagemaker_region: str = ""
    sagemaker_profile: str = ""
    failover_to_local: bool = True
    """When a remote engine fails mid-reply, finish the reply on the local engine (if its model is here)."""


@dataclass
class VoiceSettings:
    voice: str = "af_heart"
    blend_with: str = ""
    """A second voice mixed in (empty: none)."""
    blend_weight: float = 0.3
    """Share of ``blend_with`` in the mix, 0..1."""
    speed: float = 1.0

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
    system_prompt: str = "You are a helpful voice assistant. Answer in a few short spoken sentences, without markdown."


@dataclass
class AppSettings:
    engine: EngineSettings = field(default_factory=EngineSettings)
    voice: VoiceSettings = field(default_factory=VoiceSettings)
    source: SourceSettings = field(default_factory=SourceSettings)
    composer_mode: str = "speak"
    output_device: str = ""
    """PortAudio output device name; empty: the system default."""
    window_geometry: str = ""
    """Qt's saveGeometry(), hex-encoded."""


def default_settings_path() -> Path:
    from platformdirs import user_config_dir

    return Path(user_config_dir("voicedesk", appauthor=False)) / SETTINGS_FILE


@dataclass(frozen=True, slots=True)
class LoadedSettings:
    settings: AppSettings
    message: str | None = None
    """Something the person should know (corrupt file, values reset); None when all went well."""


def load_settings(path: Path) -> LoadedSettings:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return LoadedSettings(AppSettings())
    except (OSError, UnicodeDecodeError) as exc:
        return LoadedSettings(AppSettings(), f"Could not read the settings in {path} ({exc}); using defaults.")
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError(f"the top level is a {type(data).__name__}, not an object")
    except ValueError as exc:
        kept = _keep_bad_file(path)
        where = f" The old file was kept as {kept.name}." if kept else ""
        return LoadedSettings(
            AppSettings(), f"The settings file {path} was damaged ({exc}); the defaults are in use.{where}"
        )
    settings = AppSettings()
    rejected: list[str] = []
    _fill(settings, data, "", rejected)
    message = None
    if rejected:
        message = f"Some settings in {path} were not valid and were reset: {', '.join(rejected)}."
    return LoadedSettings(settings, message)


def save_settings(settings: AppSettings, path: Path) -> None:
    """Writes atomically (temp file + rename), so a crash never leaves half a file behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = json.dumps(asdict(settings), indent=2, sort_keys=True) + "\n"
    fd, temp = tempfile.mkstemp(prefix=".settings-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(body)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


# ---- validation -------------------------------------------------------------------------------------

_CHOICES: dict[str, tuple[str, ...]] = {
    "engine.kind": ENGINE_KINDS,
    "engine.local_device": LOCAL_DEVICES,
    "source.kind": SOURCE_KINDS,
    "composer_mode": COMPOSER_MODES,
}
_RANGES: dict[str, tuple[float, float]] = {
    "voice.speed": (0.25, 4.0),
    "voice.blend_weight": (0.0, 1.0),
    "source.scripted_tokens_per_s": (0.5, 1000.0),
}


def _fill(target: Any, data: dict[str, Any], prefix: str, rejected: list[str]) -> None:
    for item in fields(target):
        if item.name not in data:
            continue
        name = f"{prefix}{item.name}"
        value = data[item.name]
        current = getattr(target, item.name)
        if is_dataclass(current):
            if isinstance(value, dict):
                _fill(current, value, f"{name}.", rejected)
            else:
                rejected.append(name)
            continue
        checked = _check(name, value, current)
        if checked is None:
            rejected.append(name)
        else:
            setattr(target, item.name, checked)


def _check(name: str, value: Any, default: Any) -> Any:
    """The value if it fits the field (type, choices, range), else None."""
    if isinstance(default, bool):
        return value if isinstance(value, bool) else None
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            return None
        low, high = _RANGES.get(name, (-math.inf, math.inf))
        return float(value) if low <= value <= high else None
    if isinstance(default, str):
        if not isinstance(value, str):
            return None
        choices = _CHOICES.get(name)
        return value if choices is None or value in choices else None
    return None


def _keep_bad_file(path: Path) -> Path | None:
    kept = path.with_name(f"{path.stem}.damaged-{time.strftime('%Y%m%d-%H%M%S')}{path.suffix}")
    try:
        os.replace(path, kept)
    except OSError:
        return None
    return kept
