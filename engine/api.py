"""The one interface every engine offers (local, websocket, sagemaker), so the app, the CLI and the benchmarks never
care where speech is made. The producer is told when each event is taken (how far ahead to synthesize)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from voicedesk.engine.events import Audio, Closed, Event, SessionConfig, drop_cancelled_audio
from voicedesk.engine.model.voices import VoiceInfo
from voicedesk.engine.text.frontend.settings import TextSettings


class Session(Protocol):
    async def send_text(self, fragment: str) -> None:
        """Adds text; the session chunks it into sentences and speaks each as soon as it is complete."""

    async def flush(self, request_id: str | None = None) -> None:
        """Speaks whatever text is buffered, even without a sentence end; a ``Flushed`` event follows it."""

    async def cancel(self) -> None:
        """Drops queued text and pending synthesis; ``Cancelled`` follows, and no older audio after it."""

    async def configure(
        self,
        voice: str | None = None,
        speed: float | None = None,
        max_buffer_delay_ms: float | None = None,
        text: TextSettings | None = None,
    ) -> None:
        """Changes voice, speed, release delay and text reading (``text`` replaces the previous options and lexicon)."""

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
        """The voices this engine can speak; None when it cannot tell (a SageMaker endpoint has no listing call)."""
        ...

    async def open_session(self, config: SessionConfig | None = None) -> Session: ...

    async def aclose(self) -> None: ...


class EventStream:
    def __init__(self, on_taken: Callable[[Event], None] | None = None) -> None:
        self._queue: deque[Event] = deque()
        self._ready = asyncio.Event()
        self._on_taken = on_taken
        self.finished = False
        """True once ``Closed`` was put in; later events are dropped."""

    def emit(self, events: Iterable[Event]) -> None:
        for event in events:
            if self.finished:
                return
            self._queue.append(event)
            self._ready.set()
            if isinstance(event, Closed):
                self.finished = True

    def drop_cancelled_audio(self, events: Iterable[Event]) -> float:
        """Drops queued audio of a cancelled utterance (``events.drop_cancelled_audio``); returns its seconds."""
        self._queue, dropped_s = drop_cancelled_audio(self._queue, events, _audio_of)
        return dropped_s

    async def __aiter__(self) -> AsyncIterator[Event]:
        while True:
            while not self._queue:
                self._ready.clear()
                await self._ready.wait()
            event = self._queue.popleft()
            if self._on_taken is not None:
                self._on_taken(event)
            yield event
            if isinstance(event, Closed):
                return


def _audio_of(event: Event) -> tuple[int, float] | None:
    return (event.seq, event.duration_s) if isinstance(event, Audio) else None
