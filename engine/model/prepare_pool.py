"""The CPU side of speech across cores: front-end and G2P of every session's upcoming sentences in worker processes, so
the model's thread only runs forwards and the event loop keeps its core.

An instance is CPU-bound before GPU-bound (ml.g5.xlarge under load: CPU 100 %, GPU 39 %) and misaki and NeMo are pure
Python. A warm goes to a worker only while one would stay idle; a dead worker is replaced and its sentences sent once
more (a second death fails with ``synthesis_failed``)."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from voicedesk.engine.errors import ErrorCode, VoicedeskError
from voicedesk.engine.model.g2p_pipelines import G2PPipelines
from voicedesk.engine.model.prepared import PreparedPiece, prepare_pieces
from voicedesk.engine.model.voices import DEFAULT_LANGUAGE
from voicedesk.engine.text.frontend import FrontEnd, shared_front_end
from voicedesk.engine.text.frontend.memo import MemoNormalize
from voicedesk.engine.text.frontend.settings import DEFAULT_TEXT_SETTINGS, TextSettings
from voicedesk.engine.text.frontend.spoken import SpokenText

WARM_UP_TEXT = "Hello there, it is 21°C."
"""Has a number and a unit, so a worker's grammars are warm before its first sentence."""
STAGE_SAMPLES = 4096
"""Per-sentence stage times kept for the figures (the latest ones)."""
WARMED_KEPT = 512
"""Stretches warmed in workers that this side keeps to send along with the sentences that contain them."""

MemoEntries = tuple[tuple[str, str], ...]
"""(written, spoken) stretches of a front-end's memo, as they travel between processes."""


def auto_workers(device: str, cores: int | None = None) -> int:
    """``--prepare-workers auto``: one process per core but one with the model on a GPU and at least three cores;
    otherwise none. On fewer cores, or with the model on the CPU, a pool would only take cores from the forward it
    feeds."""
    if cores is None:
        cores = os.cpu_count() or 1
    return cores - 1 if device.startswith("cuda") and cores >= 3 else 0


@dataclass(frozen=True, slots=True)
class PreparedText:
    """A sentence's front-end output and its pieces (what ``PreparedSentence`` holds besides text and voice)."""

    spoken: SpokenText
    pieces: tuple[PreparedPiece, ...]
    front_end_cpu_s: float = 0.0
    g2p_cpu_s: float = 0.0
    memo_hits: int = 0
    """Stretches the front-end found in its memo (warmed, seeded or seen before) instead of asking NeMo."""
    nemo_calls: int = 0
    """Stretches NeMo normalized for this sentence."""
    worker_pid: int = 0


class TextPreparation:
    """Front-end then G2P for one sentence, timing each stage's CPU (the thread's: other threads do not count)."""

    def __init__(self, front_end: FrontEnd, pipelines: G2PPipelines) -> None:
        self.front_end = front_end
        self.pipelines = pipelines

    def __call__(self, text: str, language: str, settings: TextSettings = DEFAULT_TEXT_SETTINGS) -> PreparedText:
        started = time.thread_time()
        spoken = self.front_end.to_spoken(text, language, settings)
        spoken_at = time.thread_time()
        pieces = prepare_pieces(self.pipelines.get(language), spoken, language)
        return PreparedText(spoken, pieces, spoken_at - started, time.thread_time() - spoken_at)


@dataclass(frozen=True, slots=True)
class WorkerSetup:
    """What a worker needs to build its G2P: the model's repository, its vocabulary and the languages to load."""

    repo_id: str
    vocab: frozenset[str]
    languages: tuple[str, ...] = (DEFAULT_LANGUAGE,)


@dataclass(frozen=True, slots=True)
class _Failure:
    """A worker's ``VoicedeskError`` carried by value and rebuilt here (its subclasses do not pickle)."""

    kind: type[VoicedeskError]
    code: str
    message: str
    advice: str | None

    def error(self) -> VoicedeskError:
        error = self.kind.__new__(self.kind)
        VoicedeskError.__init__(error, self.code, self.message, self.advice)
        return error


_preparation: TextPreparation | None = None
"""The worker process's front-end and G2P (set by ``start_worker``)."""


def start_worker(setup: WorkerSetup) -> None:
    """A worker's initializer: loads the front-end and the G2P of ``setup.languages`` once, and warms them."""
    global _preparation
    _preparation = TextPreparation(shared_front_end(), G2PPipelines(setup.repo_id, False, setup.vocab))
    for language in setup.languages:
        _preparation.pipelines.get(language)
    if DEFAULT_LANGUAGE in setup.languages:
        _preparation(WARM_UP_TEXT, DEFAULT_LANGUAGE)


def _memo(front_end: FrontEnd, language: str) -> MemoNormalize | None:
    normalize = getattr(front_end.spoken_forms.get(language), "normalize", None)
    return normalize if isinstance(normalize, MemoNormalize) else None


def prepare_in_worker(
    text: str, language: str, settings: TextSettings, seed: MemoEntries = ()
) -> PreparedText | _Failure:
    """``seed``: stretches of this sentence warmed in some worker while it arrived, for this worker's memo."""
    assert _preparation is not None, "start_worker runs first"
    memo = _memo(_preparation.front_end, language)
    if memo is not None:
        memo.remember(seed)
    hits, calls = (memo.hits, memo.misses) if memo is not None else (0, 0)
    try:
        prepared = _preparation(text, language, settings)
    except VoicedeskError as exc:
        return _Failure(type(exc), str(exc.code), exc.message, exc.advice)
    if memo is None:
        return dataclasses.replace(prepared, worker_pid=os.getpid())
    return dataclasses.replace(
        prepared, memo_hits=memo.hits - hits, nemo_calls=memo.misses - calls, worker_pid=os.getpid()
    )


def warm_in_worker(text: str, language: str, settings: TextSettings) -> MemoEntries:
    """Normalizes a still-arriving sentence's finished stretches and returns them, to travel with the sentence."""
    assert _preparation is not None, "start_worker runs first"
    memo = _memo(_preparation.front_end, language)
    if memo is None:
        return ()
    touched = memo.hits + memo.misses
    try:
        _preparation.front_end.warm(text, language, settings)
    except Exception:
        return ()
    return tuple(memo.latest(memo.hits + memo.misses - touched))


def worker_pid(hold_s: float = 0.0) -> int:
    time.sleep(hold_s)  # keeps this worker busy a moment, so the next task goes to another one
    return os.getpid()


START_HOLD_S = 0.05
"""How long each of ``start``'s probes holds its worker (so a ready worker cannot answer for one still loading)."""


class StageSamples:
    """The latest sentences' front-end and G2P CPU seconds (thread-safe)."""

    def __init__(self, keep: int = STAGE_SAMPLES) -> None:
        self._lock = threading.Lock()
        self._samples: deque[tuple[float, float]] = deque(maxlen=keep)
        self.count = 0

    def add(self, prepared: PreparedText) -> None:
        with self._lock:
            self._samples.append((prepared.front_end_cpu_s, prepared.g2p_cpu_s))
            self.count += 1

    def snapshot(self) -> dict[str, list[float]]:
        with self._lock:
            samples = list(self._samples)
        return {"front-end": [s[0] for s in samples], "g2p": [s[1] for s in samples]}


class PreparePool:
    """``submit(text, language, settings)`` → a future of its ``PreparedText``, prepared in a worker process;
    ``task``/``initializer`` are module-level for ``spawn`` (tests give their own)."""

    def __init__(
        self,
        workers: int,
        setup: WorkerSetup,
        *,
        task: Callable[..., PreparedText | _Failure] = prepare_in_worker,
        initializer: Callable[[WorkerSetup], None] = start_worker,
        warm_task: Callable[[str, str, TextSettings], MemoEntries] = warm_in_worker,
    ) -> None:
        if workers < 1:
            raise ValueError(f"a preparation pool needs at least one worker; got {workers}")
        self.workers = workers
        self._setup = setup
        self._task = task
        self._initializer = initializer
        self._warm_task = warm_task
        self._lock = threading.Lock()
        self._closed = False
        self._executor = self._new_executor()
        self.replaced = 0
        """How many times dead workers made the pool start fresh processes."""
        self.stages = StageSamples()
        self._warm_lock = threading.Lock()
        self._preparing = 0
        """Sentences handed to the pool and not yet back (a warm waits while they leave no worker idle)."""
        self._warm_next: tuple[str, str, TextSettings] | None = None
        self._warming = False
        self._warmed: OrderedDict[str, str] = OrderedDict()
        self.warmed = 0
        """Fragments warmed in a worker (for tests and benchmarks)."""
        self.warm_order: deque[str] = deque(maxlen=64)
        """The latest warms and sentences to come back, in order (``warm:``/``prepare:`` + text; for tests)."""

    def _new_executor(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=self._initializer,
            initargs=(self._setup,),
        )

    def start(self) -> None:
        """Blocks until every worker has loaded its front-end and G2P; probes go out until each one has answered, since
        a ready worker may answer all while another still loads."""
        with self._lock:
            executor = self._executor
        answered: set[int] = set()
        while len(answered) < self.workers:
            answered.update(
                f.result() for f in [executor.submit(worker_pid, START_HOLD_S) for _ in range(self.workers)]
            )

    def worker_pids(self) -> list[int]:
        """The worker processes now running (for tests and diagnostics; the executor keeps them by pid)."""
        with self._lock:
            processes = dict(self._executor._processes or {})  # the executor keeps its processes by pid
        return [pid for pid, process in processes.items() if process.is_alive()]

    def submit(self, text: str, language: str, settings: TextSettings = DEFAULT_TEXT_SETTINGS) -> Future[PreparedText]:
        outer: Future[PreparedText] = Future()
        outer.set_running_or_notify_cancel()
        with self._warm_lock:
            self._preparing += 1
            seed = tuple((written, spoken) for written, spoken in self._warmed.items() if written in text)
        outer.add_done_callback(lambda _done: self._prepared(text))
        self._send(outer, (text, language, settings, seed), attempt=1)
        return outer

    def warm(self, text: str, language: str, settings: TextSettings = DEFAULT_TEXT_SETTINGS) -> None:
        """A still-arriving sentence to warm in a worker; only the newest waits, and only while a worker stays idle."""
        with self._warm_lock:
            self._warm_next = (text, language, settings)
        self._start_warm()

    def _prepared(self, text: str) -> None:
        with self._warm_lock:
            self._preparing -= 1
            self.warm_order.append(f"prepare:{text}")
        self._start_warm()

    def _start_warm(self) -> None:
        with self._warm_lock:
            job = self._warm_next
            if job is None or self._warming or self._closed or self._preparing + 2 > self.workers:
                return
            self._warm_next, self._warming = None, True
        with self._lock:
            executor = self._executor
        try:
            inner = executor.submit(self._warm_task, *job)
        except (BrokenProcessPool, RuntimeError):  # broken or shut down: the next sentence replaces or refuses
            with self._warm_lock:
                self._warming = False
            return
        inner.add_done_callback(lambda done: self._warm_done(job[0], done))

    def _warm_done(self, text: str, inner: Future[MemoEntries]) -> None:
        entries: MemoEntries = ()
        if not inner.cancelled() and inner.exception() is None:
            entries = inner.result()
        with self._warm_lock:
            self._warming = False
            self.warmed += 1
            self.warm_order.append(f"warm:{text}")
            for written, spoken in entries:
                self._warmed[written] = spoken
                self._warmed.move_to_end(written)
            while len(self._warmed) > WARMED_KEPT:
                self._warmed.popitem(last=False)
        self._start_warm()

    def _send(
        self, outer: Future[PreparedText], args: tuple[str, str, TextSettings, MemoEntries], attempt: int
    ) -> None:
        with self._lock:
            executor = None if self._closed else self._executor
        if executor is None:
            outer.set_exception(VoicedeskError(ErrorCode.SESSION_CLOSING, "The server is shutting down."))
            return
        try:
            inner = executor.submit(self._task, *args)
        except BrokenProcessPool:  # it broke before this sentence got in: start fresh; the sentence has not run
            self._replace(executor)
            self._send(outer, args, attempt)
            return
        except RuntimeError:  # shut down meanwhile
            outer.set_exception(VoicedeskError(ErrorCode.SESSION_CLOSING, "The server is shutting down."))
            return
        inner.add_done_callback(lambda done: self._finished(done, outer, args, attempt, executor))

    def _finished(
        self,
        inner: Future[PreparedText | _Failure],
        outer: Future[PreparedText],
        args: tuple[str, str, TextSettings, MemoEntries],
        attempt: int,
        executor: ProcessPoolExecutor,
    ) -> None:
        if inner.cancelled():
            outer.set_exception(VoicedeskError(ErrorCode.SESSION_CLOSING, "The server is shutting down."))
            return
        exc = inner.exception()
        if isinstance(exc, BrokenProcessPool):
            self._replace(executor)
            if attempt < 2:
                self._send(outer, args, attempt + 1)
                return
            outer.set_exception(
                VoicedeskError(
                    ErrorCode.SYNTHESIS_FAILED,
                    "The process preparing this sentence's text (front-end and G2P) died twice while on it, so the "
                    "sentence was skipped; the server started fresh ones. If this text keeps failing, report it.",
                )
            )
            return
        if exc is not None:
            outer.set_exception(exc)
            return
        result = inner.result()
        if isinstance(result, _Failure):
            outer.set_exception(result.error())
            return
        self.stages.add(result)
        outer.set_result(result)

    def _replace(self, broken: ProcessPoolExecutor) -> None:
        """Fresh processes instead of a broken executor (once, however many of its sentences report it)."""
        with self._lock:
            if self._closed or self._executor is not broken:
                return
            self._executor = self._new_executor()
            self.replaced += 1
        # Not here: a broken executor reports to its futures from its own thread while holding the lock that
        # ``shutdown`` takes, so the old processes are reaped from a thread of their own.
        threading.Thread(
            target=broken.shutdown, kwargs={"cancel_futures": True}, name="prepare-pool-reap", daemon=True
        ).start()

    def close(self) -> None:
        """Cancels what waits, lets running sentences finish and joins every worker."""
        with self._lock:
            self._closed = True
            executor = self._executor
        executor.shutdown(wait=True, cancel_futures=True)
