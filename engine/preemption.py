"""When a first sentence may stop a call already on the model (pure): the newcomer then waits a model layer, not a
sentence.

A stopped call is queued again (``engine.scheduler``). It is stopped only when its own audio is not needed before the
redo could finish (or its listener waits anyway, and the shorter wait, or the quieter address, goes first), when what is
left of it is not short next to the newcomer's call (``WORTH_FRACTION``), when the work thrown away stays under
``MAX_WASTE_FRACTION`` of its cost, and once the model's speed is known."""

from __future__ import annotations

from dataclasses import dataclass

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
