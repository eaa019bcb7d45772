"""AWS event-stream framing as SageMaker's streaming APIs use it (pure): the codec is ``smithy_aws_event_stream``;
request events are signed envelopes around a ``PayloadPart``, an empty one ends the input, responses go unsigned."""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass
from io import BytesIO

from smithy_aws_event_stream.events import MAX_HEADERS_LENGTH, MAX_PAYLOAD_LENGTH, Event, EventMessage

PRELUDE_BYTES = 12
CRC_BYTES = 4
EVENTSTREAM_CONTENT_TYPE = "application/vnd.amazon.eventstream"
MAX_MESSAGE_BYTES = PRELUDE_BYTES + MAX_HEADERS_LENGTH + MAX_PAYLOAD_LENGTH + CRC_BYTES
"""The largest message the event-stream format allows (128 KiB of headers, 16 MiB of payload)."""


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
    """Cuts a byte stream into event-stream messages (HTTP/2 DATA frames do not align with them), checking each
    prelude's CRC and lengths before buffering more, so a hostile length costs nothing."""

    def __init__(self, max_message_bytes: int = MAX_MESSAGE_BYTES) -> None:
        self._buffer = bytearray()
        self._max_message_bytes = max_message_bytes
        self._checked_prelude = False

    def feed(self, data: bytes) -> list[EventMessage]:
        self._buffer += data
        messages: list[EventMessage] = []
        while len(self._buffer) >= PRELUDE_BYTES:
            total_length = self._check_prelude()
            if len(self._buffer) < total_length:
                break
            self._checked_prelude = False
            frame = bytes(self._buffer[:total_length])
            del self._buffer[:total_length]
            try:
                event = Event.decode(BytesIO(frame))
            except Exception as exc:
                raise WireError(f"An event-stream frame could not be decoded: {exc}") from exc
            assert event is not None
            messages.append(event.message)
        return messages

    def _check_prelude(self) -> int:
        total_length, headers_length, prelude_crc = struct.unpack_from("!III", self._buffer)
        if self._checked_prelude:
            return total_length
        if zlib.crc32(self._buffer[:8]) != prelude_crc:
            raise WireError("An event-stream message has a bad prelude checksum (not an event stream?).")
        if total_length < PRELUDE_BYTES + headers_length + CRC_BYTES:
            raise WireError(f"An event-stream message claims {total_length} bytes, less than its own parts.")
        if headers_length > MAX_HEADERS_LENGTH:
            raise WireError(
                f"An event-stream message claims {headers_length:,} bytes of headers, over the format's "
                f"limit of {MAX_HEADERS_LENGTH:,}."
            )
        if total_length > self._max_message_bytes:
            raise WireError(
                f"An event-stream message claims {total_length:,} bytes, over the limit of "
                f"{self._max_message_bytes:,}; send smaller parts."
            )
        self._checked_prelude = True
        return total_length

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
