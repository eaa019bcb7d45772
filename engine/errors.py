"""Error codes shared by the engine, the wire protocol and the server.

Every failure a person can act on carries a stable ``code`` (for programs) and a message that says what was
wrong and what to do (for people).
"""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    BAD_JSON = "bad_json"
    BAD_MESSAGE = "bad_message"
    UNKNOWN_TYPE = "unknown_type"
    UNKNOWN_VOICE = "unknown_voice"
    BAD_SPEED = "bad_speed"
    EMPTY_TEXT = "empty_text"
    TEXT_TOO_LONG = "text_too_long"
    FRAME_TOO_LARGE = "frame_too_large"
    BUFFER_FULL = "buffer_full"
    TOO_MANY_SESSIONS = "too_many_sessions"
    QUEUE_SATURATED = "queue_saturated"
    REQUEST_STALE = "request_stale"
    IDLE_TIMEOUT = "idle_timeout"
    NOT_READY = "not_ready"
    DEVICE_UNAVAILABLE = "device_unavailable"
    AUDIO_DEVICE = "audio_device"
    SESSION_CLOSING = "session_closing"
    SYNTHESIS_FAILED = "synthesis_failed"
    WEIGHTS_MISSING = "weights_missing"
    UNAUTHORIZED = "unauthorized"
    CONNECTION = "connection"
    INTERNAL = "internal"


class VoicedeskError(Exception):
    """An error with a stable code and a message written for the person who has to fix it."""

    def __init__(self, code: ErrorCode | str, message: str) -> None:
        super().__init__(message)
        self.code = ErrorCode(code) if code in ErrorCode._value2member_map_ else code
        self.message = message

    def __str__(self) -> str:
        return self.message


class VoiceError(VoicedeskError):
    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.UNKNOWN_VOICE, message)


class WeightsMissingError(VoicedeskError):
    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.WEIGHTS_MISSING, message)
