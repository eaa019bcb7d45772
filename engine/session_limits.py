"""What a session and its connection accept, and the compute budget (pure), shared with the HTTP routes. Messages never
echo a huge value back."""

from __future__ import annotations

from dataclasses import dataclass

from voicedesk.engine import request_fields as fields
from voicedesk.engine.errors import ErrorCode
from voicedesk.engine.events import Error
from voicedesk.engine.protocol import DEFAULT_MAX_FRAME_BYTES


@dataclass(frozen=True, slots=True)
class SessionLimits:
    max_message_chars: int = 20_000
    """Largest text accepted in one ``send_text`` or whole request."""
    max_buffered_chars: int = 100_000
    """Text accepted but not yet synthesized (chunker buffer + queued sentences)."""
    max_audio_ahead_s: float = 5.0
    """Audio synthesized but not yet taken by the listener; above it the next sentence waits (backpressure)."""
    max_request_audio_s: float = 1_200.0
    """Compute budget of one whole request or message, in seconds of audio (text length ÷ speed, estimated)."""
    max_session_audio_s: float = 4 * 3_600.0
    """Compute budget of one session, in seconds of audio synthesized over its life."""


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    """Largest request frame decoded; bigger ones get ``frame_too_large``."""
    idle_timeout_s: float = 300.0
    """A client that neither gives text to speak nor takes audio for this long, while the server owes it
    nothing, is closed (``idle_timeout``). ``config``, ``flush``, empty text and junk do not keep it open."""
    frames_per_s: float = 100.0
    """Sustained client frames read per second (a token bucket); a faster sender is read later, never dropped."""
    frame_burst: int = 400
    """Frames read at once above the sustained rate."""
    junk_per_s: float = 2.0
    """Frames that cannot be understood, per second, sustained; each is answered with its error."""
    junk_burst: int = 40
    """Junk frames answered at once; one more than the budget allows closes the connection (1008)."""


def check_text(
    text: str,
    speed: float,
    buffered_chars: int,
    limits: SessionLimits,
    request_id: str | None = None,
    whole: bool = False,
) -> Error | None:
    """Why ``text`` (streamed, or a ``whole`` request's) may not be accepted now (too long, buffer full, over the
    compute budget), or None. A whole request is told as the HTTP routes tell it."""
    try:
        fields.text_length(len(text), limits.max_message_chars, "'text'" if whole else "This text")
        if buffered_chars + len(text) > limits.max_buffered_chars:
            return Error(
                ErrorCode.BUFFER_FULL,
                f"This session already holds {buffered_chars:,} characters not yet spoken "
                f"(limit {limits.max_buffered_chars:,}); this text was not accepted. "
                "Wait for speech to catch up, or cancel.",
                request_id=request_id,
            )
        fields.audio_budget(text, speed, limits.max_request_audio_s, "request" if whole else "message")
    except fields.FieldError as exc:
        return Error(exc.code, exc.message, request_id=request_id)
    return None
