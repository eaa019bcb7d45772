"""Parsing and checking HTTP speech requests (``/invocations`` and OpenAI's ``/v1/audio/speech``). Pure.

Both routes end up as one ``SpeechRequest``; every refusal is a ``VoicedeskError`` whose code maps to an HTTP
status (``http_status``) and whose message says what was wrong and what to send instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from engine.errors import ErrorCode, VoicedeskError
from engine.session import MAX_SPEED, MIN_SPEED, SessionLimits, validate_speed

AudioFormat = Literal["wav", "pcm"]
Transport = Literal["binary", "sse"]
SseDialect = Literal["voicedesk", "openai"]

AUDIO_FORMATS: tuple[str, ...] = ("wav", "pcm")
TRANSPORTS: tuple[str, ...] = ("binary", "sse")
DEFAULT_VOICE = "af_heart"

OPENAI_VOICES: dict[str, str] = {
    "alloy": "af_alloy",
    "ash": "am_adam",
    "ballad": "bm_george",
    "coral": "af_heart",
    "echo": "am_echo",
    "fable": "bm_fable",
    "nova": "af_nova",
    "onyx": "am_onyx",
    "sage": "af_sarah",
    "shimmer": "af_bella",
    "verse": "am_michael",
}
"""OpenAI voice names → the Kokoro voice used for them (only when the name is not itself a voice here)."""

_STATUS: dict[str, int] = {
    ErrorCode.BAD_JSON: 400,
    ErrorCode.BAD_MESSAGE: 400,
    ErrorCode.UNKNOWN_TYPE: 400,
    ErrorCode.UNKNOWN_VOICE: 400,
    ErrorCode.BAD_SPEED: 400,
    ErrorCode.EMPTY_TEXT: 400,
    ErrorCode.TEXT_TOO_LONG: 413,
    ErrorCode.FRAME_TOO_LARGE: 413,
    ErrorCode.BUFFER_FULL: 413,
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.TOO_MANY_SESSIONS: 429,
    ErrorCode.NOT_READY: 503,
    ErrorCode.SESSION_CLOSING: 503,
    ErrorCode.WEIGHTS_MISSING: 503,
    ErrorCode.DEVICE_UNAVAILABLE: 503,
}


def http_status(code: str) -> int:
    return _STATUS.get(code, 500)


@dataclass(frozen=True, slots=True)
class SpeechRequest:
    text: str
    voice: str
    speed: float = 1.0
    audio_format: AudioFormat = "wav"
    transport: Transport = "binary"
    request_id: str | None = None
    sse_dialect: SseDialect = "voicedesk"


def _bad(code: ErrorCode, message: str) -> VoicedeskError:
    return VoicedeskError(code, message)


def parse_json_object(body: bytes) -> dict[str, object]:
    try:
        message = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = f" ({exc.msg} at position {exc.pos})" if isinstance(exc, json.JSONDecodeError) else ""
        raise _bad(ErrorCode.BAD_JSON, f"The request body is not valid JSON{where}.") from None
    if not isinstance(message, dict):
        raise _bad(ErrorCode.BAD_MESSAGE, "The request body must be a JSON object.")
    return message


def _text(message: dict[str, object], key: str, limits: SessionLimits) -> str:
    text = message.get(key)
    if not isinstance(text, str):
        raise _bad(ErrorCode.BAD_MESSAGE, f"'{key}' is required and must be a string (the text to speak).")
    if not text.strip():
        raise _bad(ErrorCode.EMPTY_TEXT, f"'{key}' is empty; give some text to speak.")
    if len(text) > limits.max_message_chars:
        raise _bad(
            ErrorCode.TEXT_TOO_LONG,
            f"'{key}' has {len(text):,} characters, over the limit of {limits.max_message_chars:,}; "
            "split it into several requests, or stream it over the WebSocket.",
        )
    return text


def _string(message: dict[str, object], key: str, default: str | None) -> str | None:
    value = message.get(key)
    if value is None:
        return default
    if not isinstance(value, str) or not value.strip():
        raise _bad(ErrorCode.BAD_MESSAGE, f"'{key}' must be a non-empty string; got {value!r}.")
    return value.strip()


def _speed(message: dict[str, object]) -> float:
    raw = message.get("speed")
    if raw is None:
        return 1.0
    speed = validate_speed(raw)
    if speed is None:
        raise _bad(ErrorCode.BAD_SPEED, f"'speed' must be a number from {MIN_SPEED} to {MAX_SPEED}; got {raw!r}.")
    return speed


def _choice(message: dict[str, object], key: str, allowed: tuple[str, ...], default: str) -> str:
    value = _string(message, key, default)
    assert value is not None
    if value.lower() not in allowed:
        raise _bad(
            ErrorCode.BAD_MESSAGE,
            f"'{key}' {value!r} is not supported here; use one of: {', '.join(allowed)}.",
        )
    return value.lower()


def parse_invocation(body: bytes, limits: SessionLimits) -> SpeechRequest:
    """``POST /invocations``: the AWS Kokoro sample's request (``text``, ``voice``, ``speed``, ``format``,
    ``transport``, ``request_id``)."""
    message = parse_json_object(body)
    request_id = message.get("request_id")
    return SpeechRequest(
        text=_text(message, "text", limits),
        voice=_string(message, "voice", DEFAULT_VOICE) or DEFAULT_VOICE,
        speed=_speed(message),
        audio_format=_choice(message, "format", AUDIO_FORMATS, "wav"),  # type: ignore[arg-type]
        transport=_choice(message, "transport", TRANSPORTS, "binary"),  # type: ignore[arg-type]
        request_id=None if request_id is None else str(request_id),
    )


def parse_openai_speech(body: bytes, limits: SessionLimits) -> SpeechRequest:
    """``POST /v1/audio/speech`` as OpenAI defines it: ``model``, ``input``, ``voice``, ``response_format``,
    ``speed``, ``stream_format`` (``audio`` or ``sse``). ``model`` and ``instructions`` are accepted and ignored:
    this server has one model."""
    message = parse_json_object(body)
    _string(message, "model", None)
    stream_format = _choice(message, "stream_format", ("audio", "sse"), "audio")
    return SpeechRequest(
        text=_text(message, "input", limits),
        voice=_string(message, "voice", DEFAULT_VOICE) or DEFAULT_VOICE,
        speed=_speed(message),
        # OpenAI's default is mp3, which this server does not make; WAV is the playable file it can make.
        audio_format=_choice(message, "response_format", AUDIO_FORMATS, "wav"),  # type: ignore[arg-type]
        transport="sse" if stream_format == "sse" else "binary",
        sse_dialect="openai",
    )
