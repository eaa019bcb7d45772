"""When sentences of different sessions share one padded forward (``engine.model.batch``), and which ones. Pure.

Batching pays where one forward of several sentences takes less than the same forwards one by one: on a GPU,
where a forward of one short sentence leaves most of the device idle (Kokoro-FastAPI measured about 8 % more
throughput at batch 1 and about 50 % at 128); not on a CPU, where padding is extra work and the cores are already
busy. So it is off unless the device is CUDA and a measurement there found it faster (``BatchMode``), or a test
forces it.

Which jobs join the one the scheduler picked (``companions``) keeps the scheduler's promises:

- first-chunk priority: a first sentence (urgent) is batched only with other first sentences, and a later
  sentence only with later ones (when a later one heads the queue, no first sentence is waiting);
- the bounded call: a companion is never much longer than the head (``max_stretch``), so the batch takes about
  as long as the head's own forward on a device where batching pays, and a newcomer waits no longer behind it
  than behind the head alone; at most ``max_items`` jobs.
"""

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
