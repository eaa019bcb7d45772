"""The synthesizer's two halves through the real random-weight Kokoro: ``prepare`` (front-end + G2P) and
``render`` (the model); ``synthesize`` is both, and its word timings point at the text as sent."""

from __future__ import annotations

import pickle

import numpy as np
import torch

from tests.support.fake_hf_cache import PINNED_FRAMES, SAMPLES_PER_FRAME
from voicedesk.engine.events import SAMPLE_RATE
from voicedesk.engine.text.frontend.lexicon import parse_lexicon
from voicedesk.engine.text.frontend.settings import TextSettings


def test_synthesize_is_render_of_prepare_and_words_carry_source_spans(synthesizer):
    text = "It is -5°C, Siobhan."
    settings = TextSettings(lexicon=parse_lexicon([{"word": "Siobhan", "phonemes": "ʃɪvˈɔn"}]))
    prepared = pickle.loads(pickle.dumps(synthesizer.prepare(text, "af_heart", settings)))
    assert "mˈInəs" in prepared.phonemes and "ʃɪvˈɔn" in prepared.phonemes
    torch.manual_seed(7)
    rendered = synthesizer.render(prepared, "af_heart", 1.0)
    torch.manual_seed(7)
    whole = synthesizer.synthesize(text, "af_heart", 1.0, settings=settings)
    np.testing.assert_array_equal(rendered.audio, whole.audio)
    assert whole.phonemes == prepared.phonemes
    said = {w.word: text[w.start_char : w.end_char] for w in whole.words}
    assert said["minus"] == "-5°C" and said["Celsius"] == "-5°C"
    assert said["Siobhan"] == "Siobhan"
    assert [w.word for w in whole.words][:2] == ["It", "is"]


def test_an_ssml_break_is_silence_between_two_forwards(synthesizer):
    text = '<speak>One. <break time="500ms"/> Two.</speak>'
    prepared = synthesizer.prepare(text, "af_heart")
    assert [p.pause_after_s for p in prepared.pieces] == [0.5, 0.0]
    result = synthesizer.render(prepared, "af_heart", 1.0)
    # durations are pinned: each forward lasts PINNED_FRAMES frames per phoneme and per boundary token
    spoken = [PINNED_FRAMES * SAMPLES_PER_FRAME * (len(p.phonemes) + 2) for p in prepared.pieces]
    pause = round(0.5 * SAMPLE_RATE)
    assert len(result.audio) == sum(spoken) + pause
    assert not result.audio[spoken[0] : spoken[0] + pause].any()
    assert result.audio[: spoken[0]].any() and result.audio[spoken[0] + pause :].any()


def test_a_sentence_prepared_ahead_is_what_synthesize_takes_and_sounds_the_same(synthesizer):
    text = "The porch light is at 40 W."
    torch.manual_seed(3)
    inline = synthesizer.synthesize(text, "af_heart", 1.0)
    taken_before = synthesizer.prepared_ahead
    synthesizer.prepare_ahead(text, "af_heart", TextSettings())
    torch.manual_seed(3)
    ahead = synthesizer.synthesize(text, "af_heart", 1.0)
    assert synthesizer.prepared_ahead == taken_before + 1
    np.testing.assert_array_equal(ahead.audio, inline.audio)
    assert ahead.phonemes == inline.phonemes and "wˈɑts" in ahead.phonemes


def test_text_that_cannot_be_read_fails_the_same_when_prepared_ahead(synthesizer):
    from voicedesk.engine.errors import VoicedeskError

    broken = "<speak><s>Unclosed</speak>"
    synthesizer.prepare_ahead(broken, "af_heart", TextSettings())
    try:
        synthesizer.synthesize(broken, "af_heart", 1.0)
    except VoicedeskError as exc:
        assert exc.code.value == "bad_text"
    else:
        raise AssertionError("malformed SSML prepared ahead was synthesized")
