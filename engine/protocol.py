"""The wire protocol of ``/invocations-bidirectional-stream``: a pure codec, no sockets.

Frames are ``str`` (JSON control) or ``bytes`` (PCM16 24 kHz mono audio); requests may come as either, since SageMaker
delivers binary unless told ``DataType=UTF8``. ``ServerProtocol`` decodes commands and encodes events (the AWS Kokoro
sample's flow included); ``ClientProtocol`` does the reverse. docs/protocol.md documents every message: keep them in
step."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from voicedesk.engine import request_fields as fields
from voicedesk.engine.errors import ErrorCode, LocalErrorCode
from voicedesk.engine.events import (
    Audio,
    Cancelled,
    Closed,
    Error,
    Event,
    Flushed,
    RequestFinished,
    RequestStarted,
    SentenceFinished,
    SentenceStarted,
    SessionConfig,
    WordTiming,
)
from voicedesk.engine.request_fields import FieldError, TextChange, change_of
from voicedesk.engine.request_fields import describe as _describe
from voicedesk.engine.text.frontend.lexicon import Lexicon, LexiconError, parse_lexicon
from voicedesk.engine.text.frontend.settings import (
    CODE_CHOICES,
    EMOJI_CHOICES,
    MARKUP_CHOICES,
    URL_CHOICES,
    TextSettings,
)

Frame = str | bytes

BIDI_PATH = "/invocations-bidirectional-stream"
"""The bidirectional route: SageMaker's sidecar connects to exactly this path, and so do our clients."""

DEFAULT_MAX_FRAME_BYTES = 256 * 1024


# ---- commands (client → server) ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SynthesizeRequest:
    """The AWS sample's whole request: speak ``text`` with these settings, report completion."""

    text: str
    voice: str | None = None
    speed: float | None = None
    request_id: str | None = None
    sample_rate: int | None = None
    """Output rate from this request's sentences on (the sample's 8000/16000/22050/24000)."""
    audio_format: str | None = None
    """``format``: only ``pcm`` on the WebSocket (raw PCM16 frames); others are refused."""
    request_timestamp: float | None = None
    """Epoch seconds when the client sent it (the sample's staleness check)."""


@dataclass(frozen=True, slots=True)
class SendText:
    text: str


@dataclass(frozen=True, slots=True)
class Flush:
    request_id: str | None = None


@dataclass(frozen=True, slots=True)
class Cancel:
    pass


@dataclass(frozen=True, slots=True)
class Configure:
    voice: str | None = None
    speed: float | None = None
    max_buffer_delay_ms: float | None = None
    sample_rate: int | None = None
    lexicon: Lexicon | None = None
    """The session's pronunciation entries (replacing any it sent before; merged over the server's)."""
    markup: str | None = None
    urls: str | None = None
    code: str | None = None
    emoji: str | None = None
    phonemes: bool | None = None
    """Ask for (or stop) the phonemes the model received in each ``sentence_end``."""

    @property
    def text_change(self) -> TextChange:
        return TextChange(self.lexicon, self.markup, self.urls, self.code, self.emoji)


def configure_of(config: SessionConfig) -> Configure:
    """The ``config`` that gives a fresh server session this session's settings."""
    text = change_of(config.text)
    return Configure(
        voice=config.voice,
        speed=config.speed,
        max_buffer_delay_ms=config.max_buffer_delay_ms,
        lexicon=text.lexicon,
        markup=text.markup,
        urls=text.urls,
        code=text.code,
        emoji=text.emoji,
        phonemes=True if config.report_phonemes else None,
    )


def text_configure(settings: TextSettings) -> Configure:
    """A ``config`` that sets every text option to ``settings`` (the lexicon too, even when empty)."""
    return Configure(
        lexicon=settings.lexicon,
        markup=settings.markup,
        urls=settings.urls,
        code=settings.code,
        emoji=settings.emoji,
    )


@dataclass(frozen=True, slots=True)
class Close:
    pass


Command = SynthesizeRequest | SendText | Flush | Cancel | Configure | Close


class ProtocolError(Exception):
    """A frame that cannot be understood; the session answers with an error and keeps serving."""

    def __init__(self, code: ErrorCode, message: str, request_id: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id

    def to_event(self) -> Error:
        return Error(self.code, self.message, request_id=self.request_id)


def _optional_lexicon(message: dict[str, object], request_id: str | None) -> Lexicon | None:
    """``lexicon``: a list of entries; a bad one is refused with ``bad_lexicon`` naming it, the lexicon unchanged."""
    value = message.get("lexicon")
    if value is None:
        return None
    try:
        return parse_lexicon(value)
    except LexiconError as exc:
        raise ProtocolError(ErrorCode.BAD_LEXICON, f"{exc.message} {exc.advice}", request_id) from None


def decode_text_change(message: dict[str, object], request_id: str | None = None) -> TextChange:
    """The text options of a ``config`` or HTTP body; raises ``ProtocolError``."""

    field = _Fields(message, request_id)
    return TextChange(
        lexicon=_optional_lexicon(message, request_id),
        markup=field(fields.choice, "markup", MARKUP_CHOICES),
        urls=field(fields.choice, "urls", URL_CHOICES),
        code=field(fields.choice, "code", CODE_CHOICES),
        emoji=field(fields.choice, "emoji", EMOJI_CHOICES),
    )


class _Fields:
    """A message's fields, checked by ``engine.request_fields``; a refusal is tagged with the request's id."""

    def __init__(self, message: dict[str, object], request_id: str | None = None) -> None:
        self.message, self.request_id = message, request_id

    def __call__[T](self, check: Callable[..., T], key: str, *args: object) -> T:
        try:
            return check(self.message.get(key), key, *args)
        except FieldError as exc:
            raise ProtocolError(exc.code, exc.message, self.request_id) from None


_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def parse_json_frame(frame: Frame, max_frame_bytes: int, what: str = "A frame") -> object:
    """JSON from a frame or HTTP body, every failure a ``ProtocolError`` (huge numbers and deep nesting included)."""
    size = len(frame.encode("utf-8", "surrogatepass") if isinstance(frame, str) else frame)
    if size > max_frame_bytes:
        raise ProtocolError(
            ErrorCode.FRAME_TOO_LARGE,
            f"{what} of {size:,} bytes is over the limit of {max_frame_bytes:,}; send text in smaller pieces.",
        )
    if isinstance(frame, bytes):
        try:
            frame = frame.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(
                ErrorCode.BAD_JSON, f"{what} must hold UTF-8 JSON; byte {exc.start} is not UTF-8."
            ) from None
    try:
        message = json.loads(frame)
        if _ESCAPED_SURROGATE.search(frame):
            # A lone surrogate (JSON may escape one) is not text: it would fail when echoed or logged.
            json.dumps(message, ensure_ascii=False).encode("utf-8")
        return message
    except UnicodeEncodeError:
        raise ProtocolError(
            ErrorCode.BAD_JSON,
            f"{what} holds an unpaired UTF-16 surrogate escape (\\ud800-\\udfff), which is not text.",
        ) from None
    except json.JSONDecodeError as exc:
        raise ProtocolError(
            ErrorCode.BAD_JSON, f"{what} is not valid JSON ({exc.msg} at position {exc.pos})."
        ) from None
    except RecursionError:
        raise ProtocolError(ErrorCode.BAD_JSON, f"{what} nests JSON too deeply to be a request.") from None
    except ValueError:  # an integer of thousands of digits
        raise ProtocolError(ErrorCode.BAD_JSON, f"{what} holds a number too long to be a request.") from None


def decode_command(frame: Frame, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> Command:
    """Parses one client frame (text or binary). Raises ``ProtocolError`` saying what was wrong."""
    message = parse_json_frame(frame, max_frame_bytes)
    if not isinstance(message, dict):
        raise ProtocolError(ErrorCode.BAD_MESSAGE, f"A message must be a JSON object; got {_describe(message)}.")
    field = _Fields(message)
    request_id = field.request_id = field(fields.request_id, "request_id")
    kind = message.get("type")
    if kind is None:
        return SynthesizeRequest(
            text=field(fields.required_text, "text"),
            voice=field(fields.voice, "voice"),
            speed=field(fields.speed_number, "speed"),
            request_id=request_id,
            sample_rate=field(fields.sample_rate, "sample_rate"),
            audio_format=field(fields.string, "format", 16),
            request_timestamp=field(fields.request_timestamp, "request_timestamp"),
        )
    match kind:
        case "text":
            return SendText(field(fields.required_text, "text"))
        case "flush":
            return Flush(request_id)
        case "cancel":
            return Cancel()
        case "config":
            text = decode_text_change(message, request_id)
            return Configure(
                voice=field(fields.voice, "voice"),
                speed=field(fields.speed_number, "speed"),
                max_buffer_delay_ms=field(fields.buffer_delay_number, "max_buffer_delay_ms"),
                sample_rate=field(fields.sample_rate, "sample_rate"),
                lexicon=text.lexicon,
                markup=text.markup,
                urls=text.urls,
                code=text.code,
                emoji=text.emoji,
                phonemes=field(fields.flag, "phonemes"),
            )
        case "close":
            return Close()
    raise ProtocolError(
        ErrorCode.UNKNOWN_TYPE,
        f"Unknown message type {_describe(kind)}; expected one of text, flush, cancel, config, close "
        "(or no type with 'text' for a whole request).",
        request_id,
    )


def encode_command(command: Command) -> str:
    match command:
        case SynthesizeRequest():
            body: dict[str, object] = {"text": command.text}
            optional = {
                "voice": command.voice,
                "speed": command.speed,
                "request_id": command.request_id,
                "sample_rate": command.sample_rate,
                "format": command.audio_format,
                "request_timestamp": command.request_timestamp,
            }
            body.update((key, value) for key, value in optional.items() if value is not None)
        case SendText(text=text):
            body = {"type": "text", "text": text}
        case Flush(request_id=request_id):
            body = {"type": "flush"}
            if request_id is not None:
                body["request_id"] = request_id
        case Cancel():
            body = {"type": "cancel"}
        case Configure(lexicon=lexicon):
            body = {"type": "config"}
            optional = {
                "voice": command.voice,
                "speed": command.speed,
                "max_buffer_delay_ms": command.max_buffer_delay_ms,
                "sample_rate": command.sample_rate,
                "lexicon": None if lexicon is None else lexicon.to_json(),
                "markup": command.markup,
                "urls": command.urls,
                "code": command.code,
                "emoji": command.emoji,
                "phonemes": command.phonemes,
            }
            body.update((key, value) for key, value in optional.items() if value is not None)
        case Close():
            body = {"type": "close"}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


# ---- server side ------------------------------------------------------------------------------------


def _json(body: dict[str, object]) -> str:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def _number_or_none(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def wire_error(error: Error) -> dict[str, object]:
    """An ``error`` message, as the WebSocket and the SSE stream of ``/invocations`` send it."""
    body = {"type": "error", "code": str(error.code), "message": error.message, "request_id": error.request_id}
    optional = {"seq": error.seq, "fatal": error.fatal or None, "retry_after_s": error.retry_after_s}
    body.update((key, value) for key, value in optional.items() if value is not None)
    return body


def encode_event(event: Event) -> list[Frame]:
    """The frames of one session event: audio binary, everything else one JSON text frame."""
    match event:
        case SentenceStarted(seq=seq, text=text):
            return [_json({"type": "sentence_start", "seq": seq, "text": text})]
        case Audio(pcm=pcm):
            return [pcm] if pcm else []
        case SentenceFinished(phonemes=phonemes):
            body = {
                "type": "sentence_end",
                "seq": event.seq,
                "duration_s": round(event.duration_s, 6),
                "synthesis_s": round(event.synthesis_s, 6),
                "words": [_word_json(w) for w in event.words],
            }
            if phonemes is not None:
                body["phonemes"] = phonemes
            return [_json(body)]
        case RequestStarted(request_id=request_id):
            return [_json({"type": "synthesis_start", "request_id": request_id})]
        case RequestFinished():
            body: dict[str, object] = {
                "type": "synthesis_complete",
                "request_id": event.request_id,
                "total_duration_s": round(event.audio_s, 6),
                "elapsed_s": round(event.elapsed_s, 6),
            }
            if event.cancelled:
                body["cancelled"] = True
            return [_json(body)]
        case Flushed():
            body = {"type": "flushed", "last_seq": event.last_seq, "request_id": event.request_id}
            if event.cancelled:
                body["cancelled"] = True
            return [_json(body)]
        case Cancelled(last_seq=last_seq):
            return [_json({"type": "cancelled", "last_seq": last_seq})]
        case Error():
            return [_json(wire_error(event))]
        case Closed(reason=reason):
            return [_json({"type": "closed", "reason": reason})]
    return []


class ServerProtocol:
    """The server's codec: client frames to commands, session events to frames (counting bytes sent)."""

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes
        self.bytes_sent = 0

    def receive(self, frame: Frame) -> Command:
        return decode_command(frame, self.max_frame_bytes)

    def send(self, event: Event) -> list[Frame]:
        frames = encode_event(event)
        self.bytes_sent += sum(len(f) if isinstance(f, bytes) else len(f.encode()) for f in frames)
        return frames


# ---- client side ------------------------------------------------------------------------------------


def _server_broke_protocol(what: str) -> Error:
    return Error(
        LocalErrorCode.SERVER_PROTOCOL,
        f"The server sent {what}. Is this a voicedesk server of a matching version? The session goes on.",
    )


class ClientProtocol:
    """Decodes server frames into session events for the websocket and sagemaker engines."""

    def __init__(self) -> None:
        self._current_seq = -1
        self.bytes_received = 0

    def receive(self, frame: Frame) -> list[Event]:
        self.bytes_received += len(frame) if isinstance(frame, bytes) else len(frame.encode())
        if isinstance(frame, bytes):
            return [Audio(self._current_seq, frame)] if frame else []
        # A frame this client cannot read is the server's fault, never the request's: it gets a local code.
        try:
            message = json.loads(frame)
        except (ValueError, RecursionError):
            return [_server_broke_protocol(f"a text frame that is not JSON: {frame[:80]!r}")]
        if not isinstance(message, dict):
            return [_server_broke_protocol(f"an unexpected message: {frame[:80]!r}")]
        try:
            return self._decode(message)
        except (KeyError, TypeError, ValueError, OverflowError):
            return [_server_broke_protocol(f"a malformed message: {frame[:80]!r}")]

    def _decode(self, message: dict[str, object]) -> list[Event]:
        match message.get("type"):
            case "sentence_start":
                self._current_seq = int(message["seq"])
                return [SentenceStarted(self._current_seq, str(message.get("text", "")))]
            case "sentence_end":
                words = tuple(_word_timing(w) for w in message.get("words", []))
                phonemes = message.get("phonemes")
                return [
                    SentenceFinished(
                        int(message["seq"]),
                        float(message.get("duration_s", 0.0)),
                        words,
                        float(message.get("synthesis_s", 0.0)),
                        None if phonemes is None else str(phonemes),
                    )
                ]
            case "flushed":
                return [
                    Flushed(int(message.get("last_seq", -1)), message.get("request_id"), bool(message.get("cancelled")))
                ]
            case "synthesis_start":
                return [RequestStarted(message.get("request_id"))]
            case "synthesis_complete":
                return [
                    RequestFinished(
                        message.get("request_id"),
                        float(message.get("total_duration_s", 0.0)),
                        float(message.get("elapsed_s", 0.0)),
                        bool(message.get("cancelled")),
                    )
                ]
            case "cancelled":
                return [Cancelled(int(message.get("last_seq", -1)))]
            case "error":
                return [
                    Error(
                        str(message.get("code", ErrorCode.INTERNAL)),
                        str(message.get("message", "unknown error")),
                        seq=message.get("seq"),
                        request_id=message.get("request_id"),
                        fatal=bool(message.get("fatal", False)),
                        retry_after_s=_number_or_none(message.get("retry_after_s")),
                    )
                ]
            case "closed":
                return [Closed(str(message.get("reason", "closed")))]
        # Future additions carry nothing a Session reports.
        return []


def _word_json(word: WordTiming) -> dict[str, object]:
    """A word timing on the wire; the source span only when known (older clients ignore the extra fields)."""
    out: dict[str, object] = {"word": word.word, "start_s": round(word.start_s, 4), "end_s": round(word.end_s, 4)}
    if word.start_char is not None and word.end_char is not None:
        out["start_char"], out["end_char"] = word.start_char, word.end_char
    return out


def _word_timing(message: dict[str, object]) -> WordTiming:
    start_char, end_char = message.get("start_char"), message.get("end_char")
    span_known = isinstance(start_char, int) and isinstance(end_char, int)
    return WordTiming(
        str(message["word"]),
        float(message["start_s"]),  # type: ignore[arg-type]
        float(message["end_s"]),  # type: ignore[arg-type]
        start_char if span_known else None,  # type: ignore[arg-type]
        end_char if span_known else None,  # type: ignore[arg-type]
    )
