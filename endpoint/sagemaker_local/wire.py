"""AWS event-stream framing as SageMaker's bidirectional and response-stream APIs use it (pure, no I/O).

The codec itself is ``smithy_aws_event_stream`` (the one the SDK uses); this module only knows how SageMaker
wraps it: every request event is a signed envelope (``:date``, ``:chunk-signature``) whose payload is the inner
``PayloadPart`` message, an envelope with an empty payload ends the input, and response events go out unsigned.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from io import BytesIO

from smithy_aws_event_stream.events import Event, EventMessage

PRELUDE_BYTES = 12
EVENTSTREAM_CONTENT_TYPE = "application/vnd.amazon.eventstream"


class WireError(Exception):
    """Bytes that are not a valid event stream; the stand-in answers with an error instead of guessing."""


@dataclass(frozen=True, slots=True)
class RequestPart:
    """One ``PayloadPart`` the client sent."""

    payload: bytes
    data_type: str | None
    completion_state: str | None = None


@dataclass(frozen=True, slots=True)
class EndOfInput:
    """The signed empty envelope the SDK sends when its input stream closes."""


class FrameSplitter:
    """Cuts a byte stream into event-stream messages; HTTP/2 DATA frames do not align with them."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[EventMessage]:
        self._buffer += data
        messages: list[EventMessage] = []
        while len(self._buffer) >= PRELUDE_BYTES:
            (total_length,) = struct.unpack_from("!I", self._buffer)
            if total_length < PRELUDE_BYTES + 4:
                raise WireError(f"An event-stream frame claims {total_length} bytes, less than its own prelude.")
            if len(self._buffer) < total_length:
                break
            frame = bytes(self._buffer[:total_length])
            del self._buffer[:total_length]
            try:
                event = Event.decode(BytesIO(frame))
            except Exception as exc:
                raise WireError(f"An event-stream frame could not be decoded: {exc}") from exc
            assert event is not None
            messages.append(event.message)
        return messages

    @property
    def pending_bytes(self) -> int:
        return len(self._buffer)


def _header_str(message: EventMessage, name: str) -> str | None:
    value = message.headers.get(name)
    return value if isinstance(value, str) else None


def open_envelope(message: EventMessage) -> RequestPart | EndOfInput | None:
    """The request event inside a (possibly signed) envelope; ``None`` for events that are not PayloadParts."""
    if ":chunk-signature" in message.headers:
        if not message.payload:
            return EndOfInput()
        try:
            inner = Event.decode(BytesIO(message.payload))
        except Exception as exc:
            raise WireError(f"A signed envelope does not hold an event-stream message: {exc}") from exc
        if inner is None:
            return EndOfInput()
        message = inner.message
    if _header_str(message, ":message-type") != "event" or _header_str(message, ":event-type") != "PayloadPart":
        return None
    return RequestPart(
        payload=message.payload,
        data_type=_header_str(message, "DataType"),
        completion_state=_header_str(message, "CompletionState"),
    )


def encode_payload_part(payload: bytes, data_type: str | None = None, completion_state: str | None = None) -> bytes:
    """A response ``PayloadPart`` (unsigned, not enveloped), as the SageMaker router sends it."""
    headers: dict[str, str] = {":message-type": "event", ":event-type": "PayloadPart"}
    if payload:
        headers[":content-type"] = "application/octet-stream"
    if data_type is not None:
        headers["DataType"] = data_type
    if completion_state is not None:
        headers["CompletionState"] = completion_state
    return EventMessage(headers=headers, payload=payload).encode()


def encode_request_part(payload: bytes, data_type: str | None = None) -> bytes:
    """A request ``PayloadPart`` without a signature envelope (what a test peer sends to exercise the splitter)."""
    headers: dict[str, str] = {":message-type": "event", ":event-type": "PayloadPart"}
    if data_type is not None:
        headers["DataType"] = data_type
    return EventMessage(headers=headers, payload=payload).encode()


def encode_exception(exception_type: str, message: str, error_code: str | None = None) -> bytes:
    """A modeled stream exception (``ModelStreamError``, ``InternalStreamFailure``) as an event."""
    body: dict[str, str] = {"Message": message}
    if error_code is not None:
        body["ErrorCode"] = error_code
    headers = {
        ":message-type": "exception",
        ":exception-type": exception_type,
        ":content-type": "application/json",
    }
    return EventMessage(headers=headers, payload=json.dumps(body).encode()).encode()
