"""Shares one model among many sessions: which session's next sentence is synthesized next.

Policy (``DeadlineQueue``, pure): the first sentence of an utterance is the most urgent, because a listener is
waiting in silence for it; among those, the one released earliest goes first. Every other sentence is due when
the audio already delivered for its utterance runs out (earliest deadline first), so a session with seconds of
audio buffered yields the model to one whose listener is about to hear a gap. This is what keeps two or four
concurrent sessions from collapsing each other's time to first audio.

Mechanism (``SynthesisScheduler``): one worker thread per model runs jobs one at a time; torch releases the GIL,
so the event loop stays free. Cancelling a session removes its queued jobs at once and sets the ``interrupt``
event of its running job, which the synthesizer checks between model layers (``engine.model.kokoro_synth``): a client
that vanished, or barged in, frees the model within a fraction of a sentence. ``others_waiting`` tells a session
whether it should keep its next call short (``engine.text.sentence_split``).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any


@dataclass(order=True, slots=True)
class _Entry:
    key: tuple[int, float, int]
    job_id: int = field(compare=False)
    session_id: str = field(compare=False)
    payload: Any = field(compare=False)
    size: int = field(default=0, compare=False)
    """The job's work (phonemes), for ``others_waiting``."""
    removed: bool = field(default=False, compare=False)


class DeadlineQueue:
    """Urgent (first-of-utterance) jobs by release time, then the rest by deadline. No I/O, no clock."""

    def __init__(self) -> None:
        self._heap: list[_Entry] = []
        self._by_id: dict[int, _Entry] = {}
        self._ids = itertools.count()

    def push(self, session_id: str, payload: Any, *, urgent: bool, deadline: float, size: int = 0) -> int:
        job_id = next(self._ids)
        entry = _Entry((0 if urgent else 1, deadline, job_id), job_id, session_id, payload, size)
        heapq.heappush(self._heap, entry)
        self._by_id[job_id] = entry
        return job_id

    def pop(self) -> tuple[int, str, Any] | None:
        while self._heap:
            entry = heapq.heappop(self._heap)
            if entry.removed:
                continue
            del self._by_id[entry.job_id]
            return entry.job_id, entry.session_id, entry.payload
        return None

    def remove(self, job_id: int) -> Any | None:
        entry = self._by_id.pop(job_id, None)
        if entry is None:
            return None
        entry.removed = True
        return entry.payload

    def remove_session(self, session_id: str) -> list[Any]:
        gone = [e for e in self._by_id.values() if e.session_id == session_id]
        for entry in gone:
            entry.removed = True
            del self._by_id[entry.job_id]
        return [e.payload for e in gone]

    def __len__(self) -> int:
        return len(self._by_id)

    def sessions(self) -> set[str]:
        return {e.session_id for e in self._by_id.values()}

    def waiting_work(self, exclude: str) -> tuple[bool, int | None]:
        """Whether sessions other than ``exclude`` have jobs queued, and the smallest urgent one's size."""
        others = [e for e in self._by_id.values() if e.session_id != exclude]
        urgent = [e.size for e in others if e.key[0] == 0 and e.size > 0]
        return bool(others), (min(urgent) if urgent else None)


class SchedulerClosed(RuntimeError):
    pass


class SynthesisScheduler:
    """Runs submitted blocking calls on one worker thread, most urgent first."""

    def __init__(self, name: str = "synth") -> None:
        self._queue = DeadlineQueue()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._wakeup: asyncio.Event | None = None
        self._runner: asyncio.Task[None] | None = None
        self._running_session: str | None = None
        self._running_interrupt: threading.Event | None = None
        self._s_per_phoneme: float | None = None
        self._idle = threading.Event()
        self._idle.set()
        self._closed = False
        self.jobs_run = 0

    def submit(
        self,
        session_id: str,
        call: Callable[[], Any],
        *,
        urgent: bool,
        deadline: float,
        interrupt: threading.Event | None = None,
        size: int = 0,
    ) -> asyncio.Future[Any]:
        """Queues ``call``; the future resolves with its result, or is cancelled if the job is dropped.

        ``interrupt`` is set when the session is cancelled while ``call`` runs; a call that checks it may stop early.
        """
        if self._closed:
            raise SchedulerClosed("the synthesizer is shutting down")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        job_id = self._queue.push(
            session_id, (call, future, interrupt, size), urgent=urgent, deadline=deadline, size=size
        )
        future.add_done_callback(lambda f: self._queue.remove(job_id) if f.cancelled() else None)
        self._idle.clear()
        self._ensure_runner(loop)
        assert self._wakeup is not None
        self._wakeup.set()
        return future

    def cancel_session(self, session_id: str) -> int:
        """Drops every queued job of a session and interrupts its running one (whose result is then ignored)."""
        dropped = self._queue.remove_session(session_id)
        for _call, future, _interrupt, _size in dropped:
            future.cancel()
        if self._running_session == session_id and self._running_interrupt is not None:
            self._running_interrupt.set()
        self._update_idle()
        return len(dropped)

    def others_waiting(self, session_id: str) -> tuple[bool, int | None]:
        """Whether another session has a job queued (then this session's next call should be short), and the size
        (phonemes) of the smallest first sentence waiting: a call about that long keeps its wait near its own."""
        return self._queue.waiting_work(session_id)

    @property
    def pending(self) -> int:
        return len(self._queue)

    @property
    def busy(self) -> bool:
        return self._running_session is not None

    def pending_sessions(self) -> set[str]:
        found = self._queue.sessions()
        if self._running_session is not None:
            found.add(self._running_session)
        return found

    async def wait_idle(self, limit_s: float | None = None) -> bool:
        """True once nothing is queued or running (used by shutdown and by tests)."""
        return await asyncio.to_thread(self._idle.wait, limit_s)

    def run_sync(self, call: Callable[[], Any]) -> Any:
        """Runs a call on the worker thread from synchronous code (warm-up, benchmarks)."""
        return self._executor.submit(call).result()

    async def aclose(self) -> None:
        self._closed = True
        for session_id in list(self._queue.sessions()):
            self.cancel_session(session_id)
        if self._runner is not None:
            self._runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._runner
        await asyncio.to_thread(self._executor.shutdown, wait=True)

    def _ensure_runner(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._runner is None or self._runner.done() or self._runner.get_loop() is not loop:
            self._wakeup = asyncio.Event()
            self._runner = loop.create_task(self._run(), name="synthesis-scheduler")

    def estimated_call_s(self, phonemes: int) -> float | None:
        """How long a call of ``phonemes`` takes on this model, from the calls run so far (None: not known yet)."""
        return None if self._s_per_phoneme is None else self._s_per_phoneme * phonemes

    def _learn_speed(self, size: int, elapsed_s: float) -> None:
        if size <= 0:
            return
        rate = elapsed_s / size
        self._s_per_phoneme = rate if self._s_per_phoneme is None else 0.8 * self._s_per_phoneme + 0.2 * rate

    def _update_idle(self) -> None:
        if not self._queue and self._running_session is None:
            self._idle.set()

    async def _run(self) -> None:
        assert self._wakeup is not None
        loop = asyncio.get_running_loop()
        while True:
            item = self._queue.pop()
            if item is None:
                self._update_idle()
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            _job_id, session_id, (call, future, interrupt, size) = item
            if future.done():
                continue
            self._running_session = session_id
            self._running_interrupt = interrupt
            started = time.perf_counter()
            try:
                result = await loop.run_in_executor(self._executor, call)
            except Exception as exc:  # handed to the session, which reports it
                if not future.done():
                    future.set_exception(exc)
            else:
                self._learn_speed(size, time.perf_counter() - started)
                if not future.done():
                    future.set_result(result)
            finally:
                self._running_session = None
                self._running_interrupt = None
                self.jobs_run += 1
            # Let the job's done-callbacks run first: a session submits its next sentence from there, and the
            # scheduler must not look idle in between.
            await asyncio.sleep(0)
