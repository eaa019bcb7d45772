"""Several sessions' sentences through Kokoro as one padded forward: the scheduler's batch runner for the Kokoro
synthesizer (``engine.scheduler``'s ``batch_runner``; when it is used: ``engine.model.batch_policy``).

Each sentence is prepared as ``KokoroSynthesizer.synthesize`` prepares it (``prepare``: front-end and G2P into
pieces of at most 510 phonemes); every piece of every sentence then runs in one ``engine.model.batch`` forward
(its voice's style vector for its length, its speed times the piece's rate, as ``KPipeline.infer`` picks them), and
each sentence is put together from its own pieces as ``render`` does: word timings from the predicted durations,
the pieces' pauses. A sentence prepared ahead is taken as it is (``KokoroSynthesizer.prepared``), as one by one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from voicedesk.engine.model.batch import forward_batch, item_of
from voicedesk.engine.model.batch_policy import BatchJob, BatchMode, batching_enabled
from voicedesk.engine.model.synthesis import SynthesisResult

if TYPE_CHECKING:
    from voicedesk.engine.model.kokoro_synth import KokoroSynthesizer


def synthesize_batch(
    synthesizer: KokoroSynthesizer, jobs: Sequence[BatchJob], should_stop: Callable[[], bool] | None = None
) -> list[SynthesisResult]:
    """Each job's ``SynthesisResult``, as ``synthesizer.synthesize`` would make it, from one padded forward."""
    from voicedesk.engine.errors import ErrorCode, VoicedeskError
    from voicedesk.engine.model.kokoro_synth import SynthesisInterrupted, assemble_result

    model = synthesizer.model
    items = []
    prepared_jobs = []
    for job in jobs:
        if not job.speed > 0:
            raise VoicedeskError(ErrorCode.BAD_SPEED, f"speed must be above 0; got {job.speed!r}.")
        prepared = synthesizer.prepared(job.text, job.voice, job.settings)
        _spec, pack = synthesizer.resolve_voice(job.voice)
        first = len(items)
        for piece in prepared.pieces:
            items.append(item_of(model, piece.phonemes, pack[len(piece.phonemes) - 1], job.speed * piece.rate))
        prepared_jobs.append((prepared, first))

    def check() -> None:
        if should_stop is not None and should_stop():
            raise SynthesisInterrupted("synthesis stopped: every session of the batch was cancelled")

    outputs = forward_batch(model, items, check)
    return [
        assemble_result(prepared, outputs[first : first + len(prepared.pieces)]) for prepared, first in prepared_jobs
    ]


def batch_runner(synthesizer: KokoroSynthesizer) -> Callable[[list[Any], Callable[[], bool]], list[Any]]:
    """The scheduler's batch runner: items are ``(BatchJob, finish)``, where ``finish(result, seconds)`` turns a
    job's ``SynthesisResult`` into what its unbatched call returns (the session driver's rendered sentence)."""

    def run(items: list[Any], should_stop: Callable[[], bool]) -> list[Any]:
        started = time.perf_counter()
        results = synthesize_batch(synthesizer, [job for job, _finish in items], should_stop)
        elapsed = time.perf_counter() - started
        return [finish(result, elapsed) for (_job, finish), result in zip(items, results, strict=True)]

    return run


CALIBRATION_TEXTS = (
    "Hello there, how can I help you today?",
    "The meeting moved to three o'clock.",
    "Sure.",
    "I will send the report over in a minute or two.",
)
"""Sentences of a typical mix of lengths, as several sessions' first sentences would arrive together."""


def measure_speedup(synthesizer: KokoroSynthesizer, voice: str, repeats: int = 2) -> float:
    """One-by-one time over batched time for ``CALIBRATION_TEXTS`` on this device (best of ``repeats``): above 1,
    batching pays here. Runs the model; call it on the model's thread, after warm-up."""
    jobs = [BatchJob(text, voice, 1.0) for text in CALIBRATION_TEXTS]
    alone = batched = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for job in jobs:
            synthesizer.synthesize(job.text, job.voice, job.speed)
        alone = min(alone, time.perf_counter() - started)
        started = time.perf_counter()
        synthesize_batch(synthesizer, jobs)
        batched = min(batched, time.perf_counter() - started)
    return alone / batched


def choose_batch_runner(
    synthesizer: KokoroSynthesizer, mode: BatchMode, voice: str
) -> tuple[Callable[[list[Any], Callable[[], bool]], list[Any]] | None, float | None]:
    """The batch runner to serve with (None: run one by one) and the speed-up measured (None: not measured, as
    on a CPU, where batching does not pay). Runs the model when it measures: on the model's thread."""
    speedup = None
    if mode is BatchMode.AUTO and synthesizer.device.startswith("cuda"):
        speedup = measure_speedup(synthesizer, voice)
    enabled = batching_enabled(mode, synthesizer.device, speedup)
    return (batch_runner(synthesizer) if enabled else None), speedup
