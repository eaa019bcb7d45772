"""``--play``: the lab plays through a real PortAudio stream into the private PulseAudio null sink and times each
sentence's first sample at the DAC (PortAudio's output time), on the real local engine."""

from __future__ import annotations

import asyncio

import pytest

from tests.app.lab.conftest import SEED, local_engine_factory
from tests.support.audio_capture import require_null_sink
from voicedesk.app.lab.context import LabConfig, LabContext
from voicedesk.app.lab.lab import run_lab
from voicedesk.app.lab.playback import LabPlayer

pytestmark = [pytest.mark.audio, pytest.mark.slow]


async def test_playing_times_each_sentence_at_the_dac(synthesizer):
    require_null_sink()
    player = LabPlayer().open()
    await asyncio.sleep(0.25)  # the stream is already playing silence when speech starts (null-sink rule 2)
    ctx = LabContext(LabConfig(seed_sentences=SEED[:2], repeat=1), local_engine_factory(synthesizer), player=player)
    try:
        (seed,) = await run_lab(ctx, ["seed"])
    finally:
        player.close()
    assert seed.skipped is None
    assert len(seed.runs) == 2
    for run in seed.runs:
        assert run.record.errors == ()
        assert run.timeline.problems == ()  # among them: the DAC is never before the first byte
        (sentence,) = run.timeline.sentences
        assert sentence.dac_at_s is not None and sentence.dac_at_s >= sentence.first_byte_at_s
        assert sentence.steps["output_s"] == sentence.dac_at_s - sentence.first_byte_at_s
        assert sentence.heard_at_s == sentence.dac_at_s + sentence.leading_silence_s
        assert isinstance(sentence.underruns, int)  # counted, because it was played
        assert run.timeline.summary["dac_at_s"] == sentence.dac_at_s
