"""Measures what each output format costs on this machine (``python -m voicedesk.app.lab.audio_formats_bench``):
bytes per audio second, how much audio an encoder holds back while streaming, what it adds at decode, and the
CPU it takes.

The input is a speech-like test signal (a 120 Hz voice with harmonics, syllable-rate loudness, pauses), so
FLAC's ratio is roughly that of speech; the constant-bit-rate codecs do not care. Prints a Markdown table.
"""

from __future__ import annotations

import io
import time

import numpy as np

from voicedesk.engine.audio_formats import FORMATS, open_encoder, rates_for
from voicedesk.engine.events import SAMPLE_RATE

SECONDS = 4.0
CHUNK_S = 0.25


def speech_like(seconds: float = SECONDS, rate: int = SAMPLE_RATE) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    pitch = 120 + 20 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(pitch) / rate
    voice = sum(np.sin(k * phase) / k for k in range(1, 12))
    syllables = np.clip(np.sin(2 * np.pi * 3.0 * t), 0, None) ** 2
    pauses = (np.sin(2 * np.pi * 0.4 * t) > -0.6).astype(float)
    rng = np.random.default_rng(0)
    signal = 0.25 * voice * syllables * pauses + 0.002 * rng.standard_normal(len(t))
    return (np.clip(signal, -1, 1) * 32767).astype("<i2").tobytes()


def decoded_seconds(data: bytes, audio_format: str, sample_rate: int) -> float:
    """Audio an independent reader gets out of ``data`` (PyAV for codecs, arithmetic for PCM)."""
    if audio_format == "pcm":
        return len(data) / 2 / sample_rate
    if audio_format == "wav":
        return max(0, len(data) - 44) / 2 / sample_rate
    import av

    demuxer = {"mp3": "mp3", "opus": "ogg", "flac": "flac", "aac": "aac"}[audio_format]
    samples, rate = 0, sample_rate
    try:
        with av.open(io.BytesIO(data), format=demuxer) as container:
            for frame in container.decode(audio=0):
                samples += frame.samples
                rate = frame.sample_rate
    except (av.error.FFmpegError, EOFError):
        return 0.0
    return samples / rate


def measure(audio_format: str, sample_rate: int, pcm: bytes) -> dict[str, float]:
    step = int(CHUNK_S * SAMPLE_RATE) * 2
    opened = time.perf_counter()
    encoder = open_encoder(audio_format, sample_rate)
    open_ms = (time.perf_counter() - opened) * 1000
    out = bytearray()
    cpu = 0.0
    held: list[float] = []
    for start in range(0, len(pcm), step):
        began = time.perf_counter()
        out += encoder.encode(pcm[start : start + step])
        cpu += time.perf_counter() - began
        fed = (start + step) / 2 / SAMPLE_RATE
        if fed >= 1.0:  # past start-up; how far behind the input a client is after each chunk
            held.append(fed - decoded_seconds(bytes(out), audio_format, sample_rate))
    began = time.perf_counter()
    out += encoder.finish()
    cpu += time.perf_counter() - began
    seconds = len(pcm) / 2 / SAMPLE_RATE
    return {
        "bytes_per_s": len(out) / seconds,
        "held_ms": 1000 * float(np.mean(held)),
        "extra_ms": 1000 * (decoded_seconds(bytes(out), audio_format, sample_rate) - seconds),
        "cpu_ms_per_s": 1000 * cpu / seconds,
        "open_ms": open_ms,
    }


def main() -> None:
    pcm = speech_like()
    print(
        "| format | rate | bytes per audio second | held back while streaming (ms) | added at decode (ms) "
        "| encode CPU (ms per audio s) | open (ms) |"
    )
    print("|---|---|---|---|---|---|---|")
    for audio_format in FORMATS:
        for rate in (24000, 16000, 8000, 48000):
            if rate not in rates_for(audio_format):
                continue
            m = measure(audio_format, rate, pcm)
            print(
                f"| {audio_format} | {rate} | {m['bytes_per_s']:,.0f} | {m['held_ms']:.0f} | {m['extra_ms']:.0f} "
                f"| {m['cpu_ms_per_s']:.1f} | {m['open_ms']:.1f} |"
            )


if __name__ == "__main__":
    main()
