"""When sentences of different sessions share one padded forward (``engine.model.batch``), and which (pure).

It pays on a GPU, where one short sentence leaves the device idle, not on a CPU, where padding is extra work.
``companions`` keeps the scheduler's promises: first sentences only with first sentences, no long companions."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

MAX_ITEMS = 8
MAX_STRETCH = 1.5
"""A companion's size (phonemes) may be at most this times the head's."""


class BatchMode(StrEnum):
    AUTO = "auto"
    """On CUDA when the start-up measurement found a batch faster in aggregate; off elsewhere."""
    ON = "on"
    """Always (tests on the CPU, or a device measured by hand)."""
    OFF = "off"


def batching_enabled(mode: BatchMode, device: str, measured_speedup: float | None) -> bool:
    """``measured_speedup``: one-by-one time over batched time for the same sentences (None: not measured)."""
    if mode is BatchMode.ON:
        return True
    if mode is BatchMode.OFF:
        return False
    return device.startswith("cuda") and measured_speedup is not None and measured_speedup > 1.0


@dataclass(frozen=True, slots=True)
class BatchJob:
    """What a sentence's batched synthesis needs (``Synthesizer.synthesize``'s arguments)."""

    text: str
    voice: str
    speed: float
    settings: Any = None
    """The session's ``TextSettings`` (None: the defaults)."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A queued job as the policy sees it."""

    job_id: int
    urgent: bool
    size: int
    batchable: bool


def companions(
    head: Candidate, queued_in_order: Iterable[Candidate], max_items: int = MAX_ITEMS, max_stretch: float = MAX_STRETCH
) -> list[Candidate]:
    """The queued jobs (in the queue's order) to run in one forward with ``head``; empty: run it alone."""
    if not head.batchable or max_items < 2:
        return []
    limit = max(1, head.size) * max_stretch
    chosen: list[Candidate] = []
    for job in queued_in_order:
        if len(chosen) + 1 >= max_items:
            break
        if job.batchable and job.urgent == head.urgent and job.size <= limit:
            chosen.append(job)
    return chosen
