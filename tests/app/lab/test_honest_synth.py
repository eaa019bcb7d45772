"""The honest stand-in: the real text front-end and Kokoro's G2P for every sentence, only the forward faked (at a
per-phoneme cost)."""

from __future__ import annotations

import pytest

from voicedesk.app.lab.honest_synth import SECONDS_PER_PHONEME, HonestSynthesizer
from voicedesk.app.lab.paced_synth import PacedSynthesisInterrupted
from voicedesk.engine.text.frontend.settings import DEFAULT_TEXT_SETTINGS


@pytest.fixture(scope="module")
def honest() -> HonestSynthesizer:
    synthesizer = HonestSynthesizer(s_per_phoneme=0.0005)
    synthesizer.warm_up()  # loads misaki (spaCy) and the front-end's grammars: seconds
    return synthesizer


def test_every_sentence_goes_through_the_front_end_and_g2p_and_sounds_as_long_as_its_phonemes(honest):
    result = honest.synthesize("The **meeting** moved to three o'clock.", "af_heart", 1.0)
    assert "mˈiTɪŋ" in result.phonemes  # misaki's phonemes, not the text
    assert "*" not in result.phonemes  # the front-end took the markdown marks
    assert len(result.audio) / 24000 == pytest.approx(len(result.phonemes) * SECONDS_PER_PHONEME, rel=0.01)
    before = honest.stage_samples.count
    honest.prepare_ahead("Sure.", "af_heart", DEFAULT_TEXT_SETTINGS)  # beside the forward, as Kokoro's
    honest.synthesize("Sure.", "af_heart", 2.0)
    assert honest.stage_samples.count == before + 1  # taken as prepared ahead, not prepared twice
    stages = honest.stage_samples.snapshot()
    assert stages["g2p"][-1] > 0 and stages["front-end"][-1] > 0
    assert len(honest.forward_s) == 2 and honest.stage_samples.count == 2  # the warm-up is not a sentence


def test_the_faked_forward_stops_when_told(honest):
    slow = HonestSynthesizer(s_per_phoneme=1.0)
    slow._preparation = honest._preparation  # already loaded
    polls = []

    def should_stop() -> bool:
        polls.append(1)
        return len(polls) > 2

    with pytest.raises(PacedSynthesisInterrupted):
        slow.synthesize("This would take a minute of faked forward.", "af_heart", 1.0, should_stop)
    assert len(polls) == 3
