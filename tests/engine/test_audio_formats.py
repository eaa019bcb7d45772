"""Output formats and resampling (engine/audio_formats.py), checked by decoding with readers other than the
encoder: Python's ``wave`` for WAV, numpy for raw PCM, FFmpeg's demuxers and decoders (PyAV) for mp3, Ogg
Opus, FLAC and ADTS AAC."""

from __future__ import annotations

import io
import wave

import av
import numpy as np
import pytest
import soxr

from tests.support.signals import speech_like
from voicedesk.engine.audio_formats import (
    FORMATS,
    MIME_TYPES,
    SAMPLE_RATES,
    open_encoder,
    output_problem,
    rates_for,
    resample,
    streaming_wav_header,
    whole_wav,
)
from voicedesk.engine.events import SAMPLE_RATE

SECONDS = 1.5
PCM = speech_like(SECONDS)
DEMUXERS = {"mp3": "mp3", "opus": "ogg", "flac": "flac", "aac": "aac"}
CODEC_SLACK_S = {"mp3": 0.25, "aac": 0.25}
"""Streamed mp3 (no Xing frame) and ADTS AAC do not tell decoders their encoder delay and padding."""

CASES = [(fmt, rate) for fmt in FORMATS for rate in rates_for(fmt)]


def chunks(pcm: bytes, sizes_s: tuple[float, ...] = (0.037, 0.25, 0.101)) -> list[bytes]:
    """Uneven chunks, as sentences and network reads come."""
    out, start, i = [], 0, 0
    while start < len(pcm):
        size = int(sizes_s[i % len(sizes_s)] * SAMPLE_RATE) * 2
        out.append(pcm[start : start + size])
        start += size
        i += 1
    return out


def encode(audio_format: str, rate: int, streaming: bool, pcm: bytes = PCM) -> list[bytes]:
    encoder = open_encoder(audio_format, rate, streaming=streaming)
    pieces = [encoder.encode(chunk) for chunk in chunks(pcm)]
    pieces.append(encoder.flush())
    pieces.append(encoder.finish())
    return pieces


def decode(data: bytes, audio_format: str) -> tuple[np.ndarray, int]:
    """Samples and their rate, read by something other than the encoder."""
    if audio_format == "pcm":
        return np.frombuffer(data, dtype="<i2"), -1
    if audio_format == "wav":
        with wave.open(io.BytesIO(data)) as reader:
            assert (reader.getnchannels(), reader.getsampwidth()) == (1, 2)
            frames = reader.readframes(reader.getnframes())
            return np.frombuffer(frames, dtype="<i2"), reader.getframerate()
    parts, rate = [], 0
    with av.open(io.BytesIO(data), format=DEMUXERS[audio_format]) as container:
        for frame in container.decode(audio=0):
            samples = frame.to_ndarray().reshape(-1)
            if samples.dtype.kind == "f":  # the lossy decoders give floats in [-1, 1]
                samples = np.round(samples * 32768).astype(np.int32)
            parts.append(samples)
            rate = frame.sample_rate
    return np.concatenate(parts), rate


@pytest.mark.parametrize("streaming", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize(("audio_format", "rate"), CASES)
def test_every_format_and_rate_decodes_to_the_audio_sent(audio_format, rate, streaming):
    data = b"".join(encode(audio_format, rate, streaming))
    samples, decoded_rate = decode(data, audio_format)
    if audio_format == "pcm":
        decoded_rate = rate
    elif audio_format == "opus":
        assert decoded_rate == 48000  # Ogg Opus always decodes at 48 kHz; the encoding rate is in its header
    else:
        assert decoded_rate == rate
    duration = len(samples) / decoded_rate
    slack = 0.0 if not streaming and audio_format != "aac" else CODEC_SLACK_S.get(audio_format, 0.0)
    assert SECONDS - 1 / rate <= duration <= SECONDS + slack + 1 / rate
    if audio_format in ("pcm", "wav", "flac"):  # lossless: the resampled samples (chunked: within 2 LSB)
        expected = np.frombuffer(resample(PCM, rate), dtype="<i2").astype(np.int32)
        assert len(samples) == len(expected)
        assert np.abs(samples.astype(np.int32) - expected).max() <= 2
    else:  # lossy: still the signal, not silence or noise
        level = np.sqrt(np.mean(samples.astype(np.float64) ** 2))
        reference = np.sqrt(np.mean(np.frombuffer(PCM, dtype="<i2").astype(np.float64) ** 2))
        assert 0.5 * reference < level < 2.0 * reference


def test_pcm_at_the_native_rate_is_the_input_unchanged():
    assert b"".join(encode("pcm", SAMPLE_RATE, streaming=True)) == PCM


@pytest.mark.parametrize("audio_format", ["wav", "opus", "flac", "mp3", "aac"])
def test_no_header_goes_out_without_audio(audio_format):
    """A client timing its first non-empty read must be timing audio: the first piece out carries some (fed
    10 ms at a time, the container header is ready long before the first audio page or frame)."""
    encoder = open_encoder(audio_format, SAMPLE_RATE)
    first = b""
    for piece in chunks(PCM, (0.01,)):
        first = encoder.encode(piece)
        if first:
            break
    encoder.close()
    assert first, "nothing came out of 1.5 s of audio"
    if audio_format == "wav":
        assert first.startswith(streaming_wav_header(SAMPLE_RATE)) and len(first) > 44
    elif audio_format in ("mp3", "aac"):  # bare frames: no container header at all; the piece is a frame
        assert first[0] == 0xFF and first[1] & 0xE0 == 0xE0
    else:
        samples, _rate = decode(first, audio_format)
        assert len(samples) > 0


def test_streaming_wav_header_describes_the_stream_and_whole_wav_has_real_sizes():
    pcm = resample(PCM, 16000)
    with wave.open(io.BytesIO(streaming_wav_header(16000) + pcm)) as reader:
        assert (reader.getframerate(), reader.getnchannels(), reader.getsampwidth()) == (16000, 1, 2)
        assert reader.getnframes() > 2_000_000_000  # open-ended, as a stream's must be
        assert reader.readframes(reader.getnframes()) == pcm
    whole = b"".join(encode("wav", 16000, streaming=False))
    assert whole[:44] == whole_wav(pcm, 16000)[:44]
    assert whole[:4] == b"RIFF" and int.from_bytes(whole[4:8], "little") == len(whole) - 8
    # The AWS sample's client reads the rate at byte 24 and the duration as (size - 44) / (rate * 2).
    assert int.from_bytes(whole[24:28], "little") == 16000
    assert (len(whole) - 44) / (16000 * 2) == pytest.approx(SECONDS, abs=1e-4)
    with wave.open(io.BytesIO(whole)) as reader:
        assert reader.getnframes() == len(pcm) // 2


def test_a_whole_file_comes_out_of_finish_only():
    pieces = encode("flac", 16000, streaming=False)
    assert not any(pieces[:-1]) and pieces[-1].startswith(b"fLaC")


@pytest.mark.parametrize("rate", [r for r in SAMPLE_RATES if r != SAMPLE_RATE])
def test_chunked_resampling_equals_one_shot_without_clicks(rate):
    one_shot = soxr.resample(np.frombuffer(PCM, dtype="<i2"), SAMPLE_RATE, rate).astype(np.int32)
    encoder = open_encoder("pcm", rate)
    streamed = b"".join([encoder.encode(c) for c in chunks(PCM)] + [encoder.finish()])
    chunked = np.frombuffer(streamed, dtype="<i2").astype(np.int32)
    assert len(chunked) == len(one_shot) == round(len(PCM) / 2 * rate / SAMPLE_RATE)
    assert np.abs(chunked - one_shot).max() <= 2  # a click would be hundreds to thousands

    # What the test guards against: resampling each chunk on its own makes steps at the boundaries.
    separate = np.concatenate([soxr.resample(np.frombuffer(c, dtype="<i2"), SAMPLE_RATE, rate) for c in chunks(PCM)])
    assert np.abs(separate[: len(one_shot)].astype(np.int32) - one_shot[: len(separate)]).max() > 100


def test_flush_hands_over_what_the_resampler_holds():
    encoder = open_encoder("pcm", 16000)
    sentence = PCM[: 2 * SAMPLE_RATE // 2]  # half a second
    held = encoder.encode(sentence)
    assert len(held) < 16000  # the filter keeps its tail...
    assert abs(len(held + encoder.flush()) - 16000) <= 2  # ...until the sentence ends
    assert abs(len(encoder.encode(sentence) + encoder.finish()) - 16000) <= 2


def test_mime_types_and_refusals():
    assert set(MIME_TYPES) == set(FORMATS)
    assert MIME_TYPES["mp3"] == "audio/mpeg" and MIME_TYPES["opus"] == "audio/ogg"
    assert output_problem("mp3", 16000) is None
    assert "8000, 16000, 24000, 48000" in (output_problem("opus", 22050) or "")
    assert "22050" in (output_problem("wav", 11025) or "")
    assert "pcm, wav, mp3" in (output_problem("ogg", 24000) or "")
    with pytest.raises(ValueError, match="with opus"):
        open_encoder("opus", 44100)
    encoder = open_encoder("pcm", 8000)
    with pytest.raises(ValueError, match="even number"):
        encoder.encode(b"\x00\x01\x02")
    encoder.finish()
    with pytest.raises(RuntimeError, match="finished"):
        encoder.encode(b"\x00\x00")


@pytest.mark.parametrize("audio_format", ["mp3", "opus", "flac", "aac", "wav"])
def test_an_encoder_dropped_midway_can_be_closed_twice(audio_format):
    encoder = open_encoder(audio_format, 16000 if audio_format != "opus" else 24000)
    encoder.encode(PCM[:9600])
    encoder.close()
    encoder.close()
    with pytest.raises(RuntimeError):
        encoder.encode(PCM[:9600])
