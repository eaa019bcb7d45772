"""Chimes (built-in, generated; an operator's WAV) and the shaped player: the chime and the speech in one buffer
with no gap, gain and volume applied, positions counted from the first word."""

from __future__ import annotations

import wave

import numpy as np
import pytest

from voicedesk.app.console.announcement import Priority
from voicedesk.app.house.chimes import BUILT_IN, DEFAULT_CHIMES, PEAK, TAIL_S, ChimeError, Chimes, built_in, load_wav
from voicedesk.app.house.shaped_player import ShapedPlayer, mark_announcement_role
from voicedesk.app.player import AudioPlayer
from voicedesk.engine.events import SAMPLE_RATE


def test_built_in_chimes_are_distinct_short_and_peak_at_the_chime_level():
    sounds = {name: built_in(name) for name in BUILT_IN}
    for name, sound in sounds.items():
        assert sound.dtype == np.float32
        assert 0.3 < len(sound) / SAMPLE_RATE < 1.5, name
        assert np.max(np.abs(sound)) == pytest.approx(PEAK, rel=1e-3)
        assert not np.any(sound[-int(TAIL_S * SAMPLE_RATE) :])  # a silent tail before the first word
        assert abs(sound[0]) < 0.01  # no click at the start
    spectra = {name: np.argmax(np.abs(np.fft.rfft(s[: SAMPLE_RATE // 4], SAMPLE_RATE))) for name, s in sounds.items()}
    assert len(set(spectra.values())) == len(sounds)  # each starts on its own note
    assert set(DEFAULT_CHIMES.values()) <= set(BUILT_IN)


def write_wav(path, samples: np.ndarray, rate: int, channels: int = 1) -> None:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes((np.repeat(samples, channels) * 32767).astype("<i2").tobytes())


def test_an_operators_wav_is_resampled_to_mono_at_the_players_rate(tmp_path):
    t = np.arange(44_100) / 44_100
    path = tmp_path / "bell.wav"
    write_wav(path, 0.9 * np.sin(2 * np.pi * 880 * t), 44_100, channels=2)
    sound = load_wav(path)
    assert len(sound) == pytest.approx(SAMPLE_RATE * (1 + TAIL_S), abs=50)
    peak_hz = np.argmax(np.abs(np.fft.rfft(sound[:SAMPLE_RATE])))  # 1 s of samples: 1 Hz per bin
    assert peak_hz == pytest.approx(880, abs=2)
    chimes = Chimes({"bell": path}, {Priority.URGENT: "bell", Priority.NORMAL: "none", Priority.LOW: "ding"})
    assert chimes.for_announcement(None, Priority.URGENT) is not None
    assert chimes.for_announcement(None, Priority.NORMAL) is None
    assert chimes.for_announcement("dingdong", Priority.NORMAL) is not None
    assert "bell" in chimes.names and "none" in chimes.names


def test_a_bad_chime_file_says_what_is_wrong(tmp_path):
    with pytest.raises(ChimeError, match="cannot read"):
        load_wav(tmp_path / "missing.wav")
    (tmp_path / "text.wav").write_text("not audio")
    with pytest.raises(ChimeError, match="PCM WAV"):
        load_wav(tmp_path / "text.wav")
    write_wav(tmp_path / "silent.wav", np.zeros(1000), 16_000)
    with pytest.raises(ChimeError, match="silent"):
        load_wav(tmp_path / "silent.wav")
    with pytest.raises(ChimeError, match="not a chime"):
        Chimes(defaults={Priority.URGENT: "gong"})


def test_the_chime_and_the_speech_play_from_one_buffer_without_a_gap():
    player = ShapedPlayer(AudioPlayer())  # the buffer only: no stream is opened
    chime = built_in("ding")
    player.prepare(loudness_gain=2.0, volume=0.5, chime=chime)
    player.begin_utterance()
    speech = np.full(4800, 0.25, dtype=np.float32)
    player.push((speech * 32767).astype("<i2").tobytes(), seq=0)
    player.end_utterance()
    out = np.zeros(len(chime) + len(speech) + 2400, dtype=np.float32)
    result = player.buffer.read_into(out, 0.0)
    np.testing.assert_allclose(out[: len(chime)], chime * 0.5, atol=1e-6)  # the chime at the priority's volume
    # The first word follows the chime's tail directly, at loudness gain x volume (2.0 x 0.5).
    np.testing.assert_allclose(out[len(chime) : len(chime) + len(speech)], 0.25, atol=1e-3)
    assert result.onsets[0].dac_time == pytest.approx(len(chime) / SAMPLE_RATE)
    assert player.position_s == pytest.approx(len(speech) / SAMPLE_RATE)  # the chime is not part of the speech


def test_the_next_utterance_has_no_chime_unless_prepared_again():
    player = ShapedPlayer(AudioPlayer())
    player.prepare(1.0, 1.0, built_in("ding"))
    player.begin_utterance()
    player.interrupt()
    player.begin_utterance()
    assert player.buffer.queued_samples == 0


def test_the_media_role_is_added_to_pulse_prop_keeping_what_is_there():
    env = {"PULSE_PROP": "application.name=door media.role=music"}
    assert mark_announcement_role(env) == "application.name=door media.role=announcement"
    assert mark_announcement_role({}, "alarm") == "media.role=alarm"
