"""Batching through the real scheduler and sessions: sentences of different sessions that are ready together run
as one padded forward of the real (random-weight) KModel, and each session gets its own audio, as it would
unbatched. Batching is forced on here (on a CPU it does not pay, so serving leaves it off)."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest
import torch

from tests.support.endpoint import GUARD_S
from voicedesk.engine.events import Audio, Error, RequestFinished, SessionConfig
from voicedesk.engine.local import LocalSession
from voicedesk.engine.model.batch import batch_runner
from voicedesk.engine.scheduler import SynthesisScheduler

REQUESTS = {"a": ("Hi there, Sam.", "af_heart"), "b": ("The cat sat.", "am_adam")}
"""Close in size (the policy batches a companion up to 1.5 times the head), different in length of audio."""


async def _speak(synthesizer, batched: bool) -> tuple[dict[str, np.ndarray], int]:
    """Both sessions' requests queue behind a held job, then run (seeded); each session's PCM and the batches."""
    scheduler = SynthesisScheduler(batch_runner=batch_runner(synthesizer) if batched else None)
    gate, started = threading.Event(), threading.Event()
    held = scheduler.submit("hold", lambda: started.set() or gate.wait(GUARD_S), urgent=True, deadline=-1.0)
    await asyncio.to_thread(started.wait, GUARD_S)
    sessions = {name: LocalSession(synthesizer, scheduler, SessionConfig(voice=voice)) for name, (_t, voice) in
                REQUESTS.items()}  # fmt: skip
    for name, session in sessions.items():
        await session.synthesize(REQUESTS[name][0], request_id=name)
    assert scheduler.pending == 2
    torch.manual_seed(5)  # the vocoder's noise; the batch draws in the order the jobs would run one by one
    gate.set()
    await held

    async def collect(session: LocalSession) -> np.ndarray:
        pcm = bytearray()
        async for event in session.events():
            assert not isinstance(event, Error), event
            if isinstance(event, Audio):
                pcm += event.pcm
            if isinstance(event, RequestFinished):
                return np.frombuffer(bytes(pcm), dtype=np.int16).astype(np.int32)
        raise AssertionError("the session ended before its request finished")

    pcm = dict(zip(sessions, await asyncio.gather(*(collect(s) for s in sessions.values())), strict=True))
    for session in sessions.values():
        await session.aclose()
    await scheduler.aclose()
    return pcm, scheduler.batches_run


@pytest.mark.slow  # four forwards of the CPU model
async def test_sessions_batched_together_each_get_their_own_audio(synthesizer):
    alone, batches_alone = await _speak(synthesizer, batched=False)
    together, batches_together = await _speak(synthesizer, batched=True)
    assert (batches_alone, batches_together) == (0, 1)
    for name in REQUESTS:
        assert together[name].shape == alone[name].shape
        assert np.abs(together[name] - alone[name]).max() <= 4  # PCM16 steps: float noise, not another sound
    assert together["a"].shape != together["b"].shape  # and not each other's
