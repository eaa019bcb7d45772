"""Parsing and checking HTTP speech requests (``/invocations`` and OpenAI's ``/v1/audio/speech``). Pure.

Both routes end up as one ``SpeechRequest``; every refusal is a ``VoicedeskError`` whose code maps to an HTTP
status (``engine.errors.http_status_for``) and whose message says what was wrong and what to send instead.

The AWS Kokoro sample's fields (``format``, ``sample_rate``, ``stream``, ``request_timestamp``) mean what its
container (``packages/speech-infra/containers/kokoro/serve.py``) and client (``packages/tts-client``) make
them mean: ``request_timestamp`` is ``time.time()`` at send (epoch seconds), ``stream`` defaults to true.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from voicedesk.engine import request_fields as fields
from voicedesk.engine.audio_formats import FORMATS, output_problem
from voicedesk.engine.errors import ErrorCode, VoicedeskError
from voicedesk.engine.events import SAMPLE_RATE
from voicedesk.engine.model.voices import DEFAULT_VOICE
from voicedesk.engine.protocol import ProtocolError, decode_text_change, parse_json_frame
from voicedesk.engine.session_limits import SessionLimits
from voicedesk.engine.text_config import TextChange

AudioFormat = Literal["pcm", "wav", "mp3", "opus", "flac", "aac"]
Transport = Literal["binary", "sse"]
SseDialect = Literal["voicedesk", "openai"]

AUDIO_FORMATS: tuple[str, ...] = FORMATS
TRANSPORTS: tuple[str, ...] = ("binary", "sse")

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


@dataclass(frozen=True, slots=True)
class SpeechRequest:
    text: str
    voice: str
    speed: float = 1.0
    audio_format: AudioFormat = "wav"
    transport: Transport = "binary"
    request_id: str | None = None
    sse_dialect: SseDialect = "voicedesk"
    sample_rate: int = SAMPLE_RATE
    stream: bool = True
    """False: the whole body at once, with real sizes, ``Content-Length`` and duration headers."""
    request_timestamp: float | None = None
    """When the client sent it (epoch seconds); too old a request is refused with ``request_stale``."""
    text_change: TextChange = field(default_factory=TextChange)
    """``lexicon``, ``markup``, ``urls``, ``code``, ``emoji``: as in the WebSocket's ``config``, for this request."""


def parse_json_object(body: bytes, max_bytes: int | None = None) -> dict[str, object]:
    """The body as a JSON object; any failure (not UTF-8, not JSON, nested too deep, a number of thousands of
    digits) is a ``bad_json`` or ``bad_message`` error, never another exception."""
    try:
        message = parse_json_frame(body, max_bytes or len(body), "The request body")
    except ProtocolError as exc:
        raise VoicedeskError(exc.code, exc.message) from None
    if not isinstance(message, dict):
        raise VoicedeskError(ErrorCode.BAD_MESSAGE, "The request body must be a JSON object.")
    return message


def request_id_of(body: bytes) -> str | None:
    """The ``request_id`` of a body that may not parse (to tag its error); None when there is none to find."""
    try:
        return fields.request_id(parse_json_object(body).get("request_id"))
    except VoicedeskError:
        return None


def check_budget(speech: SpeechRequest, limits: SessionLimits) -> None:
    fields.audio_budget(speech.text, speech.speed, limits.max_request_audio_s)


def _string(message: dict[str, object], key: str, default: str | None, limit: int = 200) -> str | None:
    value = message.get(key)
    if value is None:
        return default
    if not isinstance(value, str) or not value.strip():
        raise VoicedeskError(
            ErrorCode.BAD_MESSAGE, f"'{key}' must be a non-empty string; got {fields.describe(value)}."
        )
    if len(value) > limit:
        raise VoicedeskError(ErrorCode.BAD_MESSAGE, f"'{key}' is {len(value):,} characters long; the limit is {limit}.")
    return value.strip()


def _choice(message: dict[str, object], key: str, allowed: tuple[str, ...], default: str) -> str:
    value = _string(message, key, default)
    assert value is not None
    if value.lower() not in allowed:
        raise VoicedeskError(
            ErrorCode.BAD_MESSAGE,
            f"'{key}' {fields.describe(value)} is not supported here; use one of: {', '.join(allowed)}.",
        )
    return value.lower()


def _sample_rate(message: dict[str, object], audio_format: str) -> int:
    asked = fields.sample_rate(message.get("sample_rate"))
    rate = SAMPLE_RATE if asked is None else asked
    problem = output_problem(audio_format, rate)
    if problem is not None:
        raise VoicedeskError(ErrorCode.BAD_MESSAGE, problem)
    return rate


def _stream(message: dict[str, object]) -> bool:
    raw = message.get("stream")
    if raw is None:
        return True
    if not isinstance(raw, bool):
        raise VoicedeskError(ErrorCode.BAD_MESSAGE, f"'stream' must be true or false; got {fields.describe(raw)}.")
    return raw


def _text_change(message: dict[str, object]) -> TextChange:
    try:
        return decode_text_change(message)
    except ProtocolError as exc:
        raise VoicedeskError(exc.code, exc.message) from None


def _output(message: dict[str, object], format_key: str, default_format: str) -> tuple[str, int]:
    audio_format = _choice(message, format_key, AUDIO_FORMATS, default_format)
    return audio_format, _sample_rate(message, audio_format)


def parse_invocation(body: bytes, limits: SessionLimits) -> SpeechRequest:
    """``POST /invocations``: the AWS Kokoro sample's request (``text``, ``voice``, ``speed``, ``format``,
    ``sample_rate``, ``stream``, ``request_timestamp``, ``transport``, ``request_id``), plus this server's text
    options (``lexicon``, ``markup``, ``urls``, ``code``, ``emoji``)."""
    message = parse_json_object(body)
    request_id = fields.request_id(message.get("request_id"))
    audio_format, sample_rate = _output(message, "format", "wav")
    return SpeechRequest(
        text=fields.text(message.get("text"), limits.max_message_chars, "text"),
        voice=fields.voice(message.get("voice")) or DEFAULT_VOICE,
        speed=fields.speed(message.get("speed")) or 1.0,
        audio_format=audio_format,  # type: ignore[arg-type]
        transport=_choice(message, "transport", TRANSPORTS, "binary"),  # type: ignore[arg-type]
        request_id=request_id,
        sample_rate=sample_rate,
        stream=_stream(message),
        request_timestamp=fields.request_timestamp(message.get("request_timestamp")),
        text_change=_text_change(message),
    )


def parse_openai_speech(body: bytes, limits: SessionLimits) -> SpeechRequest:
    """``POST /v1/audio/speech`` as OpenAI defines it: ``model``, ``input``, ``voice``, ``response_format``
    (default mp3, as OpenAI's), ``speed``, ``stream_format`` (``audio`` or ``sse``). ``model`` and
    ``instructions`` are accepted and ignored: this server has one model. Extensions (``extra_body``):
    ``sample_rate``, ``stream``, ``request_timestamp``, ``lexicon`` and the text options, as on ``/invocations``."""
    message = parse_json_object(body)
    _string(message, "model", None)
    stream_format = _choice(message, "stream_format", ("audio", "sse"), "audio")
    audio_format, sample_rate = _output(message, "response_format", "mp3")
    return SpeechRequest(
        text=fields.text(message.get("input"), limits.max_message_chars, "input"),
        voice=fields.voice(message.get("voice")) or DEFAULT_VOICE,
        speed=fields.speed(message.get("speed")) or 1.0,
        audio_format=audio_format,  # type: ignore[arg-type]
        transport="sse" if stream_format == "sse" else "binary",
        sse_dialect="openai",
        sample_rate=sample_rate,
        stream=_stream(message),
        request_timestamp=fields.request_timestamp(message.get("request_timestamp")),
        text_change=_text_change(message),
    )
