"""What every scenario is given: the text, the options, the engine(s), a progress line, a player."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from voicedesk.app.lab.probe import Clock, PlaybackSink
from voicedesk.engine.api import Engine, Session
from voicedesk.engine.events import DEFAULT_MAX_BUFFER_DELAY_MS, SessionConfig
from voicedesk.engine.model.voices import DEFAULT_VOICE

DEFAULT_TEXT = (
    "Sure, I can help with that. The kitchen lights are off and the front door is locked. "
    "Tomorrow looks clear, with a high of twenty one degrees. Would you like me to start the dishwasher now?"
)
SEED_SENTENCES = (
    "The kitchen lights are off now.",
    "The front door is locked as well.",
    "Tomorrow looks clear and warm.",
)
"""The seed's three sentences: no clause marks, so each is one chunk even with the early first fragment."""


@dataclass(frozen=True, slots=True)
class LabConfig:
    text: str = DEFAULT_TEXT
    seed_sentences: tuple[str, ...] = SEED_SENTENCES
    tokens_per_s: float = 20.0
    repeat: int = 3
    voice: str = DEFAULT_VOICE
    max_buffer_delay_ms: int = DEFAULT_MAX_BUFFER_DELAY_MS
    sessions: tuple[int, ...] = (1, 2, 4)
    arrival: str = "spread"
    """Concurrency: 'spread' (independent callers), 'together' (the same instant; the worst case) or both,
    comma-separated (``app.lab.arrivals``); capacity uses the first."""
    target_ttfa_s: float = 0.5
    """Capacity: the time to first audio p95 an instance must keep to."""
    max_sessions: int = 32
    """Capacity: the ramp's ceiling."""
    prebuffer_s: float = 0.15
    """The gapless player's prebuffer, for the stall model (app.player's default)."""
    guard_s: float = 600.0


EngineFactory = Callable[[], Awaitable[Engine]]


@dataclass
class LabContext:
    config: LabConfig
    open_engine: EngineFactory
    """Opens the engine under test (for the local engine: loads the model)."""
    engine_label: str = "local"
    open_engine_b: EngineFactory | None = None
    engine_b_label: str | None = None
    server_url: str | None = None
    """An endpoint's http(s)://host:port for the transport scenario; None: start one in-process when possible."""
    server_token: str | None = None
    player: PlaybackSink | None = None
    progress: Callable[[str], None] = lambda line: None
    clock: Clock = time.monotonic
    engine: Engine | None = None
    engine_open_s: float | None = None
    """How long opening the engine took, when this context opened it (model load and warm-up for local)."""
    engine_b: Engine | None = None
    owns_engines: tuple[bool, bool] = (True, True)
    """Whether closing the context closes engine A, B (False: the caller shares them, e.g. the app's engines)."""
    _closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    @property
    def session_config(self) -> SessionConfig:
        return SessionConfig(voice=self.config.voice, max_buffer_delay_ms=self.config.max_buffer_delay_ms)

    async def get_engine(self) -> Engine:
        if self.engine is None:
            started = self.clock()
            self.engine = await self.open_engine()
            self.engine_open_s = self.clock() - started
            if self.owns_engines[0]:
                self._closers.append(self.engine.aclose)
        return self.engine

    async def get_engine_b(self) -> Engine | None:
        if self.open_engine_b is None:
            return None
        if self.engine_b is None:
            self.engine_b = await self.open_engine_b()
            if self.owns_engines[1]:
                self._closers.append(self.engine_b.aclose)
        return self.engine_b

    async def open_session(self, engine: Engine | None = None) -> tuple[Session, float]:
        """A fresh session and how long opening it took (a remote engine connects here)."""
        engine = engine or await self.get_engine()
        started = self.clock()
        session = await engine.open_session(self.session_config)
        return session, self.clock() - started

    def on_close(self, closer: Callable[[], Awaitable[None]]) -> None:
        self._closers.append(closer)

    async def aclose(self) -> None:
        while self._closers:
            await self._closers.pop()()
