"""Drives one ``SessionCore`` on asyncio: its sentences on the shared scheduler's worker, its timers on the loop; the
owner calls ``apply`` with each input's events so the next job starts."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from voicedesk.engine.audio import float_to_pcm16
from voicedesk.engine.errors import ErrorCode, VoicedeskError
from voicedesk.engine.events import Closed, Event, WordTiming
from voicedesk.engine.model.batch_policy import BatchJob
from voicedesk.engine.model.synthesis import PreparesAhead, SynthesisResult, Synthesizer, WarmsAhead
from voicedesk.engine.scheduler import SchedulerClosed, SynthesisScheduler
from voicedesk.engine.seams import shape_sentence
from voicedesk.engine.session import SHUTDOWN_REASON, SessionCore, SynthesisJob
from voicedesk.engine.text.chunking.phoneme_estimate import estimate_phonemes
from voicedesk.engine.text.frontend.settings import DEFAULT_TEXT_SETTINGS

log = logging.getLogger(__name__)


class Timers(Protocol):
    """Whose deadlines the driver keeps: the core's own, or the server connection's (which adds the idle timeout)."""

    def next_deadline(self) -> float | None: ...

    def timer(self, now: float) -> list[Event]: ...


SPLIT_ABOVE_PHONEMES = 100
"""While other sessions wait for the model, no call of this session is longer than this."""
FIRST_FRAGMENT_PHONEMES = 40
"""A typical early first fragment: while others wait, calls are cut about this short."""
MIN_SPLIT_PHONEMES = 30
"""Parts are never cut shorter than about this, whoever waits."""
QUICK_CALL_S = 0.15
"""When a call of ``SPLIT_ABOVE_PHONEMES`` takes less than this (a GPU), waiting behind one is no hardship: no split."""


def split_threshold(
    waiting: bool, smallest_first: int | None, estimated_call_s: Callable[[int], float | None] | None = None
) -> int | None:
    """How long one call of this session may be (phonemes; None: unbounded, when nobody else waits or the model is
    fast): about the smallest first sentence waiting, within [MIN_SPLIT, SPLIT_ABOVE]."""
    if not waiting:
        return None
    if estimated_call_s is not None:
        long_call = estimated_call_s(SPLIT_ABOVE_PHONEMES)
        if long_call is not None and long_call < QUICK_CALL_S:
            return None
    size = FIRST_FRAGMENT_PHONEMES if smallest_first is None else smallest_first
    return max(MIN_SPLIT_PHONEMES, min(SPLIT_ABOVE_PHONEMES, size))


@dataclass(frozen=True, slots=True)
class RenderedSentence:
    pcm: bytes
    duration_s: float
    words: tuple[WordTiming, ...]
    synthesis_s: float
    phonemes: str = ""
    """What the model received (``SynthesisResult.phonemes``)."""


@dataclass(frozen=True, slots=True)
class SynthesizedSentence:
    """What the model's thread hands back: the synthesizer's result and how long it took (not yet PCM16)."""

    result: SynthesisResult
    synthesis_s: float


def synthesize_sentence(
    synthesizer: Synthesizer, job: SynthesisJob, should_stop: Callable[[], bool] | None = None
) -> SynthesizedSentence:
    """Synthesize one sentence. Runs on the model's thread, which does nothing else with it."""
    started = time.perf_counter()
    text = job.text if job.markup_text is None else job.markup_text
    if job.text_settings == DEFAULT_TEXT_SETTINGS:
        # Synthesizers written before the text front-end take no settings; the defaults need none.
        result = synthesizer.synthesize(text, job.voice, job.speed, should_stop)
    else:
        result = synthesizer.synthesize(text, job.voice, job.speed, should_stop, settings=job.text_settings)
    return SynthesizedSentence(result, time.perf_counter() - started)


def finish_sentence(job: SynthesisJob, result: SynthesisResult, synthesis_s: float) -> RenderedSentence:
    """A synthesized sentence with its edges shaped, as PCM16 (also for sentences of a batched forward)."""
    shaped = shape_sentence(result.audio, job.text, result.words)
    pcm = float_to_pcm16(shaped.audio)
    return RenderedSentence(pcm, shaped.duration_s, shaped.words, synthesis_s, result.phonemes)


class SessionDriver:
    def __init__(
        self,
        core: SessionCore,
        synthesizer: Synthesizer,
        scheduler: SynthesisScheduler,
        session_id: str,
        emit: Callable[[list[Event]], None],
        clock: Callable[[], float] = time.monotonic,
        timers: Timers | None = None,
        in_hand: Callable[[float], float] | None = None,
        share: Callable[[], int] | None = None,
    ) -> None:
        self.core = core
        self._timers: Timers = timers if timers is not None else core
        self._in_hand = in_hand
        """Audio its listener has not heard yet: a new utterance's first sentence is urgent only when it is none."""
        self._share = share
        """Sessions its client's address holds (the server's): a quieter address's first sentence goes first."""
        self.session_id = session_id
        self._synthesizer = synthesizer
        self._scheduler = scheduler
        self._emit = emit
        self.clock = clock
        self._in_flight: asyncio.Future[RenderedSentence] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_deadline: float | None = None
        self._utterance_t0: float | None = None
        self._stopped = False

    def apply(self, events: list[Event]) -> None:
        """Emits the events of an input just given to the core, then starts due work and re-arms the timer."""
        self._emit(events)
        if any(isinstance(event, Closed) for event in events):
            self.stop()
            return
        self.pump()

    def interrupt(self) -> None:
        """Drops this session's queued jobs and stops its running one (call before ``core.cancel``/``abort``)."""
        self._scheduler.cancel_session(self.session_id)
        self._in_flight = None
        self._utterance_t0 = None

    def stop(self) -> None:
        """No more jobs or timers (the session ended)."""
        self._stopped = True
        self.interrupt()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_deadline = None

    def pump(self) -> None:
        if self._stopped:
            return
        if self._in_flight is None:
            self._start_next()
        if self._in_flight is not None:
            self._prepare_upcoming()
        self._warm_arriving()
        self._arm_timer()

    # ---- internals ---------------------------------------------------------------------------------

    def _start_next(self) -> None:
        now = self.clock()
        waiting, smallest_first = self._scheduler.others_waiting(self.session_id)
        split = split_threshold(waiting, smallest_first, self._scheduler.estimated_call_s)
        handed = self.core.next_job(now, split_above_phonemes=split)
        if handed is None:
            return
        job, events = handed
        self._emit(events)
        in_hand = self._in_hand(now) if self._in_hand is not None else 0.0
        if job.first_of_utterance or self._utterance_t0 is None:
            self._utterance_t0 = None
            deadline = now + in_hand
        else:
            deadline = self._utterance_t0 + job.audio_before_s
        synthesizer = self._synthesizer
        if isinstance(synthesizer, PreparesAhead) and synthesizer.prepare_workers:
            # Its front-end and G2P start in a worker now, while it waits for the model behind other sessions' work.
            text = job.text if job.markup_text is None else job.markup_text
            synthesizer.prepare_ahead(text, job.voice, job.text_settings)
        interrupt = threading.Event()
        try:
            future = self._scheduler.submit(
                self.session_id,
                lambda: synthesize_sentence(synthesizer, job, interrupt.is_set),
                urgent=job.first_of_utterance and in_hand <= 0,
                deadline=deadline,
                interrupt=interrupt,
                size=estimate_phonemes(job.text),
                batch_item=self._batch_item(job),
                share=self._share() if self._share is not None else 0,
            )
        except SchedulerClosed:
            self.apply(self.core.abort(SHUTDOWN_REASON, now))
            return
        self._in_flight = future
        future.add_done_callback(lambda f: self._on_synthesized(job, f))

    def _prepare_upcoming(self) -> None:
        """The next sentence's front-end and G2P run beside the model, so its first audio waits only for the model."""
        upcoming = self.core.upcoming()
        if upcoming is not None and isinstance(self._synthesizer, PreparesAhead):
            self._synthesizer.prepare_ahead(*upcoming)

    def _warm_arriving(self) -> None:
        """The arriving sentence's numbers and units are normalized now, so its release does not pay for them."""
        if isinstance(self._synthesizer, WarmsAhead) and (arriving := self.core.arriving()) is not None:
            self._synthesizer.warm(*arriving)

    def _batch_item(
        self, job: SynthesisJob
    ) -> tuple[BatchJob, Callable[[SynthesisResult, float], SynthesizedSentence]] | None:
        """What the scheduler's batch runner needs to run this job with others' (None while it batches nothing)."""
        if self._scheduler.batch_runner is None:
            return None
        text = job.text if job.markup_text is None else job.markup_text
        return BatchJob(text, job.voice, job.speed, job.text_settings), SynthesizedSentence

    def _on_synthesized(self, job: SynthesisJob, future: asyncio.Future[SynthesizedSentence]) -> None:
        """Makes the sentence's PCM16 on an executor thread (off the loop and the model's thread), then delivers it."""
        if self._stopped or future is not self._in_flight or future.cancelled() or future.exception() is not None:
            self._on_rendered(job, future)  # type: ignore[arg-type]
            return
        synthesized = future.result()
        encoding = asyncio.get_running_loop().run_in_executor(
            None, finish_sentence, job, synthesized.result, synthesized.synthesis_s
        )
        self._in_flight = encoding
        encoding.add_done_callback(lambda f: self._on_rendered(job, f))

    def _on_rendered(self, job: SynthesisJob, future: asyncio.Future[RenderedSentence]) -> None:
        if future is self._in_flight:
            self._in_flight = None
        # Taken even when ignored: an interrupted job's exception left unread makes asyncio log a traceback.
        exc = None if future.cancelled() else future.exception()
        if self._stopped:
            return
        now = self.clock()
        if future.cancelled() or not self.core.is_current(job):
            self.pump()
            return
        if exc is None:
            rendered = future.result()
            if job.first_of_utterance or self._utterance_t0 is None:
                in_hand = self._in_hand(now) if self._in_hand is not None else 0.0
                self._utterance_t0 = now + in_hand - job.audio_before_s
            events = self.core.job_done(
                job, rendered.pcm, rendered.duration_s, rendered.words, rendered.synthesis_s, now, rendered.phonemes
            )
        elif isinstance(exc, VoicedeskError):
            events = self.core.job_failed(job, exc.code, exc.message, now)
        else:
            log.error("synthesis of sentence %d failed", job.seq, exc_info=exc)
            message = f"Synthesis of this sentence failed ({type(exc).__name__}); it was skipped."
            events = self.core.job_failed(job, ErrorCode.SYNTHESIS_FAILED, message, now)
        self.apply(events)

    def _arm_timer(self) -> None:
        deadline = self._timers.next_deadline()
        if deadline == self._timer_deadline:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_deadline = deadline
        if deadline is not None:
            delay = max(0.0, deadline - self.clock())
            self._timer = asyncio.get_running_loop().call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_deadline = None
        if self._stopped:
            return
        self.apply(self._timers.timer(self.clock()))
