"""The app's A/B runner: the same text N times through one engine, or alternating A B A B through two, with each
stage's p50/p90/p99 side by side.

It runs the lab's own A/B scenario (``app.lab.ab.run_ab``) on the app's engines, so its figures come from the
code ``voicedesk bench ab`` prints from (``ab_summary``, ``app.lab.table.ab_stage_table``): for the same
recorded timelines the app shows the bench's numbers. With one engine, B is A again (an A/A run: the two columns
show the run-to-run noise), as in ``voicedesk bench ab`` without ``--engine-b``. Each run is a fresh session and is
not played, as in the bench. No Qt here: ``AbRunner`` drives asyncio and reports an ``AbProgress`` after every
run; ``app/lab/ab_panel.py`` only shows it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from voicedesk.app.lab.ab import run_ab
from voicedesk.app.lab.context import LabConfig, LabContext
from voicedesk.app.lab.lab import machine_facts
from voicedesk.app.lab.report import lab_document
from voicedesk.app.lab.runs import ScenarioResult
from voicedesk.app.messages import error_text
from voicedesk.engine.api import Engine
from voicedesk.engine.errors import ErrorCode, UsageError, VoicedeskError
from voicedesk.engine.model.voices import DEFAULT_VOICE

log = logging.getLogger(__name__)

EngineFactory = Callable[[], Awaitable[Engine]]
MAX_RUNS = 100
NOT_PLAYED = "the A/B runner measures without playing, like `voicedesk bench ab` without --play"


class AbPhase(StrEnum):
    IDLE = "idle"
    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class AbRequest:
    text: str
    runs: int
    """Runs per side: 2 × runs utterances in all."""
    engine_a: str
    """How the person knows engine A ("Local", "WebSocket ws://gpu-box:8080")."""
    engine_b: str | None = None
    """Engine B's name; None: A again (an A/A run)."""
    voice: str = DEFAULT_VOICE

    def check(self) -> None:
        """Raises ``VoicedeskError`` saying what to change."""
        if not self.text.strip():
            raise VoicedeskError(ErrorCode.EMPTY_TEXT, "Type the text each run speaks.")
        if not 1 <= self.runs <= MAX_RUNS:
            raise UsageError(f"Runs per engine must be 1 to {MAX_RUNS}; got {self.runs}.")


@dataclass(frozen=True, slots=True)
class AbProgress:
    phase: AbPhase
    done: int = 0
    """Utterances measured so far."""
    total: int = 0
    summary: dict[str, Any] | None = None
    """``app.lab.ab.ab_summary`` of the runs so far (None before the first)."""
    message: str | None = None
    """What is happening, or why it stopped."""


class AbRunner:
    """One A/B measurement at a time; ``on_progress`` hears about every run, the end, a cancel or a failure."""

    def __init__(
        self,
        open_a: EngineFactory,
        open_b: EngineFactory | None,
        on_progress: Callable[[AbProgress], None],
        owns_b: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._open_a = open_a
        self._open_b = open_b
        self._owns_b = owns_b
        self._on_progress = on_progress
        self._clock = clock
        self._task: asyncio.Task[None] | None = None
        self._result: ScenarioResult | None = None
        self._config: LabConfig | None = None
        self._ctx: LabContext | None = None
        self.progress = AbProgress(AbPhase.IDLE)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self, request: AbRequest) -> asyncio.Task[None]:
        """Starts the runs (raises ``VoicedeskError`` for a bad request, or when a run is already going)."""
        if self.running:
            raise UsageError("An A/B run is already going: cancel it first.")
        request.check()
        self._config = LabConfig(text=request.text.strip(), repeat=request.runs, voice=request.voice)
        self._ctx = LabContext(
            self._config,
            self._open_a,
            request.engine_a,
            self._open_b if request.engine_b is not None else None,
            request.engine_b,
            clock=self._clock,
            owns_engines=(False, self._owns_b),  # A is the app's own engine: it stays open
        )
        self._result = None
        self._ctx.progress = lambda line: self._report(AbPhase.RUNNING, line)
        self.progress = AbProgress(AbPhase.RUNNING, 0, 2 * request.runs)
        self._report(AbPhase.RUNNING, "opening the engines…")
        self._task = asyncio.ensure_future(self._run(self._ctx))
        return self._task

    def cancel(self) -> None:
        """Stops at once: the utterance in flight is abandoned (its session closed), the runs so far are kept."""
        if self.running:
            assert self._task is not None
            self._task.cancel()

    async def wait(self) -> None:
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def document(self) -> dict[str, Any] | None:
        """The runs so far as a ``voicedesk.bench-lab/1`` report, the same document ``voicedesk bench ab --json``
        writes (every run's timeline included), or None before the first run."""
        if self._result is None or self._config is None or self._ctx is None:
            return None
        return lab_document(
            [self._result],
            engine=self._ctx.engine_label,
            engine_b=self._ctx.engine_b_label,
            config=self._config,
            machine=machine_facts(self._ctx),
            dac={"available": False, "why": NOT_PLAYED},
        )

    async def _run(self, ctx: LabContext) -> None:
        try:
            result = await run_ab(ctx, on_run=self._ran)
        except asyncio.CancelledError:
            self._report(AbPhase.CANCELLED, "cancelled")
            raise
        except VoicedeskError as exc:
            self._report(AbPhase.FAILED, error_text(exc))
            return
        except Exception as exc:  # a broken run must reach the person, not vanish in a task
            log.exception("the A/B run failed")
            self._report(AbPhase.FAILED, f"The A/B run failed: {exc!r}")
            return
        finally:
            with contextlib.suppress(Exception):
                await ctx.aclose()  # engine B when the runner opened it; never the app's own
        self._result = result
        self._report(AbPhase.DONE, "; ".join(result.notes) or None)

    def _ran(self, result: ScenarioResult) -> None:
        self._result = result
        self._report(AbPhase.RUNNING, f"{len(result.runs)} of {self.progress.total} runs measured")

    def _report(self, phase: AbPhase, message: str | None) -> None:
        result = self._result
        self.progress = AbProgress(
            phase,
            len(result.runs) if result else 0,
            self.progress.total,
            result.summary if result and result.runs else None,
            message,
        )
        self._on_progress(self.progress)
