"""Shares one model among many sessions, so concurrent sessions do not collapse each other's time to first audio.

First sentences go first (a listener waits in silence), then the earliest deadline. ``should_preempt`` (pure) lets a
newcomer's first sentence stop a long call already on the model only when the work thrown away stays bounded."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from voicedesk.engine.model.batch_policy import MAX_ITEMS, Candidate, companions
from voicedesk.engine.tasks import cancel_and_wait


@dataclass(order=True, slots=True)
class _Entry:
    key: tuple[int, int, float, int]
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

    def push(
        self, session_id: str, payload: Any, *, urgent: bool, deadline: float, size: int = 0, share: int = 0
    ) -> int:
        """``share``: sessions its client's address holds; among first sentences, a quieter address goes first."""
        job_id = next(self._ids)
        entry = _Entry(
            (0 if urgent else 1, share if urgent else 0, deadline, job_id), job_id, session_id, payload, size
        )
        heapq.heappush(self._heap, entry)
        self._by_id[job_id] = entry
        return job_id

    def pop_entry(self) -> tuple[int, bool, Any] | None:
        """The next job: its id, whether it is urgent, and its payload (None: the queue is empty)."""
        while self._heap:
            entry = heapq.heappop(self._heap)
            if entry.removed:
                continue
            del self._by_id[entry.job_id]
            return entry.job_id, entry.key[0] == 0, entry.payload
        return None

    def in_order(self) -> list[tuple[int, bool, Any]]:
        """The queued jobs in the order they would be popped: (id, urgent, payload)."""
        return [(e.job_id, e.key[0] == 0, e.payload) for e in sorted(self._by_id.values())]

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

    def first_work(self, exclude: str | None) -> int:
        """The first sentences other sessions queued: what a new first sentence would wait behind."""
        return sum(e.size for e in self._by_id.values() if e.key[0] == 0 and e.session_id != exclude)

    def waiting_work(self, exclude: str) -> tuple[bool, int | None]:
        """Whether sessions other than ``exclude`` have jobs queued, and the smallest urgent one's size."""
        others = [e for e in self._by_id.values() if e.session_id != exclude]
        urgent = [e.size for e in others if e.key[0] == 0 and e.size > 0]
        return bool(others), (min(urgent) if urgent else None)


class SchedulerClosed(RuntimeError):
    pass


BatchRunner = Callable[[list[Any], Callable[[], bool]], list[Any]]
"""Runs several jobs' batch items as one call, results in order; its second argument says whether to stop."""


@dataclass(slots=True)
class _Job:
    call: Callable[[], Any]
    future: asyncio.Future[Any]
    interrupt: threading.Event | None
    size: int
    batch_item: Any = None
    session_id: str = ""
    urgent: bool = False
    deadline: float = 0.0
    share: int = 0
    wasted_s: float = 0.0
    """Model time thrown away by stopping this job for first sentences (it was queued again each time)."""
    preempted: bool = False
    """Stopped for a first sentence while running: queue it again rather than hand its failure to the session."""
    cancelled: bool = False
    """Its session was cancelled while it ran: never queued again."""


class SynthesisScheduler:
    """Runs blocking calls on one worker thread, most urgent first; with ``batch_runner``, ready batch items
    together."""

    def __init__(
        self,
        name: str = "synth",
        batch_runner: BatchRunner | None = None,
        max_batch: int = MAX_ITEMS,
        s_per_phoneme: float | None = None,
    ) -> None:
        self._queue = DeadlineQueue()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._wakeup: asyncio.Event | None = None
        self._runner: asyncio.Task[None] | None = None
        self._running: list[_Job] = []
        self._running_since = 0.0
        self._s_per_phoneme: float | None = s_per_phoneme
        """The model's speed: given (a prior) or learned from the calls run so far."""
        self._idle = threading.Event()
        self._idle.set()
        self._closed = False
        self.batch_runner = batch_runner
        """None: every job runs alone. May be set or cleared between jobs."""
        self.max_batch = max_batch
        self.preemption = True
        """Whether a first sentence may stop a call of a session far ahead of its listener (``engine.scheduler``)."""
        self.jobs_run = 0
        self.batches_run = 0
        """Calls that ran more than one job."""
        self.preemptions = 0
        """Calls stopped for a first sentence and queued again."""

    def submit(
        self,
        session_id: str,
        call: Callable[[], Any],
        *,
        urgent: bool,
        deadline: float,
        interrupt: threading.Event | None = None,
        size: int = 0,
        batch_item: Any = None,
        share: int = 0,
    ) -> asyncio.Future[Any]:
        """Queues ``call``; the future resolves with its result, or is cancelled if the job is dropped. ``interrupt`` is
        set when the session is cancelled mid-call; ``batch_item`` lets the batch runner run it with others (None:
        always alone)."""
        if self._closed:
            raise SchedulerClosed("the synthesizer is shutting down")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        job = _Job(call, future, interrupt, size, batch_item, session_id, urgent, deadline, share)
        self._enqueue(job)
        self._idle.clear()
        self._ensure_runner(loop)
        assert self._wakeup is not None
        self._wakeup.set()
        if urgent:
            self._maybe_preempt(session_id, deadline, size, share)
        return future

    def _enqueue(self, job: _Job) -> None:
        job_id = self._queue.push(
            job.session_id, job, urgent=job.urgent, deadline=job.deadline, size=job.size, share=job.share
        )
        job.future.add_done_callback(lambda f: self._queue.remove(job_id) if f.cancelled() else None)

    def _maybe_preempt(self, session_id: str, arrival: float, size: int, share: int) -> None:
        """Stops the running call for a just-arrived first sentence when ``engine.scheduler`` says so (never a
        batch)."""
        if not self.preemption or len(self._running) != 1:
            return
        job = self._running[0]
        if job.session_id == session_id or job.interrupt is None or job.interrupt.is_set():
            return
        elapsed_s = time.perf_counter() - self._running_since
        running = RunningCall(job.urgent, job.deadline, job.size, elapsed_s, job.wasted_s, job.share)
        ahead = self._queue.first_work(exclude=session_id)
        if should_preempt(running, arrival, size, self._s_per_phoneme, ahead, share):
            job.preempted = True
            job.deadline = max(job.deadline, arrival)  # a stopped first sentence goes again after the newcomer's
            job.interrupt.set()

    def cancel_session(self, session_id: str) -> int:
        """Drops every queued job of a session and interrupts its running one (whose result is then ignored)."""
        dropped = self._queue.remove_session(session_id)
        for job in dropped:
            job.future.cancel()
        for job in self._running:
            if job.session_id == session_id and job.interrupt is not None:
                job.cancelled = True
                job.interrupt.set()
        self._update_idle()
        return len(dropped)

    def others_waiting(self, session_id: str) -> tuple[bool, int | None]:
        """Whether another session has work queued, and the size of the smallest first sentence waiting."""
        return self._queue.waiting_work(session_id)

    @property
    def pending(self) -> int:
        return len(self._queue)

    @property
    def busy(self) -> bool:
        return bool(self._running)

    def pending_sessions(self) -> set[str]:
        return self._queue.sessions() | {job.session_id for job in self._running}

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
        await cancel_and_wait(self._runner)
        await asyncio.to_thread(self._executor.shutdown, wait=True)

    def _ensure_runner(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._runner is None or self._runner.done() or self._runner.get_loop() is not loop:
            self._wakeup = asyncio.Event()
            self._runner = loop.create_task(self._run(), name="synthesis-scheduler")

    def estimated_call_s(self, phonemes: int) -> float | None:
        """How long a call of ``phonemes`` takes on this model, from the calls run so far (None: not known yet)."""
        return None if self._s_per_phoneme is None else self._s_per_phoneme * phonemes

    @property
    def s_per_phoneme(self) -> float | None:
        """The model's measured forward cost (None: nothing measured yet), for admission (``engine.limits``)."""
        return self._s_per_phoneme

    def _learn_speed(self, size: int, elapsed_s: float) -> None:
        if size <= 0:
            return
        rate = elapsed_s / size
        self._s_per_phoneme = rate if self._s_per_phoneme is None else 0.8 * self._s_per_phoneme + 0.2 * rate

    def _update_idle(self) -> None:
        if not self._queue and not self._running:
            self._idle.set()

    def _take_batch(self, head_id: int, head_urgent: bool, head: _Job) -> list[_Job]:
        """The head and the queued jobs that run with it (removed from the queue)."""
        if self.batch_runner is None or head.batch_item is None:
            return [head]
        head_candidate = Candidate(head_id, head_urgent, head.size, True)
        queued = [
            Candidate(job_id, urgent, job.size, job.batch_item is not None and not job.future.done())
            for job_id, urgent, job in self._queue.in_order()
        ]
        chosen = companions(head_candidate, queued, self.max_batch)
        return [head, *(job for c in chosen if (job := self._queue.remove(c.job_id)) is not None)]

    async def _run(self) -> None:
        assert self._wakeup is not None
        loop = asyncio.get_running_loop()
        while True:
            item = self._queue.pop_entry()
            if item is None:
                self._update_idle()
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            job_id, urgent, head = item
            if head.future.done():
                continue
            jobs = self._take_batch(job_id, urgent, head)
            self._running = jobs
            size = sum(job.size for job in jobs)
            started = self._running_since = time.perf_counter()
            try:
                results = await loop.run_in_executor(self._executor, self._call_of(jobs))
            except Exception as exc:  # handed to the sessions, which report it
                for job in jobs:
                    if self._requeue_preempted(job):
                        continue
                    if not job.future.done():
                        job.future.set_exception(exc)
            else:
                self._learn_speed(size, time.perf_counter() - started)
                for job, result in zip(jobs, results, strict=True):
                    if not job.future.done():
                        job.future.set_result(result)
            finally:
                self._running = []
                self.jobs_run += len(jobs)
                self.batches_run += len(jobs) > 1
            # Let the job's done-callbacks run first: a session submits its next sentence from there, and the
            # scheduler must not look idle in between.
            await asyncio.sleep(0)

    def _requeue_preempted(self, job: _Job) -> bool:
        """A call stopped for a first sentence goes back in the queue under its own key; True when it did."""
        if not job.preempted or job.cancelled or job.future.done() or self._closed or job.interrupt is None:
            return False
        job.preempted = False
        job.wasted_s += time.perf_counter() - self._running_since
        job.interrupt.clear()
        self.preemptions += 1
        self._enqueue(job)
        return True

    def _call_of(self, jobs: list[_Job]) -> Callable[[], list[Any]]:
        if len(jobs) == 1:
            call = jobs[0].call
            return lambda: [call()]
        runner = self.batch_runner
        assert runner is not None
        items = [job.batch_item for job in jobs]

        def all_cancelled() -> bool:
            return all(job.interrupt is not None and job.interrupt.is_set() for job in jobs)

        return lambda: runner(items, all_cancelled)


WORTH_FRACTION = 0.2
"""Stop a call only when what is left of it is longer than this share of the newcomer's first call (≤ 1.2× its wait)."""
SLACK_MARGIN_S = 0.5
"""Audio the stopped session keeps in hand beyond the redo and the first sentences ahead of it (jitter, encoding)."""
MAX_WASTE_FRACTION = 1.0
"""The model time one call may lose to being stopped, over all its stops, as a share of its own estimated cost."""


@dataclass(frozen=True, slots=True)
class RunningCall:
    """The call on the model, as the scheduler sees it."""

    urgent: bool
    """A first sentence."""
    deadline: float
    """When its audio is needed (the session's clock; the queue's deadline)."""
    size: int
    """Its work (phonemes, estimated)."""
    elapsed_s: float
    """How long it has run."""
    wasted_s: float = 0.0
    """Model time already thrown away by earlier stops of this call."""
    share: int = 0
    """Sessions its client's address holds (``engine.scheduler``)."""


def should_preempt(
    running: RunningCall,
    arrival: float,
    first_size: int,
    s_per_phoneme: float | None,
    first_work_ahead: int = 0,
    share: int = 0,
) -> bool:
    """Whether a newcomer's first sentence of ``first_size`` phonemes arriving at ``arrival`` should stop
    ``running``."""
    if s_per_phoneme is None or running.size <= 0:
        return False
    redo_s = running.size * s_per_phoneme
    if running.wasted_s + running.elapsed_s > MAX_WASTE_FRACTION * redo_s:
        return False
    first_s = first_size * s_per_phoneme
    left_s = redo_s - running.elapsed_s
    if left_s <= WORTH_FRACTION * first_s:
        return False
    ahead_s = (first_work_ahead + first_size) * s_per_phoneme
    if running.urgent or arrival + left_s > running.deadline:
        # Its listener waits for it anyway (a first sentence, or a call that ends late: a model slower than its
        # speech, e.g. a flood on a CPU): a stop costs that listener the newcomer's call and the work thrown away,
        # and spares the newcomer what is left of it. The shorter wait goes first, or the quieter address's.
        return left_s > ahead_s + running.elapsed_s or running.share > share
    return running.deadline - arrival >= ahead_s + redo_s + SLACK_MARGIN_S
