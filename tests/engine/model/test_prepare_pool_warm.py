"""Warming across the preparation pool, with real worker processes (spawn, NeMo and misaki loaded in each): a
fragment still arriving is warmed in a worker through the synthesizer's own warm path, and whichever worker later
prepares the whole sentence answers its numbers from its memo (the warmed stretches travel with the sentence); a
warm waits while real sentences leave no worker idle, and only the newest fragment is warmed."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import wait

import pytest

from voicedesk.engine.model.prepare_pool import PreparePool
from voicedesk.engine.text.frontend.settings import DEFAULT_TEXT_SETTINGS

pytestmark = pytest.mark.slow  # two worker processes loading NeMo and misaki: about a minute on a busy machine

GUARD_S = 240.0
"""A guard against hanging forever on a busy machine, not a speed requirement."""


def _wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + GUARD_S
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.fixture(scope="module")
def pool(synthesizer):
    pool = PreparePool(2, synthesizer.worker_setup())
    pool.start()
    yield pool
    pool.close()


def test_a_fragment_warmed_in_the_pool_is_answered_from_memory_by_whichever_worker_prepares_it(synthesizer, pool):
    warmed = pool.warmed
    synthesizer.use_prepare_pool(pool)
    try:
        # as the driver hints a held fragment: four words after the number, so its stretch is final
        synthesizer.warm("It hit 37°C in the garage today, ", "af_heart", DEFAULT_TEXT_SETTINGS)
        assert synthesizer._warmer is not None and synthesizer._warmer.wait_idle(GUARD_S)
        _wait_until(lambda: pool.warmed == warmed + 1)
    finally:
        synthesizer.use_prepare_pool(None)
    assert pool.warm_order[-1] == "warm:It hit 37°C in the garage today, "

    # Long enough (G2P of many words) that the second of two sent at once goes to the other, idle worker.
    sentence = (
        "It hit 37°C in the garage today, and the long afternoon went on while the neighbours watered their "
        "gardens, walked their dogs along the river and talked about the weather over the fence."
    )
    workers = set(pool.worker_pids())
    assert len(workers) == 2
    results = []
    deadline = time.monotonic() + GUARD_S
    while {r.worker_pid for r in results} != workers:  # two at once until each worker has prepared it
        assert time.monotonic() < deadline, "one worker took every sentence"
        batch = [pool.submit(sentence, "a") for _ in range(2)]
        results += [future.result(timeout=GUARD_S) for future in batch]
    # Each worker's first time with this sentence: the one that did not warm it has only the seed to go on.
    assert all(r.nemo_calls == 0 and r.memo_hits >= 1 for r in results), [(r.nemo_calls, r.memo_hits) for r in results]
    assert all("thirty seven degrees Celsius" in r.spoken.text for r in results)

    # The figures can say otherwise: a number nobody warmed reaches NeMo.
    cold = pool.submit("It hit 44°C in the shed today.", "a").result(timeout=GUARD_S)
    assert cold.nemo_calls >= 1


def test_a_warm_waits_behind_real_sentences_and_only_the_newest_fragment_is_warmed(pool):
    warmed = pool.warmed
    long_numbers = "On 3/4/2025 at 6:45 AM it was -12.5°C, 1,234 km from 221B Baker St., and $3.50 a cup. "
    first = pool.submit(long_numbers * 3, "a")
    second = pool.submit(long_numbers * 2, "a")  # both workers busy
    pool.warm("At 9:15 PM", "a")
    pool.warm("At 9:15 PM it was 18°C and ", "a")  # the fragment grew: only this one is worth warming
    third = pool.submit("The bill came to $12.75 at 10:30.", "a")  # real work that arrives after the hint
    done, _ = wait([first, second, third], timeout=GUARD_S)
    assert len(done) == 3 and all(f.exception() is None for f in done)
    _wait_until(lambda: pool.warmed == warmed + 1)
    order = list(pool.warm_order)
    warm_at = order.index("warm:At 9:15 PM it was 18°C and ")
    prepared_at = [i for i, entry in enumerate(order) if entry.startswith("prepare:")][-3:]
    assert all(i < warm_at for i in prepared_at)  # every real sentence came back before the warm ran
    assert "warm:At 9:15 PM" not in order  # the older fragment was never sent
    assert pool.warmed == warmed + 1
