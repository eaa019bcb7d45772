"""Errors, with owners (as h11 separates local from remote protocol errors).

``ErrorCode`` crosses the wire (one ``WIRE_ERRORS`` row each, kept in step with docs/protocol.md by a test);
``LocalErrorCode`` never does. ``advice`` is kept apart from ``message``, so a window can show them apart."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, StrEnum


class ErrorCode(StrEnum):
    """Codes a server sends (``{"type": "error", "code": ...}``, HTTP error bodies, SSE error events)."""

    BAD_JSON = "bad_json"
    BAD_MESSAGE = "bad_message"
    UNKNOWN_TYPE = "unknown_type"
    UNKNOWN_VOICE = "unknown_voice"
    BAD_SPEED = "bad_speed"
    BAD_LEXICON = "bad_lexicon"
    EMPTY_TEXT = "empty_text"
    BAD_TEXT = "bad_text"
    TEXT_TOO_LONG = "text_too_long"
    FRAME_TOO_LARGE = "frame_too_large"
    BUFFER_FULL = "buffer_full"
    BUDGET_EXCEEDED = "budget_exceeded"
    RATE_LIMITED = "rate_limited"
    TOO_MANY_SESSIONS = "too_many_sessions"
    TOO_MANY_CONNECTIONS = "too_many_connections"
    QUEUE_SATURATED = "queue_saturated"
    REQUEST_STALE = "request_stale"
    IDLE_TIMEOUT = "idle_timeout"
    NOT_READY = "not_ready"
    DEVICE_UNAVAILABLE = "device_unavailable"
    SESSION_CLOSING = "session_closing"
    SYNTHESIS_FAILED = "synthesis_failed"
    WEIGHTS_MISSING = "weights_missing"
    UNAUTHORIZED = "unauthorized"
    NOT_FOUND = "not_found"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    INTERNAL = "internal"


class LocalErrorCode(StrEnum):
    """Codes of errors that happen on this machine and never cross the wire."""

    USAGE = "usage"
    """A command-line argument, a setting or a deploy option is wrong."""
    AUDIO_DEVICE = "audio_device"
    CONNECTION = "connection"
    """A client could not reach a server, or lost it."""
    SERVER_PROTOCOL = "server_protocol"
    """A server sent something this client cannot understand (the server's fault, not the request's)."""


class CloseCode(IntEnum):
    """The WebSocket close codes a server ends a session with (RFC 6455 section 7.4.1)."""

    NORMAL = 1000
    GOING_AWAY = 1001
    POLICY_VIOLATION = 1008
    INTERNAL_ERROR = 1011
    TRY_AGAIN_LATER = 1013


class CloseReason(StrEnum):
    """Why a session ended: ``Closed.reason``, and the reason of the WebSocket close that follows."""

    CLOSED = "closed"
    SHUTTING_DOWN = "server shutting down"
    IDLE = ErrorCode.IDLE_TIMEOUT.value
    RATE_LIMITED = ErrorCode.RATE_LIMITED.value
    BUDGET_EXCEEDED = ErrorCode.BUDGET_EXCEEDED.value
    REFUSED_AT_OPEN = ErrorCode.BAD_MESSAGE.value
    EVICTED = ErrorCode.TOO_MANY_SESSIONS.value
    """The server was full: this idle session made room for a client from an address holding less."""


REASON_ERRORS: dict[CloseReason, ErrorCode] = {
    CloseReason.SHUTTING_DOWN: ErrorCode.SESSION_CLOSING,
    CloseReason.IDLE: ErrorCode.IDLE_TIMEOUT,
    CloseReason.RATE_LIMITED: ErrorCode.RATE_LIMITED,
    CloseReason.BUDGET_EXCEEDED: ErrorCode.BUDGET_EXCEEDED,
    CloseReason.REFUSED_AT_OPEN: ErrorCode.BAD_MESSAGE,
    CloseReason.EVICTED: ErrorCode.TOO_MANY_SESSIONS,
}
"""The wire error behind each reason a server ends a session for; its row in ``WIRE_ERRORS`` has the close code."""


@dataclass(frozen=True, slots=True)
class WireError:
    http_status: int
    close_code: CloseCode
    """WebSocket close code when this error refuses a connection or ends a session (``fatal``)."""


WIRE_ERRORS: dict[ErrorCode, WireError] = {
    ErrorCode.BAD_JSON: WireError(400, CloseCode.POLICY_VIOLATION),
    ErrorCode.BAD_MESSAGE: WireError(400, CloseCode.POLICY_VIOLATION),
    ErrorCode.UNKNOWN_TYPE: WireError(400, CloseCode.POLICY_VIOLATION),
    ErrorCode.UNKNOWN_VOICE: WireError(400, CloseCode.POLICY_VIOLATION),
    ErrorCode.BAD_SPEED: WireError(400, CloseCode.POLICY_VIOLATION),
    ErrorCode.BAD_LEXICON: WireError(400, CloseCode.POLICY_VIOLATION),
    ErrorCode.EMPTY_TEXT: WireError(400, CloseCode.POLICY_VIOLATION),
    ErrorCode.BAD_TEXT: WireError(400, CloseCode.POLICY_VIOLATION),
    ErrorCode.TEXT_TOO_LONG: WireError(413, CloseCode.POLICY_VIOLATION),
    ErrorCode.FRAME_TOO_LARGE: WireError(413, CloseCode.POLICY_VIOLATION),
    ErrorCode.BUFFER_FULL: WireError(413, CloseCode.POLICY_VIOLATION),
    ErrorCode.BUDGET_EXCEEDED: WireError(413, CloseCode.POLICY_VIOLATION),
    ErrorCode.RATE_LIMITED: WireError(429, CloseCode.POLICY_VIOLATION),
    ErrorCode.TOO_MANY_SESSIONS: WireError(429, CloseCode.TRY_AGAIN_LATER),
    ErrorCode.TOO_MANY_CONNECTIONS: WireError(429, CloseCode.TRY_AGAIN_LATER),
    ErrorCode.QUEUE_SATURATED: WireError(503, CloseCode.TRY_AGAIN_LATER),
    ErrorCode.REQUEST_STALE: WireError(408, CloseCode.POLICY_VIOLATION),
    ErrorCode.IDLE_TIMEOUT: WireError(408, CloseCode.NORMAL),
    ErrorCode.NOT_READY: WireError(503, CloseCode.TRY_AGAIN_LATER),
    ErrorCode.DEVICE_UNAVAILABLE: WireError(503, CloseCode.INTERNAL_ERROR),
    ErrorCode.SESSION_CLOSING: WireError(503, CloseCode.GOING_AWAY),
    ErrorCode.SYNTHESIS_FAILED: WireError(500, CloseCode.INTERNAL_ERROR),
    ErrorCode.WEIGHTS_MISSING: WireError(503, CloseCode.INTERNAL_ERROR),
    ErrorCode.UNAUTHORIZED: WireError(401, CloseCode.POLICY_VIOLATION),
    ErrorCode.NOT_FOUND: WireError(404, CloseCode.POLICY_VIOLATION),
    ErrorCode.METHOD_NOT_ALLOWED: WireError(405, CloseCode.POLICY_VIOLATION),
    ErrorCode.INTERNAL: WireError(500, CloseCode.INTERNAL_ERROR),
}
WIRE_CODES = frozenset(WIRE_ERRORS)
"""The codes a server may send (``AUDIO_DEVICE`` and ``CONNECTION`` are not among them)."""

_UNKNOWN = WireError(500, CloseCode.INTERNAL_ERROR)


def wire_error(code: str) -> WireError:
    return WIRE_ERRORS.get(code, _UNKNOWN)  # type: ignore[call-overload]


def http_status_for(code: str) -> int:
    return wire_error(code).http_status


def close_code_for(code: str) -> int:
    return wire_error(code).close_code


def close_code_for_reason(reason: str) -> CloseCode:
    """The close code of a session that ended for ``reason``; a plain end, or a peer that went away: normal."""
    error = REASON_ERRORS.get(reason)  # type: ignore[call-overload]
    return CloseCode.NORMAL if error is None else WIRE_ERRORS[error].close_code


class VoicedeskError(Exception):
    """An error with a stable code and a message written for the person who has to fix it."""

    def __init__(self, code: ErrorCode | LocalErrorCode | str, message: str, advice: str | None = None) -> None:
        super().__init__(message)
        self.code: ErrorCode | LocalErrorCode | str = _known(code)
        self.message = message
        self.advice = advice

    def __str__(self) -> str:
        return f"{self.message} {self.advice}" if self.advice else self.message


def error_body(error: VoicedeskError, request_id: str | None = None) -> dict[str, object]:
    """The one JSON shape of an HTTP error body (docs/protocol.md); ``details`` are an error's extras (queue depths)."""
    code, details = str(error.code), getattr(error, "details", {})
    return {"type": "error", "code": code, "message": error.message, "request_id": request_id, "error": code, **details}


def _known(code: ErrorCode | LocalErrorCode | str) -> ErrorCode | LocalErrorCode | str:
    if isinstance(code, ErrorCode | LocalErrorCode):
        return code
    if code in ErrorCode._value2member_map_:
        return ErrorCode(code)
    if code in LocalErrorCode._value2member_map_:
        return LocalErrorCode(code)
    return code


class VoiceError(VoicedeskError):
    def __init__(self, message: str, advice: str | None = None) -> None:
        super().__init__(ErrorCode.UNKNOWN_VOICE, message, advice)


class WeightsMissingError(VoicedeskError):
    def __init__(self, message: str, advice: str | None = None) -> None:
        super().__init__(ErrorCode.WEIGHTS_MISSING, message, advice)


class UsageError(VoicedeskError):
    """A command-line argument, setting or option is wrong (never sent over the wire)."""

    def __init__(self, message: str, advice: str | None = None) -> None:
        super().__init__(LocalErrorCode.USAGE, message, advice)


class ConnectionFailed(VoicedeskError):
    """This client could not reach its server, or lost it (never sent over the wire)."""

    def __init__(self, message: str, advice: str | None = None) -> None:
        super().__init__(LocalErrorCode.CONNECTION, message, advice)


class RemoteProtocolError(VoicedeskError):
    """The server sent a frame this client cannot understand: the server's fault, not the request's."""

    def __init__(self, message: str, advice: str | None = None) -> None:
        super().__init__(LocalErrorCode.SERVER_PROTOCOL, message, advice)
