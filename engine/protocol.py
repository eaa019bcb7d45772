"""The wire protocol of ``/invocations-bidirectional-stream``: a pure codec, no sockets.

Frames are what a WebSocket (or a SageMaker PayloadPart) carries: ``str`` for text frames, ``bytes`` for binary.
Audio goes out as binary PCM16 24 kHz mono; control goes both ways as JSON. Requests may arrive as text OR binary
frames, because SageMaker delivers binary unless the client set ``DataType=UTF8``.

``ServerProtocol`` turns client frames into ``Command`` objects and session events into frames, including the
AWS Kokoro sample's flow (a JSON with ``text`` and no ``type`` → ``synthesis_start``, audio, ``synthesis_complete``).
``ClientProtocol`` does the reverse for our websocket and sagemaker engines. docs/protocol.md documents every
message; keep the two in step.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass

from engine.errors import ErrorCode
from engine.events import (
    Audio,
    Cancelled,
    Closed,
    Error,
    Event,
    Flushed,
    SentenceFinished,
    SentenceStarted,
    WordTiming,
)

Frame = str | bytes

PROTOCOL_VERSION = 1
DEFAULT_MAX_FRAME_BYTES = 256 * 1024


# ---- commands (client → server) ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SynthesizeRequest:
    """The AWS sample's whole request: speak ``text`` with these settings, report completion."""

    text: str
    voice: str | None = None
    speed: float | None = None
    request_id: str | None = None


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


def _optional_str(message: dict[str, object], key: str, request_id: str | None) -> str | None:
    value = message.get(key)
    if value is None or isinstance(value, str):
        return value
    raise ProtocolError(ErrorCode.BAD_MESSAGE, f"'{key}' must be a string; got {value!r}.", request_id)


def _optional_speed(message: dict[str, object], request_id: str | None) -> float | None:
    value = message.get("speed")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ProtocolError(ErrorCode.BAD_SPEED, f"'speed' must be a number; got {value!r}.", request_id)
    return float(value)


def _required_text(message: dict[str, object], request_id: str | None) -> str:
    text = message.get("text")
    if not isinstance(text, str):
        raise ProtocolError(ErrorCode.BAD_MESSAGE, "'text' is required and must be a string.", request_id)
    return text


def decode_command(frame: Frame, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> Command:
    """Parses one client frame (text or binary). Raises ``ProtocolError`` saying what was wrong."""
    size = len(frame.encode() if isinstance(frame, str) else frame)
    if size > max_frame_bytes:
        raise ProtocolError(
            ErrorCode.FRAME_TOO_LARGE,
            f"A frame of {size:,} bytes is over the limit of {max_frame_bytes:,}; send text in smaller pieces.",
        )
    if isinstance(frame, bytes):
        try:
            frame = frame.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(
                ErrorCode.BAD_JSON, f"A binary frame must hold UTF-8 JSON; byte {exc.start} is not UTF-8."
            ) from None
    try:
        message = json.loads(frame)
    except json.JSONDecodeError as exc:
        raise ProtocolError(ErrorCode.BAD_JSON, f"Frame is not valid JSON ({exc.msg} at position {exc.pos}).") from None
    if not isinstance(message, dict):
        raise ProtocolError(ErrorCode.BAD_MESSAGE, "A message must be a JSON object.")
    request_id = message.get("request_id")
    if request_id is not None and not isinstance(request_id, str):
        request_id = str(request_id)
    kind = message.get("type")
    if kind is None:
        return SynthesizeRequest(
            text=_required_text(message, request_id),
            voice=_optional_str(message, "voice", request_id),
            speed=_optional_speed(message, request_id),
            request_id=request_id,
        )
    match kind:
        case "text":
            return SendText(_required_text(message, request_id))
        case "flush":
            return Flush(request_id)
        case "cancel":
            return Cancel()
        case "config":
            return Configure(
                voice=_optional_str(message, "voice", request_id),
                speed=_optional_speed(message, request_id),
            )
        case "close":
            return Close()
    raise ProtocolError(
        ErrorCode.UNKNOWN_TYPE,
        f"Unknown message type {kind!r}; expected one of text, flush, cancel, config, close "
        "(or no type with 'text' for a whole request).",
        request_id,
    )


def encode_command(command: Command) -> str:
    match command:
        case SynthesizeRequest(text, voice, speed, request_id):
            body: dict[str, object] = {"text": text}
            if voice is not None:
                body["voice"] = voice
            if speed is not None:
                body["speed"] = speed
            if request_id is not None:
                body["request_id"] = request_id
        case SendText(text):
            body = {"type": "text", "text": text}
        case Flush(request_id):
            body = {"type": "flush"}
            if request_id is not None:
                body["request_id"] = request_id
        case Cancel():
            body = {"type": "cancel"}
        case Configure(voice, speed):
            body = {"type": "config"}
            if voice is not None:
                body["voice"] = voice
            if speed is not None:
                body["speed"] = speed
        case Close():
            body = {"type": "close"}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


# ---- server side ------------------------------------------------------------------------------------


def _json(body: dict[str, object]) -> str:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


@dataclass(slots=True)
class _WholeRequest:
    tag: str
    request_id: str | None
    received_at: float
    started: bool = False
    audio_s: float = 0.0


WHOLE_REQUEST_TAG = "\x00whole:"
"""Prefix of the flush tags the server uses internally for whole requests (never seen on the wire)."""


class ServerProtocol:
    """Frames out for session events; remembers which whole requests are open to answer like the AWS sample.

    Time is passed in (``now``) so the codec stays pure and testable.
    """

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._requests: deque[_WholeRequest] = deque()
        self._tags = 0
        self.bytes_sent = 0

    def receive(self, frame: Frame) -> Command:
        return decode_command(frame, self.max_frame_bytes)

    def open_whole_request(self, request: SynthesizeRequest, now: float) -> str:
        """Registers an accepted whole request; flush the session with the returned tag."""
        self._tags += 1
        tag = f"{WHOLE_REQUEST_TAG}{self._tags}"
        self._requests.append(_WholeRequest(tag, request.request_id, now))
        return tag

    def send(self, event: Event, now: float) -> list[Frame]:
        frames = self._frames(event, now)
        self.bytes_sent += sum(len(f) if isinstance(f, bytes) else len(f.encode()) for f in frames)
        return frames

    def _frames(self, event: Event, now: float) -> list[Frame]:
        match event:
            case SentenceStarted(seq, text):
                frames: list[Frame] = []
                if self._requests and not self._requests[0].started:
                    self._requests[0].started = True
                    frames.append(_json({"type": "synthesis_start", "request_id": self._requests[0].request_id}))
                frames.append(_json({"type": "sentence_start", "seq": seq, "text": text}))
                return frames
            case Audio(_seq, pcm):
                if self._requests:
                    self._requests[0].audio_s += event.duration_s
                return [pcm]
            case SentenceFinished(seq, duration_s, words, synthesis_s):
                return [
                    _json(
                        {
                            "type": "sentence_end",
                            "seq": seq,
                            "duration_s": round(duration_s, 6),
                            "synthesis_s": round(synthesis_s, 6),
                            "words": [
                                {"word": w.word, "start_s": round(w.start_s, 4), "end_s": round(w.end_s, 4)}
                                for w in words
                            ],
                        }
                    )
                ]
            case Flushed(last_seq, request_id):
                if request_id is not None and request_id.startswith(WHOLE_REQUEST_TAG):
                    return self._complete_whole_request(request_id, now)
                return [_json({"type": "flushed", "last_seq": last_seq, "request_id": request_id})]
            case Cancelled(last_seq):
                self._requests.clear()
                return [_json({"type": "cancelled", "last_seq": last_seq})]
            case Error(code, message, seq, request_id, fatal):
                body: dict[str, object] = {"type": "error", "code": str(code), "message": message}
                if request_id is not None and request_id.startswith(WHOLE_REQUEST_TAG):
                    request_id = self._request_id_of(request_id)
                if request_id is None and seq is not None and self._requests:
                    request_id = self._requests[0].request_id
                body["request_id"] = request_id
                if seq is not None:
                    body["seq"] = seq
                if fatal:
                    body["fatal"] = True
                return [_json(body)]
            case Closed(reason):
                return [_json({"type": "closed", "reason": reason})]
        return []

    def _request_id_of(self, tag: str) -> str | None:
        return next((r.request_id for r in self._requests if r.tag == tag), None)

    def _complete_whole_request(self, tag: str, now: float) -> list[Frame]:
        frames: list[Frame] = []
        while self._requests:
            request = self._requests.popleft()
            if not request.started:
                frames.append(_json({"type": "synthesis_start", "request_id": request.request_id}))
            frames.append(
                _json(
                    {
                        "type": "synthesis_complete",
                        "request_id": request.request_id,
                        "total_duration_s": round(request.audio_s, 6),
                        "elapsed_s": round(now - request.received_at, 6),
                    }
                )
            )
            if request.tag == tag:
                break
        return frames


# ---- client side ------------------------------------------------------------------------------------


class ClientProtocol:
    """Decodes server frames into session events for the websocket and sagemaker engines."""

    def __init__(self) -> None:
        self._current_seq = -1
        self.bytes_received = 0

    def receive(self, frame: Frame) -> list[Event]:
        self.bytes_received += len(frame) if isinstance(frame, bytes) else len(frame.encode())
        if isinstance(frame, bytes):
            return [Audio(self._current_seq, frame)] if frame else []
        try:
            message = json.loads(frame)
        except json.JSONDecodeError:
            return [Error(ErrorCode.BAD_JSON, f"The server sent a text frame that is not JSON: {frame[:80]!r}")]
        if not isinstance(message, dict):
            return [Error(ErrorCode.BAD_MESSAGE, f"The server sent an unexpected message: {frame[:80]!r}")]
        try:
            return self._decode(message)
        except (KeyError, TypeError, ValueError) as exc:
            return [Error(ErrorCode.BAD_MESSAGE, f"The server sent a malformed message ({exc!r}): {frame[:80]!r}")]

    def _decode(self, message: dict[str, object]) -> list[Event]:
        match message.get("type"):
            case "sentence_start":
                self._current_seq = int(message["seq"])
                return [SentenceStarted(self._current_seq, str(message.get("text", "")))]
            case "sentence_end":
                words = tuple(
                    WordTiming(str(w["word"]), float(w["start_s"]), float(w["end_s"])) for w in message.get("words", [])
                )
                return [
                    SentenceFinished(
                        int(message["seq"]),
                        float(message.get("duration_s", 0.0)),
                        words,
                        float(message.get("synthesis_s", 0.0)),
                    )
                ]
            case "flushed":
                return [Flushed(int(message.get("last_seq", -1)), message.get("request_id"))]
            case "synthesis_complete":
                return [Flushed(self._current_seq, message.get("request_id"))]
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
                    )
                ]
            case "closed":
                return [Closed(str(message.get("reason", "closed")))]
        # synthesis_start and future additions carry nothing a Session reports.
        return []
