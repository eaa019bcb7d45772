"""Sample-format conversions used on every path (engine events, wire, player, WAV files)."""

from __future__ import annotations

import io
import wave

import numpy as np

from voicedesk.engine.events import BYTES_PER_SAMPLE, SAMPLE_RATE


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


def pcm16_to_wav(pcm: bytes) -> bytes:
    """A complete WAV file (RIFF header + data) for PCM16 mono 24 kHz samples."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(BYTES_PER_SAMPLE)
        wav.setframerate(SAMPLE_RATE)
        wav.writeframes(pcm)
    return buffer.getvalue()


def streaming_wav_header() -> bytes:
    """A WAV header for a stream of unknown length (sizes set to the maximum, as ffmpeg and browsers accept)."""
    data_size = 0xFFFFFFFF - 36
    byte_rate = SAMPLE_RATE * BYTES_PER_SAMPLE
    return (
        b"RIFF"
        + (0xFFFFFFFF).to_bytes(4, "little")
        + b"WAVEfmt "
        + (16).to_bytes(4, "little")
        + (1).to_bytes(2, "little")
        + (1).to_bytes(2, "little")
        + SAMPLE_RATE.to_bytes(4, "little")
        + byte_rate.to_bytes(4, "little")
        + BYTES_PER_SAMPLE.to_bytes(2, "little")
        + (16).to_bytes(2, "little")
        + b"data"
        + data_size.to_bytes(4, "little")
    )
