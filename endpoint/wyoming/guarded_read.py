"""Reading one Wyoming event with ``voicedesk serve``'s limits: the library's ``async_read_event`` trusts the header (a
2 GB ``data_length`` is read into memory, a silent client holds the connection forever, ``NaN`` passes).

Here the header line is bounded and lengths checked before a byte is read, a client may be idle ``idle_timeout_s``
between events and must finish an event in ``event_timeout_s``, and the JSON must be an object with a string
``type`` and finite numbers; anything else is a ``WyomingInputError``. The event is the library's own ``Event``."""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass

from wyoming.event import Event

from voicedesk.engine.errors import ErrorCode


@dataclass(frozen=True, slots=True)
class ReadLimits:
    max_header_bytes: int = 16 * 1024
    max_data_bytes: int = 256 * 1024
    """Enough for the longest text a request may have (20,000 characters, escaped)."""
    max_payload_bytes: int = 64 * 1024
    """A TTS client sends no audio; a small payload is tolerated, a large one refused."""
    idle_timeout_s: float = 300.0
    event_timeout_s: float = 10.0


class WyomingInputError(Exception):
    """What the client sent cannot be read as a Wyoming event; the connection is answered, then closed."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class ClientIdle(Exception):
    """Nothing came for ``idle_timeout_s`` between events."""


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:24]} is out of range")
    return value


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not a number JSON allows")


def parse_object(raw: bytes, what: str) -> dict[str, object]:
    """A JSON object from the client, or ``WyomingInputError``: never a traceback, never a non-finite number."""
    try:
        value = json.loads(raw, parse_float=_finite, parse_constant=_refuse_constant)
    except RecursionError:
        raise WyomingInputError(ErrorCode.BAD_JSON, f"The event's {what} is nested too deeply.") from None
    except ValueError as exc:  # also UnicodeDecodeError and json.JSONDecodeError
        reason = str(exc) if "out of range" in str(exc) or "JSON allows" in str(exc) else "it is not valid JSON"
        raise WyomingInputError(ErrorCode.BAD_JSON, f"The event's {what} could not be read: {reason}.") from None
    if not isinstance(value, dict):
        raise WyomingInputError(ErrorCode.BAD_MESSAGE, f"The event's {what} must be a JSON object.")
    return value


def _length(header: dict[str, object], key: str, limit: int) -> int:
    value = header.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise WyomingInputError(ErrorCode.BAD_MESSAGE, f"'{key}' must be a whole number of bytes.")
    if value > limit:
        raise WyomingInputError(
            ErrorCode.FRAME_TOO_LARGE,
            f"'{key}' is {value:,} bytes; this server reads at most {limit:,}. Send shorter text per event.",
        )
    return value


def parse_header(line: bytes, limits: ReadLimits) -> tuple[str, dict[str, object], int, int]:
    """The event type, inline data, data length and payload length of one header line (pure)."""
    header = parse_object(line, "header")
    kind = header.get("type")
    if not isinstance(kind, str) or not kind or len(kind) > 64:
        raise WyomingInputError(ErrorCode.BAD_MESSAGE, "Every event needs a 'type': a short string.")
    data = header.get("data", {})
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise WyomingInputError(ErrorCode.BAD_MESSAGE, "An event's 'data' must be a JSON object.")
    data_length = _length(header, "data_length", limits.max_data_bytes)
    payload_length = _length(header, "payload_length", limits.max_payload_bytes)
    return kind, data, data_length, payload_length


async def read_event(reader: asyncio.StreamReader, limits: ReadLimits, idle_s: float | None = None) -> Event | None:
    """The next event; None at the end of the stream; raises ``ClientIdle`` or ``WyomingInputError``."""
    loop = asyncio.get_running_loop()
    started = False
    try:
        async with asyncio.timeout(limits.idle_timeout_s if idle_s is None else idle_s) as deadline:
            first = await reader.read(1)
            if not first:
                return None
            started = True
            deadline.reschedule(loop.time() + limits.event_timeout_s)
            line = first if first == b"\n" else first + await _header_rest(reader, limits.max_header_bytes)
            kind, data, data_length, payload_length = parse_header(line, limits)
            if data_length:
                data = {**data, **parse_object(await reader.readexactly(data_length), "data")}
            payload = await reader.readexactly(payload_length) if payload_length else None
    except TimeoutError:
        if not started:
            raise ClientIdle() from None
        raise WyomingInputError(
            ErrorCode.BAD_MESSAGE,
            f"An event started but did not arrive whole within {limits.event_timeout_s:g} s, so the connection was "
            "closed; send each event (header, data, payload) at once.",
        ) from None
    except asyncio.IncompleteReadError:
        return None  # the client left mid-event
    return Event(type=kind, data=data, payload=payload)


async def _header_rest(reader: asyncio.StreamReader, max_bytes: int) -> bytes:
    try:
        rest = await reader.readuntil(b"\n")
    except asyncio.LimitOverrunError:
        rest = b""
    if not rest or len(rest) + 1 > max_bytes:
        raise WyomingInputError(
            ErrorCode.FRAME_TOO_LARGE, f"An event header is longer than {max_bytes:,} bytes (or never ends)."
        )
    return rest
