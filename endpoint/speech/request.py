"""Parsing and checking HTTP speech requests into one ``SpeechRequest`` (pure); a refusal says what was wrong and what
to send. The AWS sample's fields mean what its container and client make them mean (``request_timestamp``: epoch
seconds at send; ``stream`` defaults to true)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from voicedesk.engine import request_fields as fields
from voicedesk.engine.audio_formats import FORMATS, output_problem
from voicedesk.engine.errors import ErrorCode, VoicedeskError
from voicedesk.engine.events import SAMPLE_RATE
from voicedesk.engine.limits import SessionLimits
from voicedesk.engine.model.voices import DEFAULT_VOICE
from voicedesk.engine.protocol import ProtocolError, decode_text_change, parse_json_frame
from voicedesk.engine.request_fields import TextChange

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
    """The body as a JSON object; any failure is ``bad_json`` or ``bad_message``, never another exception."""
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


def _sample_rate(message: dict[str, object], audio_format: str) -> int:
    asked = fields.sample_rate(message.get("sample_rate"))
    rate = SAMPLE_RATE if asked is None else asked
    problem = output_problem(audio_format, rate)
    if problem is not None:
        raise VoicedeskError(ErrorCode.BAD_MESSAGE, problem)
    return rate


def _text_change(message: dict[str, object]) -> TextChange:
    try:
        return decode_text_change(message)
    except ProtocolError as exc:
        raise VoicedeskError(exc.code, exc.message) from None


def parse_invocation(body: bytes, limits: SessionLimits) -> SpeechRequest:
    """``POST /invocations``: the AWS Kokoro sample's request, plus this server's text options."""
    return _parse(body, limits, openai=False)


def parse_openai_speech(body: bytes, limits: SessionLimits) -> SpeechRequest:
    """``POST /v1/audio/speech`` as OpenAI defines it (``model`` ignored), ``/invocations``' options as
    ``extra_body``."""
    return _parse(body, limits, openai=True)


def _parse(body: bytes, limits: SessionLimits, openai: bool) -> SpeechRequest:
    message = parse_json_object(body)

    def read[T](check: Callable[..., T], key: str, *args: object) -> T:
        return check(message.get(key), key, *args)

    if openai:
        read(fields.string, "model")
        text_key, format_key, default_format = "input", "response_format", "mp3"
        transport = "sse" if read(fields.choice, "stream_format", ("audio", "sse")) == "sse" else "binary"
        request_id = None
    else:
        text_key, format_key, default_format = "text", "format", "wav"
        transport = read(fields.choice, "transport", TRANSPORTS) or "binary"
        request_id = read(fields.request_id, "request_id")
    audio_format = read(fields.choice, format_key, AUDIO_FORMATS) or default_format
    stream = read(fields.flag, "stream")
    return SpeechRequest(
        text=fields.text(message.get(text_key), limits.max_message_chars, text_key),
        voice=read(fields.voice, "voice") or DEFAULT_VOICE,
        speed=read(fields.speed, "speed") or 1.0,
        audio_format=audio_format,  # type: ignore[arg-type]
        transport=transport,  # type: ignore[arg-type]
        request_id=request_id,
        sse_dialect="openai" if openai else "voicedesk",
        sample_rate=_sample_rate(message, audio_format),
        stream=True if stream is None else stream,
        request_timestamp=read(fields.request_timestamp, "request_timestamp"),
        text_change=_text_change(message),
    )
