"""The in-process engine: ``SessionCore`` driven by asyncio, synthesis on the shared scheduler's worker.

The container's WebSocket handler wraps this same ``LocalSession`` around its own synthesizer, so local and
remote speech share one implementation of session semantics.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from engine.audio import float_to_pcm16
from engine.chunker import IncrementalSentenceChunker
from engine.errors import ErrorCode, VoicedeskError
from engine.event_stream import EventStream
from engine.events import Error, Event, SessionConfig, WordTiming
from engine.scheduler import SchedulerClosed, SynthesisScheduler
from engine.seams import shape_sentence
from engine.session import SessionCore, SessionLimits, SynthesisJob
from engine.synthesis import Synthesizer

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RenderedSentence:
    pcm: bytes
    duration_s: float
    words: tuple[WordTiming, ...]
    synthesis_s: float


def render_sentence(synthesizer: Synthesizer, job: SynthesisJob) -> RenderedSentence:
    """Synthesize one sentence and shape its edges for a seamless join. Runs on the worker thread."""
    started = time.perf_counter()
    result = synthesizer.synthesize(job.text, job.voice, job.speed)
    shaped = shape_sentence(result.audio, job.text, result.words)
    pcm = float_to_pcm16(shaped.audio)
    return RenderedSentence(pcm, shaped.duration_s, shaped.words, time.perf_counter() - started)


class LocalSession:
    """One conversation with an in-process synthesizer (see ``engine.api.Session``)."""

    def __init__(
        self,
        synthesizer: Synthesizer,
        scheduler: SynthesisScheduler,
        config: SessionConfig | None = None,
        limits: SessionLimits | None = None,
        chunker_factory: Callable[[], IncrementalSentenceChunker] = IncrementalSentenceChunker,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.id = uuid.uuid4().hex
        self._synthesizer = synthesizer
        self._scheduler = scheduler
        self._core = SessionCore(chunker_factory(), config or SessionConfig(), limits or SessionLimits())
        self._clock = clock
        self._events = EventStream()
        self._in_flight: asyncio.Future[RenderedSentence] | None = None
        self._utterance_t0: float | None = None

    @property
    def core(self) -> SessionCore:
        return self._core

    @property
    def config(self) -> SessionConfig:
        return self._core.config

    # ---- Session API -------------------------------------------------------------------------------

    async def send_text(self, fragment: str) -> None:
        self._emit(self._core.send_text(fragment))
        self._pump()

    async def flush(self, request_id: str | None = None) -> None:
        self._emit(self._core.flush(request_id))
        self._pump()

    async def cancel(self) -> None:
        self._scheduler.cancel_session(self.id)
        self._in_flight = None
        self._utterance_t0 = None
        self._emit(self._core.cancel())
        self._pump()

    async def configure(self, voice: str | None = None, speed: float | None = None) -> None:
        if voice is not None:
            try:
                voice = await asyncio.to_thread(self._synthesizer.check_voice, voice)
            except VoicedeskError as exc:
                self._emit([Error(exc.code, exc.message)])
                return
        self._emit(self._core.configure(voice, speed))

    async def close(self) -> None:
        self._emit(self._core.close())
        self._pump()

    async def aclose(self) -> None:
        self._scheduler.cancel_session(self.id)
        self._in_flight = None
        self._emit(self._core.abort("aborted"))

    def events(self) -> AsyncIterator[Event]:
        return aiter(self._events)

    # ---- internals ---------------------------------------------------------------------------------

    def _emit(self, events: list[Event]) -> None:
        self._events.emit(events)

    def _pump(self) -> None:
        if self._in_flight is not None:
            return
        handed = self._core.next_job()
        if handed is None:
            return
        job, events = handed
        self._emit(events)
        now = self._clock()
        if job.first_of_utterance or self._utterance_t0 is None:
            self._utterance_t0 = None
            deadline = now
        else:
            deadline = self._utterance_t0 + job.audio_before_s
        synthesizer = self._synthesizer
        try:
            future = self._scheduler.submit(
                self.id,
                lambda: render_sentence(synthesizer, job),
                urgent=job.first_of_utterance,
                deadline=deadline,
            )
        except SchedulerClosed:
            self._emit(self._core.abort("shutting down"))
            return
        self._in_flight = future
        future.add_done_callback(lambda f: self._on_rendered(job, f))

    def _on_rendered(self, job: SynthesisJob, future: asyncio.Future[RenderedSentence]) -> None:
        if future is self._in_flight:
            self._in_flight = None
        if future.cancelled() or not self._core.is_current(job):
            self._pump()
            return
        exc = future.exception()
        if exc is None:
            rendered = future.result()
            if job.first_of_utterance or self._utterance_t0 is None:
                self._utterance_t0 = self._clock() - job.audio_before_s
            self._emit(
                self._core.job_done(job, rendered.pcm, rendered.duration_s, rendered.words, rendered.synthesis_s)
            )
        elif isinstance(exc, VoicedeskError):
            self._emit(self._core.job_failed(job, exc.code, exc.message))
        else:
            log.error("synthesis of sentence %d failed", job.seq, exc_info=exc)
            self._emit(
                self._core.job_failed(job, ErrorCode.SYNTHESIS_FAILED, f"Synthesis failed: {type(exc).__name__}: {exc}")
            )
        self._pump()


class LocalEngine:
    """Kokoro on this machine: one synthesizer and one scheduler shared by every session it opens."""

    name = "local"

    def __init__(
        self,
        synthesizer: Synthesizer,
        scheduler: SynthesisScheduler | None = None,
        limits: SessionLimits | None = None,
    ) -> None:
        self.synthesizer = synthesizer
        self.scheduler = scheduler or SynthesisScheduler()
        self.limits = limits or SessionLimits()
        self._owns_scheduler = scheduler is None

    async def open_session(self, config: SessionConfig | None = None) -> LocalSession:
        config = config or SessionConfig()
        voice = await asyncio.to_thread(self.synthesizer.check_voice, config.voice)
        session = LocalSession(self.synthesizer, self.scheduler, SessionConfig(voice), self.limits)
        if config.speed != 1.0:
            await session.configure(speed=config.speed)
        return session

    async def aclose(self) -> None:
        if self._owns_scheduler:
            await self.scheduler.aclose()
