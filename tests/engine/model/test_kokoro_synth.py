"""The Kokoro synthesizer, on the real kokoro/misaki code with random weights from the fake HF cache.

Durations are pinned to 3 frames (3 × 600 samples) per token, so lengths have exact expected values; the
samples themselves are noise, so tests compare them only under the same ``torch.manual_seed``.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from tests.support.fake_hf_cache import FAKE_VOICES, PINNED_FRAMES, SAMPLES_PER_FRAME, random_voice_pack
from voicedesk.engine.errors import VoicedeskError, VoiceError
from voicedesk.engine.events import SAMPLE_RATE, WordTiming
from voicedesk.engine.model.kokoro_synth import KokoroSynthesizer, make_monotonic, select_device, word_timings
from voicedesk.engine.model.voices import KNOWN_VOICES
from voicedesk.engine.model.weights import cached_file, voice_file_name

TOKEN_SAMPLES = PINNED_FRAMES * SAMPLES_PER_FRAME


def token_count(synthesizer: KokoroSynthesizer, phonemes: str) -> int:
    """Model input tokens for one piece: known phoneme symbols plus the start and end tokens."""
    return sum(1 for p in phonemes if p in synthesizer.model.vocab) + 2


def seeded(synthesizer: KokoroSynthesizer, text: str, voice: str, speed: float = 1.0, seed: int = 7):
    torch.manual_seed(seed)  # the vocoder adds noise: same seed, same samples
    return synthesizer.synthesize(text, voice, speed)


def test_loads_on_the_requested_device_with_the_cached_model(synthesizer):
    assert synthesizer.device.startswith("cpu") or synthesizer.device.startswith("cuda")
    assert synthesizer.repo_id == "hexgrad/Kokoro-82M"
    assert len(synthesizer.model.vocab) == 114  # the real config's vocabulary


def test_raw_pipeline_audio_is_600_samples_per_predicted_frame(synthesizer):
    _, pack = synthesizer.resolve_voice("af_heart")
    results = list(synthesizer.pipeline("a")("Hello world. Bye.", voice=pack, speed=1.0))
    assert results
    for result in results:
        assert len(result.audio) == SAMPLES_PER_FRAME * int(result.pred_dur.sum())
        assert result.pred_dur.tolist() == [PINNED_FRAMES] * token_count(synthesizer, result.phonemes)


def test_synthesize_gives_finite_float32_audio_with_ordered_word_timings(synthesizer):
    result = seeded(synthesizer, "Hello world. How are you today?", "af_heart")
    assert result.audio.dtype == np.float32
    assert result.audio.ndim == 1
    assert np.isfinite(result.audio).all()
    assert len(result.audio) == TOKEN_SAMPLES * token_count(synthesizer, result.phonemes)
    assert result.duration_s == len(result.audio) / SAMPLE_RATE == pytest.approx(len(result.audio) / 24_000)
    assert [w.word for w in result.words] == ["Hello", "world", "How", "are", "you", "today"]
    assert result.words[0].start_s == 0.0
    for before, after in zip(result.words, result.words[1:], strict=False):
        assert before.start_s <= before.end_s <= after.start_s <= after.end_s
    # Only the final "?" and the end token come after the last word.
    assert 0 < result.duration_s - result.words[-1].end_s <= 3 * TOKEN_SAMPLES / SAMPLE_RATE + 1e-9
    assert "həlˈO" in result.phonemes


def test_several_pipeline_pieces_are_joined_with_offset_timings(synthesizer):
    _, pack = synthesizer.resolve_voice("af_heart")
    pieces = list(synthesizer.pipeline("a")("Hi there.\nGood day.", voice=pack, speed=1.0))
    assert len(pieces) == 2  # KPipeline splits at newlines
    first_s = len(pieces[0].audio) / SAMPLE_RATE
    result = seeded(synthesizer, "Hi there.\nGood day.", "af_heart")
    assert len(result.audio) == sum(len(p.audio) for p in pieces)
    assert [w.word for w in result.words] == ["Hi", "there", "Good", "day"]
    assert result.words[1].end_s <= first_s <= result.words[2].start_s
    assert result.words[-1].end_s <= result.duration_s


def test_speed_scales_durations(synthesizer):
    normal = seeded(synthesizer, "Hi there.", "af_heart", speed=1.0)
    slow = seeded(synthesizer, "Hi there.", "af_heart", speed=0.5)
    assert len(slow.audio) == 2 * len(normal.audio)
    # Kokoro starts timestamps 3 frames into the start token, so they stretch by 2 within a frame or so.
    assert slow.words[-1].end_s == pytest.approx(2 * normal.words[-1].end_s, abs=0.1)


def test_same_seed_same_samples_and_voices_sound_different(synthesizer):
    a = seeded(synthesizer, "Hi there.", "af_heart").audio
    again = seeded(synthesizer, "Hi there.", "af_heart").audio
    adam = seeded(synthesizer, "Hi there.", "am_adam").audio
    np.testing.assert_array_equal(a, again)
    assert len(adam) == len(a)
    assert not np.allclose(a, adam)


def test_voice_by_path_is_the_same_as_by_name(synthesizer):
    path = cached_file(voice_file_name("af_heart"))
    assert path is not None
    spec = synthesizer.check_voice(str(path))
    assert spec == str(path.resolve())
    by_name = seeded(synthesizer, "Hi there.", "af_heart").audio
    by_path = seeded(synthesizer, "Hi there.", str(path)).audio
    np.testing.assert_array_equal(by_name, by_path)


def test_a_custom_voice_file_is_used(synthesizer, tmp_path):
    custom = tmp_path / "my_voice.pt"
    torch.save(random_voice_pack(99), custom)
    mine = seeded(synthesizer, "Hi there.", str(custom)).audio
    heart = seeded(synthesizer, "Hi there.", "af_heart").audio
    assert len(mine) == len(heart)
    assert not np.allclose(mine, heart)


def test_blend_is_the_weighted_mix_of_the_packs(synthesizer):
    _, heart = synthesizer.resolve_voice("af_heart")
    _, adam = synthesizer.resolve_voice("am_adam")
    spec, blend = synthesizer.resolve_voice("af_heart:0.7,am_adam:0.3")
    assert spec == "af_heart:0.7,am_adam:0.3"
    torch.testing.assert_close(blend, 0.7 * heart + 0.3 * adam)
    # Weights are normalised; plain commas mean equal parts.
    _, scaled = synthesizer.resolve_voice("af_heart:7,am_adam:3")
    torch.testing.assert_close(scaled, blend)
    equal_spec, equal = synthesizer.resolve_voice("af_heart,am_adam")
    assert equal_spec == "af_heart:0.5,am_adam:0.5"
    torch.testing.assert_close(equal, 0.5 * heart + 0.5 * adam)
    # And the blend is what the model hears.
    blended_audio = seeded(synthesizer, "Hi there.", "af_heart:0.7,am_adam:0.3").audio
    torch.manual_seed(7)
    by_hand = next(iter(synthesizer.pipeline("a")("Hi there.", voice=0.7 * heart + 0.3 * adam, speed=1.0)))
    np.testing.assert_allclose(blended_audio, by_hand.audio.numpy(), atol=1e-5)
    assert not np.allclose(blended_audio, seeded(synthesizer, "Hi there.", "af_heart").audio)


def test_british_voice_uses_the_british_pipeline(synthesizer):
    american = synthesizer.synthesize("Water", "af_heart", 1.0)
    british = synthesizer.synthesize("Water", "bf_emma", 1.0)
    assert american.phonemes == "wˈɔTəɹ"
    assert british.phonemes == "wˈɔːtə"


def test_unknown_voice_error_lists_the_local_voices_and_how_to_get_more(synthesizer):
    with pytest.raises(VoiceError) as caught:
        synthesizer.check_voice("af_hart")
    message = caught.value.message
    assert caught.value.code == "unknown_voice"
    for name in FAKE_VOICES:
        assert name in message
    assert "Did you mean 'af_heart'?" in message
    assert "voicedesk models fetch" not in message  # what to do is the advice: a remote client does not get it
    assert "voicedesk models fetch" in caught.value.advice


def test_known_but_missing_voice_says_how_to_fetch_it(synthesizer):
    with pytest.raises(VoiceError, match=r"not downloaded") as caught:
        synthesizer.synthesize("Hi.", "af_bella", 1.0)
    assert "voicedesk models fetch --voices af_bella" in caught.value.advice


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("", "No voice given"),
        ("af_heart,", "empty part"),
        ("af_heart:0.7,am_adam", "weights to some voices only"),
        ("af_heart:-1,am_adam:2", "must be a number from 0 to 1000"),
        ("af_heart:0,am_adam:0", "add up to 0"),
        ("bad name!", "not a voice name"),
        ("/nowhere/voice.pt", "does not exist"),
    ],
)
def test_malformed_voice_specs_are_refused_with_the_reason(synthesizer, spec, expected):
    with pytest.raises(VoiceError, match=expected):
        synthesizer.check_voice(spec)


def test_voice_pack_of_the_wrong_shape_is_refused(synthesizer, tmp_path):
    flat = tmp_path / "flat_voice.pt"
    torch.save(torch.zeros(510, 256), flat)
    with pytest.raises(VoiceError, match=r"\[510, 256\].*\[510, 1, 256\].*unsqueeze"):
        synthesizer.check_voice(str(flat))
    not_a_tensor = tmp_path / "dict_voice.pt"
    torch.save({"style": torch.zeros(3)}, not_a_tensor)
    with pytest.raises(VoiceError, match="does not hold a voice pack"):
        synthesizer.check_voice(str(not_a_tensor))


def test_list_voices_and_catalogue(synthesizer):
    assert synthesizer.list_voices() == sorted(FAKE_VOICES)
    catalog = {v.name: v for v in synthesizer.voice_catalog()}
    assert set(KNOWN_VOICES) <= set(catalog)
    assert len(KNOWN_VOICES) == 54
    assert catalog["af_heart"].downloaded and catalog["af_heart"].language == "American English"
    assert catalog["bf_emma"].language == "British English"
    assert not catalog["af_bella"].downloaded


def test_punctuation_only_text_gives_short_audio_and_no_words(synthesizer):
    result = synthesizer.synthesize("...", "af_heart", 1.0)
    assert result.words == ()
    assert len(result.audio) == TOKEN_SAMPLES * token_count(synthesizer, result.phonemes)


def test_g2p_gives_phonemes_for_every_common_word(synthesizer):
    # misaki issue #58: words silently missing on Python 3.12.
    text = "The quick brown fox jumps over the lazy dog while we walk home together, doesn't it?"
    _, tokens = synthesizer.pipeline("a").g2p(text)
    words = [t for t in tokens if any(c.isalpha() for c in t.text)]
    assert [t.text for t in words] == text.replace(",", "").replace("?", "").split()
    assert all(t.phonemes for t in words), [(t.text, t.phonemes) for t in words if not t.phonemes]


def test_voice_cache_is_safe_across_threads(synthesizer):
    specs = [f"af_heart:{w},am_adam:{10 - w}" for w in range(1, 10)]
    found: dict[str, list[torch.Tensor]] = {s: [] for s in specs}
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for spec in specs:
                found[spec].append(synthesizer.resolve_voice(spec)[1])
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for packs in found.values():
        assert len(packs) == 4
        for pack in packs[1:]:
            torch.testing.assert_close(pack, packs[0])


def test_device_selection(monkeypatch):
    assert select_device("cpu") == "cpu"
    with pytest.raises(VoicedeskError, match="not a device"):
        select_device("toaster")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert select_device(None) == "cpu"
    with pytest.raises(VoicedeskError, match=r"no usable CUDA GPU.*--device cpu") as caught:
        select_device("cuda:1")
    assert caught.value.code == "device_unavailable"


def test_word_timings_skip_untimed_tokens_and_punctuation():
    class Token:
        def __init__(self, text, start, end):
            self.text, self.start_ts, self.end_ts = text, start, end

    tokens = [Token("Hi", 0.0, 0.2), Token(",", 0.2, 0.25), Token("you", None, None), Token("there", 0.3, 0.9)]
    assert word_timings(tokens, offset_s=1.0, end_s=1.5) == [
        WordTiming("Hi", 1.0, 1.2),
        WordTiming("there", 1.3, 1.5),  # clipped to the piece's end
    ]
    overlapping = [WordTiming("a", 0.0, 0.5), WordTiming("b", 0.4, 0.45)]
    assert make_monotonic(overlapping) == (WordTiming("a", 0.0, 0.5), WordTiming("b", 0.5, 0.5))
