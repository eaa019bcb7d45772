"""The one interface every engine offers: open a session, talk to it, read its events.

``local`` (Kokoro in this process), ``websocket`` (a container over a WebSocket) and ``sagemaker`` (the same
container through SageMaker's bidirectional stream) all implement these two protocols, so the app, the CLI
and the benchmarks never care where speech is made.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from voicedesk.engine.events import Event, SessionConfig
from voicedesk.engine.model.voices import VoiceInfo

if TYPE_CHECKING:
    pass


class Session(Protocol):
    async def send_text(self, fragment: str) -> None:
        """Adds text; the session chunks it into sentences and speaks each as soon as it is complete."""

    async def flush(self, request_id: str | None = None) -> None:
        """Speaks whatever text is buffered, even without a sentence end; a ``Flushed`` event follows it."""

    async def cancel(self) -> None:
        """Drops queued text and pending synthesis; ``Cancelled`` follows, and no older audio after it."""

    async def configure(
        self, voice: str | None = None, speed: float | None = None, max_buffer_delay_ms: float | None = None
    ) -> None:
        """Changes voice/speed for text sent from now on, and how long held text waits for more (release on quiet)."""

    async def close(self) -> None:
        """Finishes what was asked, then ends the session with ``Closed``."""

    def events(self) -> AsyncIterator[Event]:
        """Every event in order; the iterator ends after ``Closed``."""
        ...

    async def aclose(self) -> None:
        """Ends at once, dropping pending work (the peer is gone, or the app is quitting)."""


@dataclass(frozen=True, slots=True)
class EngineInfo:
    """What an engine is, for people and for callers that must not care which engine they hold."""

    kind: str
    """``local``, ``websocket`` or ``sagemaker``."""
    description: str
    """"Kokoro-82M on CPU", "ws://gpu-box:8080/…", "SageMaker endpoint 'x' in us-east-1"."""
    device: str | None = None
    """The torch device, when the model runs in this process."""


class Engine(Protocol):
    name: str

    @property
    def info(self) -> EngineInfo: ...

    async def voices(self) -> tuple[VoiceInfo, ...] | None:
        """The voices this engine can speak (``downloaded`` says which are usable now); None when it cannot tell
        (a SageMaker endpoint has no listing call)."""
        ...

    async def open_session(self, config: SessionConfig | None = None) -> Session: ...

    async def aclose(self) -> None: ...
