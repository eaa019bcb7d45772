"""Every voice and blend at one loudness, learnt from what each said (no synthesis of its own, so nothing waits):
with the real Kokoro (random weights make noise, which still has a loudness), said again, they land within 1 LU."""

from __future__ import annotations

import numpy as np
import pytest

from tests.app.house.helpers import synthesize
from voicedesk.app.house.loudness import DEFAULT_GAIN, LEARNT_FROM, LoudnessCache, gain_for, measure
from voicedesk.engine.audio import float_to_pcm16
from voicedesk.engine.events import SAMPLE_RATE
from voicedesk.engine.local import LocalEngine

VOICES = ("af_heart", "am_adam", "bf_emma", "af_heart,am_adam", "am_adam:0.7,bf_emma:0.3")
SAID = ("Attention please.", "Is anyone home?")  # short: the whole check says about 6 s per voice
UNSEEN = "The garage is open."


def tone(level: float, seconds: float = 2.0) -> np.ndarray:
    t = np.arange(int(SAMPLE_RATE * seconds)) / SAMPLE_RATE
    return level * np.sin(2 * np.pi * 1000 * t)


def test_gain_reaches_the_target_and_is_bounded():
    assert 20 * np.log10(gain_for(-30.0, -20.0)) == pytest.approx(10.0)
    assert 20 * np.log10(gain_for(-80.0, -20.0)) == pytest.approx(24.0)
    quiet = tone(0.01)
    assert measure(quiet * gain_for(measure(quiet))) == pytest.approx(-20.0, abs=0.1)


async def test_an_unheard_voice_plays_at_once_at_the_default_gain_and_what_it_says_teaches_its_gain(tmp_path):
    cache = LoudnessCache(tmp_path / "loudness.json")
    assert cache.gain("local:af_heart") == DEFAULT_GAIN  # nothing to wait for
    quiet = tone(0.01)
    await cache.learn("local:af_heart", float_to_pcm16(quiet))
    await cache.learn("local:af_heart", float_to_pcm16(tone(0.01, 0.1)))  # too short to measure: ignored
    await cache.learn("local:af_heart", float_to_pcm16(np.zeros(SAMPLE_RATE)))  # silence: ignored
    assert cache.learnt["local:af_heart"][1] == 1
    assert measure(quiet * cache.gain("local:af_heart")) == pytest.approx(-20.0, abs=0.1)
    assert LoudnessCache(tmp_path / "loudness.json").gain("local:af_heart") == cache.gain("local:af_heart")
    for _ in range(3 * LEARNT_FROM):  # the voice got louder: the estimate follows, over about LEARNT_FROM
        await cache.learn("local:af_heart", float_to_pcm16(tone(0.1)))
    assert measure(tone(0.1) * cache.gain("local:af_heart")) == pytest.approx(-20.0, abs=0.5)
    (tmp_path / "bad.json").write_text('{"local:x": -20.0}')  # an older file's shape: learnt again, no crash
    assert LoudnessCache(tmp_path / "bad.json").gain("local:x") == DEFAULT_GAIN


@pytest.mark.slow
async def test_voices_and_blends_land_within_one_lu_after_learning(synthesizer, tmp_path):
    engine = LocalEngine(synthesizer)
    cache = LoudnessCache(tmp_path / "loudness.json")
    before, after, unseen = {}, {}, {}
    try:
        for voice in VOICES:
            for text in SAID:
                await cache.learn(voice, float_to_pcm16(await synthesize(engine, voice, text)))
            gain = cache.gain(voice)
            # Said again (the vocoder's noise differs each time). With random weights one sentence's loudness
            # depends on the sentence about as much as on the voice, so the check is a fresh synthesis of the
            # sentences it learnt from; an unseen sentence's spread is printed.
            check = float(np.mean([measure(await synthesize(engine, voice, text)) for text in SAID]))
            before[voice] = check
            after[voice] = check + 20 * np.log10(gain)
            unseen[voice] = measure(await synthesize(engine, voice, UNSEEN)) + 20 * np.log10(gain)
    finally:
        await engine.aclose()
    print(f"an unseen sentence, normalized: {max(unseen.values()) - min(unseen.values()):.2f} LU spread; {unseen}")
    spread_before = max(before.values()) - min(before.values())
    spread_after = max(after.values()) - min(after.values())
    print(f"loudness spread: {spread_before:.2f} LU as synthesized, {spread_after:.2f} LU normalized; {after}")
    assert spread_after <= 1.0, (before, after)
    assert all(abs(lufs - cache.target) <= 1.0 for lufs in after.values())
