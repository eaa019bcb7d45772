"""Several sessions' sentences through Kokoro as one padded forward: the scheduler's batch runner for the Kokoro
synthesizer (``engine.scheduler``'s ``batch_runner``; when it is used: ``engine.model.batch_policy``).

Each sentence goes through its language's ``KPipeline`` as ``KokoroSynthesizer.synthesize`` sends it (G2P, the
pipeline's own chunking into pieces of at most 510 phonemes), except that the pipeline's call of the model is
captured instead of run; every captured piece of every sentence then runs in one ``engine.model.batch``
forward, and each sentence is put together from its own pieces as ``synthesize`` does (word timings from the
predicted durations). The pipeline calls happen in job order on the model's thread, like one-by-one synthesis.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from voicedesk.engine.events import SAMPLE_RATE, WordTiming
from voicedesk.engine.model.batch import BatchItem, forward_batch, item_of
from voicedesk.engine.model.batch_policy import BatchJob, BatchMode, batching_enabled
from voicedesk.engine.model.synthesis import SynthesisResult
from voicedesk.engine.model.voices import language_of, parse_voice_spec

if TYPE_CHECKING:
    import torch

    from voicedesk.engine.model.kokoro_synth import KokoroSynthesizer


class _CapturedOutput:
    """Stands in for ``KModel.Output`` while the pipeline runs: no durations, so it joins no timestamps."""

    audio = None
    pred_dur = None


class _Capture:
    """Takes the pipeline's model calls (``KPipeline.infer``: ``model(ps, ref_s, speed, return_output=True)``)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.device = model.device
        self.calls: list[BatchItem] = []

    def __call__(self, phonemes: str, ref_s: torch.Tensor, speed: float = 1, return_output: bool = False) -> Any:
        self.calls.append(item_of(self.model, phonemes, ref_s, speed))
        return _CapturedOutput()


def synthesize_batch(
    synthesizer: KokoroSynthesizer, jobs: Sequence[BatchJob], should_stop: Callable[[], bool] | None = None
) -> list[SynthesisResult]:
    """Each job's ``SynthesisResult``, as ``synthesizer.synthesize`` would make it, from one padded forward."""
    from kokoro import KPipeline

    from voicedesk.engine.model.kokoro_synth import SynthesisInterrupted, make_monotonic, word_timings

    capture = _Capture(synthesizer.model)
    planned: list[list[tuple[Any, int]]] = []  # per job: (pipeline result, index of its captured piece)
    for job in jobs:
        spec, pack = synthesizer.resolve_voice(job.voice)
        pipeline = synthesizer.pipeline(language_of(parse_voice_spec(spec)[0].source))
        pieces = []
        for result in pipeline(job.text, voice=pack, speed=job.speed, model=capture):
            if isinstance(result.output, _CapturedOutput):
                pieces.append((result, len(capture.calls) - 1))
        planned.append(pieces)

    def check() -> None:
        if should_stop is not None and should_stop():
            raise SynthesisInterrupted("synthesis stopped: every session of the batch was cancelled")

    outputs = forward_batch(synthesizer.model, capture.calls, check)
    results = []
    for pieces in planned:
        audio_parts: list[np.ndarray] = []
        words: list[WordTiming] = []
        phonemes: list[str] = []
        offset = 0
        for result, index in pieces:
            output = outputs[index]
            audio = output.audio.numpy().astype(np.float32, copy=False).reshape(-1)
            if result.tokens:
                KPipeline.join_timestamps(result.tokens, output.pred_dur)
            start_s, end_s = offset / SAMPLE_RATE, (offset + len(audio)) / SAMPLE_RATE
            words.extend(word_timings(result.tokens, start_s, end_s))
            audio_parts.append(audio)
            phonemes.append(result.phonemes)
            offset += len(audio)
        joined = np.concatenate(audio_parts) if audio_parts else np.zeros(0, dtype=np.float32)
        results.append(SynthesisResult(audio=joined, words=make_monotonic(words), phonemes=" ".join(phonemes)))
    return results


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
