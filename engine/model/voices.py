"""Kokoro voices: the catalogue, and voice specs as a person types them (``af_heart``, a ``.pt`` path, a blend
``af_heart:0.7,am_adam:0.3``), parsed without torch so specs are checked cheaply."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from voicedesk.engine.errors import VoiceError
from voicedesk.engine.model.languages import LANGUAGES as KOKORO_LANGUAGES

if TYPE_CHECKING:
    import torch

DEFAULT_VOICE = "af_heart"
"""The voice every path uses when none is given (the app, the CLI, the server, the AWS sample's default)."""

VOICE_PACK_SHAPE = (510, 1, 256)
"""One 256-d style vector per phoneme count (1..510); KPipeline indexes ``pack[len(phonemes) - 1]``."""

LANGUAGES = {code: language.name for code, language in KOKORO_LANGUAGES.items()}
"""Kokoro's language codes and their names (``engine.model.languages`` says what each needs)."""

# hexgrad/Kokoro-82M VOICES.md (v1.0): every voice pack in the repository's voices/ folder.
KNOWN_VOICES: tuple[str, ...] = (
    # American English
    "af_heart", "af_alloy", "af_aoede", "af_bella", "af_jessica", "af_kore", "af_nicole", "af_nova",
    "af_river", "af_sarah", "af_sky", "am_adam", "am_echo", "am_eric", "am_fenrir", "am_liam",
    "am_michael", "am_onyx", "am_puck", "am_santa",
    # British English
    "bf_alice", "bf_emma", "bf_isabella", "bf_lily", "bm_daniel", "bm_fable", "bm_george", "bm_lewis",
    # Japanese
    "jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo",
    # Mandarin Chinese
    "zf_xiaobei", "zf_xiaoni", "zf_xiaoxiao", "zf_xiaoyi", "zm_yunjian", "zm_yunxi", "zm_yunxia", "zm_yunyang",
    # Spanish, French, Hindi, Italian, Brazilian Portuguese
    "ef_dora", "em_alex", "em_santa", "ff_siwis", "hf_alpha", "hf_beta", "hm_omega", "hm_psi",
    "if_sara", "im_nicola", "pf_dora", "pm_alex", "pm_santa",
)  # fmt: skip

ENGLISH_VOICES: tuple[str, ...] = tuple(v for v in KNOWN_VOICES if v[0] in "ab")

DEFAULT_LANGUAGE = "a"

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_KOKORO_STYLE_NAME = re.compile(r"^([a-z])[fm]_")


@dataclass(frozen=True, slots=True)
class VoiceInfo:
    name: str
    language: str
    downloaded: bool
    known: bool
    """One of the Kokoro-82M v1.0 voices (False: a custom pack found in the local cache)."""
    language_ready: bool = True
    """Its language's G2P is set up here; a voice is usable when this and ``downloaded`` hold."""

    @property
    def usable(self) -> bool:
        return self.downloaded and self.language_ready


@dataclass(frozen=True, slots=True)
class VoicePart:
    source: str
    """A voice name, or an absolute path to a ``.pt`` voice pack."""
    weight: float

    @property
    def is_path(self) -> bool:
        return is_path_spec(self.source)


def is_path_spec(source: str) -> bool:
    return source.endswith(".pt") or "/" in source or "\\" in source


def language_of(source: str) -> str:
    """Kokoro's language code from a voice name (``bf_emma`` → ``b``); paths use their file name."""
    stem = Path(source).stem if is_path_spec(source) else source
    match = _KOKORO_STYLE_NAME.match(stem)
    if match and match.group(1) in LANGUAGES:
        return match.group(1)
    return DEFAULT_LANGUAGE


MAX_BLEND_WEIGHT = 1000.0
"""Weights are relative; bounding them keeps their sum finite (``a:1e308,b:1e308`` would overflow)."""


def parse_voice_spec(spec: str) -> tuple[VoicePart, ...]:
    """Splits a spec into parts with weights summing to 1. Raises ``VoiceError`` on malformed input."""
    if not isinstance(spec, str) or not spec.strip():
        raise VoiceError("No voice given: name a voice such as af_heart, a .pt file, or a blend a:0.7,b:0.3.")
    raw_parts = [p.strip() for p in spec.split(",")]
    if any(not p for p in raw_parts):
        raise VoiceError(f"Voice spec {_short(spec)} has an empty part; write blends as af_heart:0.7,am_adam:0.3.")
    parsed: list[tuple[str, float | None]] = [_split_weight(p, spec) for p in raw_parts]
    given = [w for _, w in parsed if w is not None]
    if given and len(given) != len(parsed):
        raise VoiceError(
            f"Voice spec {_short(spec)} gives weights to some voices only; give every voice a weight "
            "(af_heart:0.7,am_adam:0.3) or none (af_heart,am_adam for equal parts)."
        )
    weights = given if given else [1.0] * len(parsed)
    total = math.fsum(weights)
    if total <= 0:
        raise VoiceError(f"Voice spec {_short(spec)}: the weights add up to 0; they must add up to more than 0.")
    parts: dict[str, float] = {}
    for (source, _), weight in zip(parsed, weights, strict=True):
        key = str(Path(source).expanduser().resolve()) if is_path_spec(source) else source
        parts[key] = parts.get(key, 0.0) + weight / total
    return tuple(VoicePart(source, weight) for source, weight in parts.items())


def format_voice_spec(parts: tuple[VoicePart, ...]) -> str:
    """The canonical spelling of a parsed spec (a single voice has no weight)."""
    if len(parts) == 1:
        return parts[0].source
    return ",".join(f"{p.source}:{p.weight:.6g}" for p in parts)


def _split_weight(part: str, spec: str) -> tuple[str, float | None]:
    # rpartition, so a Windows drive letter ("C:\\voices\\x.pt") is not taken for a weight.
    source, sep, tail = part.rpartition(":")
    if sep:
        try:
            weight = float(tail)
        except ValueError:
            source, weight = part, None
        else:
            if not math.isfinite(weight) or not 0 <= weight <= MAX_BLEND_WEIGHT:
                raise VoiceError(
                    f"Voice spec {_short(spec)}: weight {_short(tail)} for {_short(source)} must be a number from 0 "
                    f"to {MAX_BLEND_WEIGHT:g}."
                )
    else:
        source, weight = part, None
    source = source.strip()
    if not is_path_spec(source) and not _NAME.match(source):
        raise VoiceError(
            f"{_short(source)} is not a voice name: names look like af_heart; a voice file must end in .pt."
        )
    return source, weight


def _short(text: str, limit: int = 60) -> str:
    """A client's text in a message: quoted, and cut when long (an error must not echo a huge value back)."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"… ({len(text):,} characters)"


def check_voice_pack(pack: object, origin: str) -> torch.Tensor:
    """Returns the pack as a float32 CPU tensor, or raises ``VoiceError`` saying what is wrong with it."""
    import torch

    if not isinstance(pack, torch.Tensor):
        raise VoiceError(
            f"{origin} does not hold a voice pack: expected a tensor of shape {list(VOICE_PACK_SHAPE)}, "
            f"found {type(pack).__name__}."
        )
    if tuple(pack.shape) != VOICE_PACK_SHAPE:
        hint = " (add the middle axis: pack.unsqueeze(1))" if tuple(pack.shape) == (510, 256) else ""
        raise VoiceError(
            f"{origin} has shape {list(pack.shape)}; a Kokoro voice pack must be {list(VOICE_PACK_SHAPE)}{hint}."
        )
    if not pack.is_floating_point():
        raise VoiceError(f"{origin} holds {pack.dtype} values; a voice pack holds floating-point numbers.")
    pack = pack.detach().to(device="cpu", dtype=torch.float32)
    if not bool(torch.isfinite(pack).all()):
        raise VoiceError(f"{origin} contains NaN or infinite values; it is not a usable voice pack.")
    return pack.contiguous()
