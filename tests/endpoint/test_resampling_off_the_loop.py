"""A WebSocket client asking another rate (a real uvicorn server, the real model, a real websockets client): each
sentence's audio is the one-shot soxr resampling of the model's 24 kHz audio (the streaming resampler's result
within its chunking tolerance), in order, and the resampling ran on an executor thread, not the event loop's."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from tests.support.endpoint import bidi, receive_until
from voicedesk.engine import connection as connection_module
from voicedesk.engine.audio_formats import Resampler, resample
from voicedesk.engine.protocol import Configure, Flush, SendText, encode_command


def _has_running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _streamed(pcm: bytes, sample_rate: int, chunk_bytes: int = 4_800) -> np.ndarray:
    """What the streaming resampler (the one-chunk-at-a-time path) makes of the same audio."""
    resampler = Resampler(sample_rate)
    parts = [resampler.process(pcm[i : i + chunk_bytes]) for i in range(0, len(pcm), chunk_bytes)]
    return np.concatenate([*parts, resampler.drain()]).astype(np.int32)


@pytest.mark.parametrize("rate", [16_000, 48_000])
async def test_audio_at_another_rate_is_the_resampled_original_in_order_and_made_off_the_event_loop(
    server, monkeypatch, rate
):
    originals: list[bytes] = []
    ran_on: list[tuple[str, bool]] = []

    def noting_resample(pcm: bytes, sample_rate: int) -> bytes:
        originals.append(pcm)
        ran_on.append((threading.current_thread().name, _has_running_loop()))
        return resample(pcm, sample_rate)

    monkeypatch.setattr(connection_module, "resample", noting_resample)
    async with bidi(server) as ws:
        await ws.send(encode_command(Configure(sample_rate=rate)))
        await ws.send(encode_command(SendText("The kettle is on. Dinner is ready at seven. ")))
        await ws.send(encode_command(Flush("f")))
        frames = await receive_until(ws, "flushed")

    ends = frames.of_type("sentence_end")
    assert len(ends) == 2 == len(originals)
    audio_by_seq: dict[int, bytes] = {}
    current = None
    for frame in frames.items:
        if isinstance(frame, dict) and frame["type"] == "sentence_start":
            current = frame["seq"]
            audio_by_seq[current] = b""
        elif isinstance(frame, bytes):
            audio_by_seq[current] += frame  # type: ignore[index]
    sent = [audio_by_seq[end["seq"]] for end in ends]
    # In order: sentence n's frames are the resampling of the n-th 24 kHz original the model made.
    assert sent == [resample(pcm, rate) for pcm in originals]
    for audio, pcm, end in zip(sent, originals, ends, strict=True):
        assert len(audio) / (2 * rate) == pytest.approx(end["duration_s"], abs=0.002)
        streamed = _streamed(pcm, rate)
        one_shot = np.frombuffer(audio, dtype="<i2").astype(np.int32)
        assert len(streamed) == len(one_shot)
        assert np.abs(streamed - one_shot).max() <= 2  # soxr's chunking tolerance (2 LSB)
    loop_thread = f"uvicorn-{server.port}"
    assert all(name != loop_thread and not in_loop for name, in_loop in ran_on), ran_on
