"""When a first sentence may stop a call already on the model (pure: no clock, no I/O).

A model call cannot be cut short and resumed, but it can be stopped between model layers and run again later
(``engine.scheduler``). That is worth doing while a newcomer waits in silence for its first sentence behind a call
whose audio is not needed for seconds (a session far ahead of its listener: an agent streaming text faster than
speech, a long reply on a fast model), or behind a long call whose own listener waits for it anyway (a long first
sentence, a flood on a model slower than speech). The call is stopped and queued again; the newcomer waits a model
layer, not a sentence. Splitting calls short (``engine.session_driver``) bounds
that wait too, but only down to a clause: a call short enough to cost a newcomer less than a fifth of its own
first call would be a word or two, and would be heard.

It is not worth it, and not done, when:

- its session's audio is needed before the redo could finish: the listener would hear a gap
  (``deadline - arrival`` must cover the first sentences that go before it, the redo, and a margin). When its
  listener waits for it anyway (it is a first sentence itself, or it would end late: a model slower than its
  speech), the shorter wait goes first, or the quieter address's: it is stopped when what is left of it is longer
  than the newcomer's call plus the work thrown away, or when its address holds more sessions than the newcomer's;
- what is left of it is short next to the newcomer's own call (waiting costs less than ``WORTH_FRACTION`` of it);
- stopping it now would throw away more than ``MAX_WASTE_FRACTION`` of its own cost over all its stops (the work
  thrown away stays bounded: a call at most doubles its model time, however many newcomers arrive during it);
- the model's speed is not known yet (nothing to weigh with).
"""

from __future__ import annotations

from dataclasses import dataclass

WORTH_FRACTION = 0.2
"""Stop a call only when what is left of it is longer than this share of the newcomer's own first call: waiting for
less than that keeps the newcomer within 1.2× of its time to first audio alone."""
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
    """Whether a first sentence of ``first_size`` phonemes arriving at ``arrival`` (the running call's clock) should
    stop ``running``. ``first_work_ahead``: first sentences of other sessions already queued (they go first too)."""
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
