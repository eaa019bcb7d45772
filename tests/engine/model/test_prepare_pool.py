"""The preparation pool with real worker processes (spawn): front-end and G2P in a worker give the same pieces, the
same audio and the same errors as in-process; a killed worker is replaced and its sentence retried; a sentence
whose worker dies twice fails with a clear error; closing leaves no process behind."""

from __future__ import annotations

import multiprocessing
import os
import signal

import numpy as np
import pytest
import torch

from tests.support.pool_tasks import dies, no_setup
from voicedesk.engine.errors import ErrorCode, VoicedeskError, VoiceError
from voicedesk.engine.model.prepare_pool import PreparePool, auto_workers, prepare_in_worker
from voicedesk.engine.text.frontend.lexicon import parse_lexicon
from voicedesk.engine.text.frontend.settings import DEFAULT_TEXT_SETTINGS, TextSettings

SENTENCES = (
    ("It is -5°C, Siobhan.", TextSettings(lexicon=parse_lexicon([{"word": "Siobhan", "phonemes": "ʃɪvˈɔn"}]))),
    ('<speak>One. <break time="300ms"/> Two.</speak>', DEFAULT_TEXT_SETTINGS),
    ("The meeting moved to 3:30 pm on March 4th.", DEFAULT_TEXT_SETTINGS),
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def pool(synthesizer):
    pool = PreparePool(1, synthesizer.worker_setup())
    pool.start()
    yield pool
    pool.close()


def test_workers_prepare_the_same_pieces_and_audio_as_in_process(synthesizer, pool):
    for text, settings in SENTENCES:
        here = synthesizer.prepare(text, "af_heart", settings)
        there = pool.submit(text, "a", settings).result()
        assert (there.spoken, there.pieces) == (here.spoken, here.pieces) and there.pieces
    assert pool.stages.count == len(SENTENCES) and all(s >= 0 for s in pool.stages.snapshot()["g2p"])
    # Through the synthesizer: the sentence prepared in the worker sounds exactly as the one prepared here.
    text, settings = SENTENCES[0]
    torch.manual_seed(5)
    inline = synthesizer.synthesize(text, "af_heart", 1.0, settings=settings)
    synthesizer.use_prepare_pool(pool)
    try:
        assert synthesizer.prepare_workers == 1
        torch.manual_seed(5)
        pooled = synthesizer.synthesize(text, "af_heart", 1.0, settings=settings)
    finally:
        synthesizer.use_prepare_pool(None)
    assert pool.stages.count == len(SENTENCES) + 1
    assert pooled.phonemes == inline.phonemes
    np.testing.assert_array_equal(pooled.audio, inline.audio)


def test_errors_raised_in_a_worker_are_the_in_process_errors(synthesizer, pool):
    broken = "<speak><s>Unclosed</speak>"
    with pytest.raises(VoicedeskError) as here:
        synthesizer.prepare(broken, "af_heart")
    with pytest.raises(VoicedeskError) as there:
        pool.submit(broken, "a").result()
    assert type(there.value) is type(here.value)
    assert (there.value.code, there.value.message, there.value.advice) == (
        here.value.code,
        here.value.message,
        here.value.advice,
    )
    assert there.value.code is ErrorCode.BAD_TEXT

    with pytest.raises(VoiceError) as here:
        synthesizer.pipeline("q")
    with pytest.raises(VoiceError) as there:
        pool.submit("Hello.", "q").result()
    assert (there.value.code, str(there.value)) == (here.value.code, str(here.value))


def test_a_killed_worker_is_replaced_and_its_sentence_prepared(synthesizer, pool):
    [first] = pool.worker_pids()
    replaced = pool.replaced
    os.kill(first, signal.SIGKILL)
    # Whether the executor noticed before this sentence got in or while it was in, the pool starts fresh.
    prepared = pool.submit("Back in a moment.", "a").result(timeout=240)
    assert prepared.pieces == synthesizer.prepare("Back in a moment.", "af_heart").pieces
    assert pool.replaced == replaced + 1
    assert first not in pool.worker_pids() and pool.worker_pids()


def test_a_sentence_whose_worker_dies_twice_fails_with_a_clear_error(synthesizer):
    pool = PreparePool(1, synthesizer.worker_setup(), task=dies, initializer=no_setup)
    try:
        with pytest.raises(VoicedeskError) as failed:
            pool.submit("Anything.", "a").result(timeout=60)
        assert failed.value.code is ErrorCode.SYNTHESIS_FAILED
        assert "died twice" in failed.value.message
        assert pool.replaced == 2
    finally:
        pool.close()


def test_close_leaves_no_process_behind(synthesizer):
    pool = PreparePool(2, synthesizer.worker_setup(), task=prepare_in_worker, initializer=no_setup)
    pool.start()
    pids = pool.worker_pids()
    assert len(pids) == 2 and all(_alive(pid) for pid in pids)
    pool.close()
    assert not any(_alive(pid) for pid in pids)
    assert not [p for p in multiprocessing.active_children() if p.pid in pids]
    with pytest.raises(VoicedeskError) as refused:
        pool.submit("Too late.", "a").result()
    assert refused.value.code is ErrorCode.SESSION_CLOSING


def test_worker_counts():
    assert auto_workers("cuda:0", cores=4) == 3
    assert auto_workers("cuda", cores=2) == 0
    assert auto_workers("cpu", cores=16) == 0
