"""The request fields every transport reads (WebSocket, HTTP, Wyoming), checked once so the same value gets the same
answer in the same words (pure). A check returns the value or raises ``FieldError``.

A session's text options (``TextChange``: the ``config`` fields ``lexicon``, ``markup``, ``urls``, ``code``, ``emoji``)
apply to its ``TextSettings``; its lexicon entries merge over the server's and replace its own earlier ones."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from voicedesk.engine.errors import ErrorCode, VoicedeskError
from voicedesk.engine.text.chunking.phoneme_estimate import estimated_audio_s
from voicedesk.engine.text.frontend.lexicon import EMPTY_LEXICON, Lexicon
from voicedesk.engine.text.frontend.settings import DEFAULT_TEXT_SETTINGS, TextSettings

MAX_REQUEST_ID_CHARS = 200
MAX_VOICE_SPEC_CHARS = 400
"""Longest voice spec: a blend of many voices with weights, as the picker writes it, fits easily."""
MIN_SPEED = 0.25
MAX_SPEED = 4.0
MAX_BUFFER_DELAY_MS = 30_000
"""Longest accepted ``max_buffer_delay_ms``: held text must never wait longer than a listener would."""
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


def required_text(value: object, key: str = "text") -> str:
    """A string (a streamed fragment may be blank: whether that is refused is the caller's to say)."""
    if not isinstance(value, str):
        got = "nothing" if value is None else describe(value)
        raise FieldError(
            ErrorCode.BAD_MESSAGE, f"'{key}' is required and must be a string (the text to speak); got {got}."
        )
    return value


def not_blank(text: str, key: str = "text") -> str:
    if not text.strip():
        raise FieldError(ErrorCode.EMPTY_TEXT, f"'{key}' is empty; give some text to speak.")
    return text


def text(value: object, max_chars: int, key: str = "text") -> str:
    """The text to speak: a string that is not blank, of at most ``max_chars`` characters."""
    checked = not_blank(required_text(value, key), key)
    text_length(len(checked), max_chars, f"'{key}'")
    return checked


def text_length(chars: int, max_chars: int, what: str) -> None:
    """Refuses a request's text (``what``: whole or streamed so far) of more than ``max_chars`` characters."""
    if chars > max_chars:
        raise FieldError(
            ErrorCode.TEXT_TOO_LONG,
            f"{what} has {chars:,} characters, over this server's limit of {max_chars:,}; split it into several "
            "requests, or stream it.",
        )


def audio_budget(text: str, speed: float, max_audio_s: float, per: str = "request") -> None:
    """Refuses text that would make more audio than one request may; speed counts (0.25 makes four times the audio)."""
    audio_s = estimated_audio_s(text, speed)
    if audio_s > max_audio_s:
        raise FieldError(
            ErrorCode.BUDGET_EXCEEDED,
            f"This text would make about {audio_s / 60:,.0f} minutes of audio at speed {speed:g}, over this "
            f"server's limit of {max_audio_s / 60:,.0f} minutes per {per}; send less text per {per}, or a higher "
            "speed.",
        )


def voice(value: object, key: str = "voice") -> str | None:
    """A voice spec (a name, a ``.pt`` path or a blend); whether it exists is the engine's to say."""
    return string(value, key, MAX_VOICE_SPEC_CHARS)


def string(value: object, key: str, limit: int = 200) -> str | None:
    """An optional string: absent (None), or not blank and at most ``limit`` characters; returned stripped."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise FieldError(ErrorCode.BAD_MESSAGE, f"'{key}' must be a non-empty string; got {describe(value)}.")
    if len(value) > limit:
        raise FieldError(ErrorCode.BAD_MESSAGE, f"'{key}' is {len(value):,} characters long; the limit is {limit}.")
    return value.strip()


def choice(value: object, key: str, choices: tuple[str, ...]) -> str | None:
    """One of ``choices``, in any case (``MP3`` is ``mp3``); None when absent."""
    if value is None:
        return None
    if not isinstance(value, str) or value.strip().lower() not in choices:
        raise FieldError(ErrorCode.BAD_MESSAGE, f"'{key}' must be one of {', '.join(choices)}; got {describe(value)}.")
    return value.strip().lower()


def flag(value: object, key: str) -> bool | None:
    """true or false; None when absent."""
    if value is None or isinstance(value, bool):
        return value
    raise FieldError(ErrorCode.BAD_MESSAGE, f"'{key}' must be true or false; got {describe(value)}.")


def _bad_speed(value: object, key: str) -> FieldError:
    return FieldError(
        ErrorCode.BAD_SPEED, f"'{key}' must be a number from {MIN_SPEED:g} to {MAX_SPEED:g}; got {describe(value)}."
    )


def _bad_buffer_delay(value: object, key: str) -> FieldError:
    return FieldError(
        ErrorCode.BAD_MESSAGE,
        f"'{key}' must be a number of milliseconds from 0 to {MAX_BUFFER_DELAY_MS:,}; got {describe(value)}.",
    )


def speed(value: object, key: str = "speed") -> float | None:
    """How fast to speak (1: Kokoro's pace), from MIN_SPEED to MAX_SPEED."""
    checked = speed_number(value, key)
    if checked is not None and not MIN_SPEED <= checked <= MAX_SPEED:
        raise _bad_speed(value, key)
    return None if checked is None else float(checked)


def buffer_delay(value: object, key: str = "max_buffer_delay_ms") -> int | None:
    """In whole milliseconds, from 0 to MAX_BUFFER_DELAY_MS."""
    checked = buffer_delay_number(value, key)
    if checked is not None and not 0 <= checked <= MAX_BUFFER_DELAY_MS:
        raise _bad_buffer_delay(value, key)
    return None if checked is None else round(checked)


def speed_number(value: object, key: str = "speed") -> float | None:
    """``speed`` if it is a number, in range or not: the session refuses what is out of range, in its turn."""
    return _number(value, key, _bad_speed)


def buffer_delay_number(value: object, key: str = "max_buffer_delay_ms") -> float | None:
    return _number(value, key, _bad_buffer_delay)


def _number(value: object, key: str, refusal: Callable[[object, str], FieldError]) -> float | None:
    if value is None:
        return None
    if finite(value) is None:
        raise refusal(value, key)
    return value  # type: ignore[return-value]  # as sent (9, not 9.0), so a later refusal shows it so


def request_id(value: object, key: str = "request_id") -> str | None:
    """The caller's tag for a request, echoed on its events: a string, or a number sent as one."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise FieldError(ErrorCode.BAD_MESSAGE, f"'{key}' must be a string (or a number); got {describe(value)}.")
    text = value if isinstance(value, str) else json.dumps(value)
    if len(text) > MAX_REQUEST_ID_CHARS:
        raise FieldError(
            ErrorCode.BAD_MESSAGE, f"'{key}' is {len(text):,} characters long; the limit is {MAX_REQUEST_ID_CHARS}."
        )
    return text


def request_timestamp(value: object, key: str = "request_timestamp") -> float | None:
    """When the client sent the request, in epoch seconds (the AWS sample's field)."""
    if value is None:
        return None
    seconds = finite(value)
    if seconds is None or seconds <= 0:
        raise FieldError(
            ErrorCode.BAD_MESSAGE,
            f"'{key}' must be the send time in epoch seconds (Python's time.time()); got {describe(value)}.",
        )
    if seconds > MILLISECONDS_AFTER:
        raise FieldError(
            ErrorCode.BAD_MESSAGE,
            f"'{key}' {describe(value)} looks like milliseconds; send epoch seconds (time.time(), "
            "or Date.now() / 1000).",
        )
    return seconds


def sample_rate(value: object, key: str = "sample_rate") -> int | None:
    """The output rate asked for, as a whole number of Hz (which rates a format offers is the transport's check)."""
    if value is None:
        return None
    rate = finite(value)
    if rate is None or not rate.is_integer() or abs(rate) >= 2**31:
        raise FieldError(
            ErrorCode.BAD_MESSAGE, f"'{key}' must be a whole number of Hz, like 16000; got {describe(value)}."
        )
    return int(rate)


def check_fresh(timestamp: float | None, now: float, max_age_s: float | None) -> None:
    """Refuses a request older than ``max_age_s`` (the AWS sample's 56 s); the message starts with the code."""
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


TEXT_OPTIONS = ("markup", "urls", "code", "emoji")
"""The ``TextSettings`` choices a ``config`` may set by name (the lexicon travels as ``lexicon``)."""


@dataclass(frozen=True, slots=True)
class TextChange:
    """What one ``config`` says about the text options; None leaves a field as it is."""

    lexicon: Lexicon | None = None
    markup: str | None = None
    urls: str | None = None
    code: str | None = None
    emoji: str | None = None

    @property
    def empty(self) -> bool:
        return all(getattr(self, name) is None for name in ("lexicon", *TEXT_OPTIONS))

    def applied_to(self, settings: TextSettings, base: Lexicon = EMPTY_LEXICON) -> TextSettings:
        """``settings`` with this change, a new lexicon merged over ``base``; raises ``TextSettingsError``."""
        changed = {name: value for name in TEXT_OPTIONS if (value := getattr(self, name)) is not None}
        if self.lexicon is not None:
            changed["lexicon"] = self.lexicon.merged_over(base) if base else self.lexicon
        return replace(settings, **changed) if changed else settings


def change_of(settings: TextSettings, base: Lexicon = EMPTY_LEXICON) -> TextChange:
    """What a client sends so a remote session reads text as ``settings`` do (defaults and ``base`` entries left
    out)."""
    own = tuple(entry for entry in settings.lexicon.entries if entry not in base.entries)
    return TextChange(
        lexicon=Lexicon(own) if own else None,
        **{
            name: value
            for name in TEXT_OPTIONS
            if (value := getattr(settings, name)) != getattr(DEFAULT_TEXT_SETTINGS, name)
        },
    )
