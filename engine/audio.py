"""Sample-format conversions used on every path (engine events, wire, player, WAV files)."""

from __future__ import annotations

import io
import struct
import wave

import numpy as np

SAMPLE_RATE = 24_000
"""Kokoro's output rate; hard-wired in KModel, and the wire format's rate."""

BYTES_PER_SAMPLE = 2
"""Audio travels as PCM16 little-endian mono everywhere (events, wire, player)."""


def float_to_pcm16(audio: np.ndarray) -> bytes:
    """Clips to [-1, 1] (random-weight and some real outputs overshoot) and packs as PCM16 little-endian."""
    clipped = np.clip(np.nan_to_num(audio, nan=0.0, posinf=1.0, neginf=-1.0), -1.0, 1.0)
    return (clipped * 32767.0).round().astype("<i2").tobytes()


def pcm16_to_float(pcm: bytes) -> np.ndarray:
    if len(pcm) % BYTES_PER_SAMPLE:
        raise ValueError(f"PCM16 data must have an even number of bytes; got {len(pcm)}")
    return np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0


def pcm16_duration_s(pcm: bytes | int) -> float:
    size = pcm if isinstance(pcm, int) else len(pcm)
    return size / (BYTES_PER_SAMPLE * SAMPLE_RATE)


def pcm16_to_wav(pcm: bytes, sample_rate: int = SAMPLE_RATE) -> bytes:
    """A complete WAV file (44-byte RIFF header with real sizes + data) for PCM16 mono samples."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(BYTES_PER_SAMPLE)
        wav.setframerate(sample_rate)
        wav.writeframes(pcm)
    return buffer.getvalue()


OPEN_ENDED = 0xFFFFFFFF
"""A WAV size field for a stream of unknown length (ffmpeg, browsers and Python's ``wave`` accept it)."""


def streaming_wav_header(sample_rate: int = SAMPLE_RATE) -> bytes:
    """A 44-byte WAV header for PCM16 mono of unknown length: RIFF and data sizes at their maximum."""
    return struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        b"RIFF",
        OPEN_ENDED,
        b"WAVE",
        b"fmt ",
        16,
        1,  # PCM
        1,  # mono
        sample_rate,
        sample_rate * BYTES_PER_SAMPLE,
        BYTES_PER_SAMPLE,
        8 * BYTES_PER_SAMPLE,
        b"data",
        OPEN_ENDED - 36,
    )
