"""The in-process engine: the container's own ``SessionCore`` and driver (``engine.session_driver``), on asyncio; a
reader that stops taking events stops synthesis, and the model serves others."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable

from voicedesk.engine.api import EngineInfo, EventStream
from voicedesk.engine.errors import CloseReason, VoicedeskError
from voicedesk.engine.events import Audio, Error, Event, SessionConfig
from voicedesk.engine.limits import SessionLimits
from voicedesk.engine.model.synthesis import Synthesizer
from voicedesk.engine.model.voices import KNOWN_VOICES, LANGUAGES, VoiceInfo
from voicedesk.engine.scheduler import SynthesisScheduler
from voicedesk.engine.session import SessionCore
from voicedesk.engine.session_driver import SessionDriver
from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker
from voicedesk.engine.text.frontend.settings import TextSettings


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
        share: Callable[[], int] | None = None,
    ) -> None:
        self.id = uuid.uuid4().hex
        self._synthesizer = synthesizer
        self._core = SessionCore(chunker_factory(), config or SessionConfig(), limits or SessionLimits())
        self._events = EventStream(on_taken=self._taken)
        self._driver = SessionDriver(self._core, synthesizer, scheduler, self.id, self._events.emit, clock, share=share)

    @property
    def core(self) -> SessionCore:
        return self._core

    @property
    def config(self) -> SessionConfig:
        return self._core.config

    def _now(self) -> float:
        return self._driver.clock()

    # ---- Session API -------------------------------------------------------------------------------

    async def send_text(self, fragment: str) -> None:
        self._driver.apply(self._core.send_text(fragment, self._now()))

    async def synthesize(
        self, text: str, voice: str | None = None, speed: float | None = None, request_id: str | None = None
    ) -> None:
        """A whole request: ``text`` in this voice and speed, answered by ``RequestStarted``/``RequestFinished``."""
        if voice is not None:
            try:
                voice = await self._check_voice(voice)
            except VoicedeskError as exc:
                self._driver.apply([Error(exc.code, exc.message, request_id=request_id, advice=exc.advice)])
                return
        self._driver.apply(self._core.synthesize(text, self._now(), voice, speed, request_id))

    async def flush(self, request_id: str | None = None) -> None:
        self._driver.apply(self._core.flush(self._now(), request_id))

    async def cancel(self) -> None:
        self._driver.interrupt()
        events = self._core.cancel(self._now())
        self._core.audio_consumed(self._events.drop_cancelled_audio(events))  # the reader hears nothing stale
        self._driver.apply(events)

    async def configure(
        self,
        voice: str | None = None,
        speed: float | None = None,
        max_buffer_delay_ms: int | None = None,
        text: TextSettings | None = None,
    ) -> None:
        if voice is not None:
            try:
                voice = await self._check_voice(voice)
            except VoicedeskError as exc:
                self._driver.apply([Error(exc.code, exc.message, advice=exc.advice)])
                return
        self._driver.apply(self._core.configure(voice, speed, max_buffer_delay_ms, text))

    async def close(self) -> None:
        self._driver.apply(self._core.close(self._now()))

    async def wind_down(self) -> None:
        """Server shutdown: the sentence being synthesized finishes, the rest is cancelled, then ``Closed``."""
        self._driver.apply(self._core.wind_down(self._now()))

    async def aclose(self) -> None:
        self._driver.interrupt()
        self._driver.apply(self._core.abort("aborted", self._now()))

    def evict(self, error: Error) -> None:
        """Ends at once, ``error`` (fatal) first: a full server closed it to make room for another client."""
        self._driver.interrupt()
        self._driver.apply([error, *self._core.abort(CloseReason.EVICTED, self._now())])

    def events(self) -> AsyncIterator[Event]:
        return aiter(self._events)

    # ---- internals ---------------------------------------------------------------------------------

    async def _check_voice(self, voice: str) -> str:
        return await asyncio.to_thread(self._synthesizer.check_voice, voice)

    def _taken(self, event: Event) -> None:
        if isinstance(event, Audio):
            self._core.audio_consumed(event.duration_s)
            self._driver.pump()


def device_label(device: str) -> str:
    """ "CPU", or "CUDA (NVIDIA H200)" for a CUDA device (the name when torch can tell it)."""
    if not device.startswith("cuda"):
        return "CPU"
    try:
        import torch

        return f"CUDA ({torch.cuda.get_device_name(torch.device(device))})"
    except Exception:  # the name is decoration; the device is what matters
        return "CUDA"


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

    @property
    def info(self) -> EngineInfo:
        device = str(self.synthesizer.device)
        return EngineInfo("local", f"Kokoro-82M on {device_label(device)}", device)

    async def voices(self) -> tuple[VoiceInfo, ...]:
        catalog = getattr(self.synthesizer, "voice_catalog", None)
        if catalog is not None:
            return tuple(await asyncio.to_thread(catalog))
        names = await asyncio.to_thread(self.synthesizer.list_voices)
        return tuple(VoiceInfo(name, LANGUAGES.get(name[:1], "unknown"), True, name in KNOWN_VOICES) for name in names)

    async def open_session(self, config: SessionConfig | None = None) -> LocalSession:
        config = config or SessionConfig()
        voice = await asyncio.to_thread(self.synthesizer.check_voice, config.voice)
        session = LocalSession(self.synthesizer, self.scheduler, SessionConfig(voice), self.limits)
        await session.configure(speed=config.speed, max_buffer_delay_ms=config.max_buffer_delay_ms, text=config.text)
        if config.report_phonemes:
            session.core.configure(report_phonemes=True)
        return session

    async def aclose(self) -> None:
        if self._owns_scheduler:
            await self.scheduler.aclose()
