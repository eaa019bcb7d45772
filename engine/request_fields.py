"""The request fields every transport reads, checked in one place (pure): the WebSocket codec (engine/protocol.py),
the HTTP parsers (endpoint/speech_request.py) and Wyoming (endpoint/wyoming/) call these, so the same value gets
the same answer on each.

Each check takes what the client sent (``None``: absent) and returns the value to use, or raises ``FieldError``;
the transport adds what it knows (the request's id on the WebSocket).
"""

from __future__ import annotations

import json
import math

from voicedesk.engine.errors import ErrorCode, VoicedeskError
from voicedesk.engine.text.chunker_phonemes import estimate_phonemes

MAX_REQUEST_ID_CHARS = 200
MAX_VOICE_SPEC_CHARS = 400
"""Longest voice spec: a blend of many voices with weights, as the picker writes it, fits easily."""
MIN_SPEED = 0.25
MAX_SPEED = 4.0
MAX_BUFFER_DELAY_MS = 30_000
"""Longest accepted ``max_buffer_delay_ms``: held text must never wait longer than a listener would."""
SPOKEN_PHONEMES_PER_S = 20.0
"""Phonemes per second of speech at speed 1, as ``estimate_phonemes`` counts them (English prose: 15 characters a
second); digits, symbols, emoji and other scripts count as long as they are read (13-30 phonemes a character)."""
MILLISECONDS_AFTER = 1e11
"""An epoch timestamp above this (the year 5138 in seconds) is a client sending milliseconds."""


class FieldError(VoicedeskError):
    """A request field the server cannot use; ``code`` is its wire error."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(code, message)


def describe(value: object) -> str:
    """A client's value for an error message: short, never a huge echo of what it sent."""
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else f"a string of {len(value):,} characters"
    if value is None or isinstance(value, bool):
        return json.dumps(value)  # null, true, false: as the client wrote them
    if isinstance(value, int | float):
        return repr(value) if not isinstance(value, int) or value.bit_length() < 128 else "a very large number"
    return f"a JSON {type(value).__name__.replace('dict', 'object').replace('list', 'array')}"


def finite(raw: object) -> float | None:
    """A JSON number as a finite float; None for anything else (``Infinity``, ``NaN``, 400-digit integers)."""
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return None
    try:
        value = float(raw)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


def text(value: object, max_chars: int, key: str = "text") -> str:
    """The text to speak: a string that is not blank, of at most ``max_chars`` characters."""
    if not isinstance(value, str):
        got = "nothing" if value is None else describe(value)
        raise FieldError(
            ErrorCode.BAD_MESSAGE, f"'{key}' is required and must be a string (the text to speak); got {got}."
        )
    if not value.strip():
        raise FieldError(ErrorCode.EMPTY_TEXT, f"'{key}' is empty; give some text to speak.")
    text_length(len(value), max_chars, f"'{key}'")
    return value


def text_length(chars: int, max_chars: int, what: str) -> None:
    """Refuses a request's text (``what``: whole or streamed so far) of more than ``max_chars`` characters."""
    if chars > max_chars:
        raise FieldError(
            ErrorCode.TEXT_TOO_LONG,
            f"{what} has {chars:,} characters, over this server's limit of {max_chars:,}; split it into several "
            "requests, or stream it.",
        )


def estimated_audio_s(text: str, speed: float) -> float:
    """Seconds of audio ``text`` will make at ``speed``, counted on what is read (the chunker's conservative phoneme
    estimate: "9,876" and an emoji read as words), not on its length (for budgets, never for scheduling)."""
    return estimate_phonemes(text) / SPOKEN_PHONEMES_PER_S / speed


def audio_budget(text: str, speed: float, max_audio_s: float, per: str = "request") -> None:
    """Refuses, before any synthesis, text that would make more audio than one request may (speed counts: the
    same text at 0.25 makes four times the audio, and costs four times the compute)."""
    audio_s = estimated_audio_s(text, speed)
    if audio_s > max_audio_s:
        raise FieldError(
            ErrorCode.BUDGET_EXCEEDED,
            f"This text would make about {audio_s / 60:,.0f} minutes of audio at speed {speed:g}, over this "
            f"server's limit of {max_audio_s / 60:,.0f} minutes per {per}; send less text per {per}, or a higher "
            "speed.",
        )


def voice(value: object) -> str | None:
    """A voice spec (a name, a ``.pt`` path or a blend ``af_heart:0.7,am_adam:0.3``); whether it exists is the
    engine's to say."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise FieldError(ErrorCode.BAD_MESSAGE, f"'voice' must be a non-empty string; got {describe(value)}.")
    if len(value) > MAX_VOICE_SPEC_CHARS:
        raise FieldError(
            ErrorCode.BAD_MESSAGE, f"'voice' is {len(value):,} characters long; the limit is {MAX_VOICE_SPEC_CHARS}."
        )
    return value.strip()


def validate_speed(value: object) -> float | None:
    """The speed as a float, or None when it is not a number in [MIN_SPEED, MAX_SPEED]."""
    speed = finite(value)
    return speed if speed is not None and MIN_SPEED <= speed <= MAX_SPEED else None


def validate_buffer_delay(value: object) -> int | None:
    """The delay in whole milliseconds, or None when it is not a number in [0, MAX_BUFFER_DELAY_MS]."""
    ms = finite(value)
    return round(ms) if ms is not None and 0 <= ms <= MAX_BUFFER_DELAY_MS else None


def speed(value: object) -> float | None:
    """How fast to speak (1: Kokoro's pace)."""
    if value is None:
        return None
    checked = validate_speed(value)
    if checked is None:
        raise FieldError(
            ErrorCode.BAD_SPEED, f"'speed' must be a number from {MIN_SPEED:g} to {MAX_SPEED:g}; got {describe(value)}."
        )
    return checked


def request_id(value: object) -> str | None:
    """The caller's tag for a request, echoed on its events: a string, or a number sent as one."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise FieldError(ErrorCode.BAD_MESSAGE, f"'request_id' must be a string (or a number); got {describe(value)}.")
    text = value if isinstance(value, str) else json.dumps(value)
    if len(text) > MAX_REQUEST_ID_CHARS:
        raise FieldError(
            ErrorCode.BAD_MESSAGE,
            f"'request_id' is {len(text):,} characters long; the limit is {MAX_REQUEST_ID_CHARS}.",
        )
    return text


def request_timestamp(value: object) -> float | None:
    """When the client sent the request, in epoch seconds (the AWS sample's field)."""
    if value is None:
        return None
    seconds = finite(value)
    if seconds is None or seconds <= 0:
        raise FieldError(
            ErrorCode.BAD_MESSAGE,
            f"'request_timestamp' must be the send time in epoch seconds (Python's time.time()); "
            f"got {describe(value)}.",
        )
    if seconds > MILLISECONDS_AFTER:
        raise FieldError(
            ErrorCode.BAD_MESSAGE,
            f"'request_timestamp' {describe(value)} looks like milliseconds; send epoch seconds (time.time(), "
            "or Date.now() / 1000).",
        )
    return seconds


def sample_rate(value: object) -> int | None:
    """The output rate asked for, as a whole number of Hz (which rates a format offers is the transport's check)."""
    if value is None:
        return None
    rate = finite(value)
    if rate is None or not rate.is_integer() or abs(rate) >= 2**31:
        raise FieldError(
            ErrorCode.BAD_MESSAGE, f"'sample_rate' must be a whole number of Hz, like 16000; got {describe(value)}."
        )
    return int(rate)


def check_fresh(timestamp: float | None, now: float, max_age_s: float | None) -> None:
    """Refuses a request older than ``max_age_s`` (the AWS sample's ``MAX_REQUEST_AGE_S``, 56 s: under
    SageMaker's 60 s invocation limit, so a request that waited in a queue is not spoken to nobody). The message
    starts with the code: the sample's client classifies WebSocket error frames by that token in ``message``."""
    if timestamp is None or max_age_s is None:
        return
    age = now - timestamp
    if age > max_age_s:
        raise FieldError(
            ErrorCode.REQUEST_STALE,
            f"request_stale: the request was sent {age:.1f} s ago (request_timestamp), over this server's limit of "
            f"{max_age_s:g} s; its caller has likely given up. Send a fresh request (check the clocks if "
            "this repeats).",
        )
