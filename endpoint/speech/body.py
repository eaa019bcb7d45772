"""What the HTTP speech routes send: audio in the format and rate asked for, encoded off the event loop
(``engine/audio_formats.py``), as a binary stream, a whole file or SSE events (voicedesk's or OpenAI's)."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace

import av  # noqa: F401 - imported here, at startup, so the first mp3/opus/flac/aac request does not pay ~0.3 s
import soxr  # noqa: F401 - likewise for the first resampled request
from starlette.responses import Response

from voicedesk.endpoint.log_safety import escape
from voicedesk.endpoint.speech.request import SpeechRequest
from voicedesk.engine.audio_formats import ENCODINGS, MIME_TYPES, Encoder, open_encoder
from voicedesk.engine.errors import ErrorCode, VoicedeskError
from voicedesk.engine.events import BYTES_PER_SAMPLE, SAMPLE_RATE, Audio, Error, Event, SentenceFinished
from voicedesk.engine.protocol import wire_error

log = logging.getLogger(__name__)

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

SLICE_BYTES = int(0.2 * SAMPLE_RATE) * BYTES_PER_SAMPLE
"""Audio is encoded 200 ms at a time, so a slow encoder delays first bytes by a slice, not a sentence."""


def audio_headers(speech: SpeechRequest) -> dict[str, str]:
    return {
        "X-Sample-Rate": str(speech.sample_rate),
        "X-Audio-Format": speech.audio_format,
        "X-Audio-Encoding": ENCODINGS[speech.audio_format],
        "X-Audio-Channels": "1",
        "Cache-Control": "no-store",
    }


def media_type(speech: SpeechRequest) -> str:
    return MIME_TYPES[speech.audio_format]


def sse_format(speech: SpeechRequest) -> str:
    """SSE carries raw PCM16 for ``wav`` too (a header inside base64 chunks helps nobody); others as asked."""
    return "pcm" if speech.audio_format == "wav" else speech.audio_format


@dataclass
class AudioTally:
    """What a body generator saw, for the summary events and the whole-body headers."""

    source_bytes: int = 0
    """PCM16 at 24 kHz taken from the session (the duration, whatever the output rate)."""
    sentences: int = 0
    chunks: int = 0
    errors: list[Error] = field(default_factory=list)

    @property
    def duration_s(self) -> float:
        return self.source_bytes / (BYTES_PER_SAMPLE * SAMPLE_RATE)


class _Offload:
    """An encoder's calls in a worker thread, one at a time; closed only when none runs (FFmpeg would crash)."""

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder
        self._inline = encoder.format in ("pcm", "wav") and encoder.sample_rate == SAMPLE_RATE
        self._running: asyncio.Future[bytes] | None = None

    def slices(self, pcm: bytes) -> list[bytes]:
        if self._inline:
            return [pcm]
        return [pcm[start : start + SLICE_BYTES] for start in range(0, len(pcm), SLICE_BYTES)]

    async def __call__(self, call: Callable[[], bytes]) -> bytes:
        if self._inline:
            return call()  # a copy, or a header: not worth a thread hop
        self._running = asyncio.ensure_future(asyncio.to_thread(call))
        return await asyncio.shield(self._running)

    def close(self) -> None:
        if self._running is not None and not self._running.done():
            self._running.add_done_callback(lambda _: self.encoder.close())
        else:
            self.encoder.close()


async def encoded_audio(
    events: AsyncIterator[Event], encoder: Encoder, tally: AudioTally
) -> AsyncIterator[tuple[int | None, bytes | Error]]:
    """(seq, encoded bytes) as they are ready, and each failed sentence's ``Error``."""
    seq: int | None = None
    run = _Offload(encoder)
    try:
        async for event in events:
            data = b""
            if isinstance(event, Audio) and event.pcm:
                seq = event.seq
                tally.source_bytes += len(event.pcm)
                # Slices, each sent when encoded: the first bytes wait for one slice, not a whole sentence.
                for piece in run.slices(event.pcm):
                    data = await run(lambda pcm=piece: encoder.encode(pcm))
                    if data:
                        tally.chunks += 1
                        yield seq, data
                continue
            elif isinstance(event, SentenceFinished):
                tally.sentences += 1
                data = await run(encoder.flush)
            elif isinstance(event, Error):
                tally.errors.append(event)
                yield event.seq, event
            if data:
                tally.chunks += 1
                yield seq, data
        data = await run(encoder.finish)
        if data:
            tally.chunks += 1
            yield seq, data
    finally:
        run.close()


def open_body_encoder(speech: SpeechRequest, audio_format: str | None = None) -> Encoder:
    """SSE always streams (``stream: false`` applies to binary bodies, as in the AWS sample)."""
    streaming = speech.stream or speech.transport == "sse"
    return open_encoder(audio_format or speech.audio_format, speech.sample_rate, streaming=streaming)


async def whole_response(
    body: AsyncIterator[bytes], speech: SpeechRequest, tally: AudioTally, on_close: Callable[[], Awaitable[None]]
) -> Response:
    """``stream: false``: the whole file with real sizes and the AWS sample's headers; a failed sentence fails it."""
    started = time.perf_counter()
    try:
        data = b"".join([chunk async for chunk in body])
    finally:
        await on_close()
    if tally.errors:
        first = tally.errors[0]
        raise VoicedeskError(
            ErrorCode.SYNTHESIS_FAILED,
            f"{len(tally.errors)} sentence(s) could not be synthesized, so no partial file was sent; first: "
            f"{first.message}",
        )
    elapsed = time.perf_counter() - started
    duration = tally.duration_s
    headers = {
        **audio_headers(speech),
        "X-Audio-Duration": f"{duration:.3f}",
        "X-Inference-Time-Ms": str(int(elapsed * 1000)),
        "X-RTF": f"{elapsed / duration:.3f}" if duration > 0 else "0",
        "X-Characters-Processed": str(len(speech.text)),
    }
    return Response(data, media_type=media_type(speech), headers=headers)


def _sse(event: str | None, data: dict[str, object]) -> bytes:
    payload = json.dumps(data, separators=(",", ":"))
    return (f"event: {event}\n" if event else "").encode() + f"data: {payload}\n\n".encode()


async def binary_body(
    events: AsyncIterator[Event], request: SpeechRequest, tally: AudioTally | None = None
) -> AsyncIterator[bytes]:
    """The audio in the asked format and rate; with ``stream: false`` one whole file at the end."""
    async for _seq, item in encoded_audio(events, open_body_encoder(request), tally or AudioTally()):
        if isinstance(item, Error):
            # Status and headers are gone by now; the sentence is skipped and the log says why.
            log.warning("request %s: sentence %s failed: %s", escape(request.request_id or "-"), item.seq, item.code)
        else:
            yield item


async def voicedesk_sse_body(events: AsyncIterator[Event], request: SpeechRequest) -> AsyncIterator[bytes]:
    started = time.monotonic()
    rid = request.request_id
    audio_format = sse_format(request)
    yield _sse(
        "audio_stream_start",
        {
            "type": "audio_stream_start",
            "request_id": rid,
            "format": audio_format,
            "voice": request.voice,
            "sample_rate": request.sample_rate,
            "channels": 1,
            "encoding": ENCODINGS[audio_format],
        },
    )
    tally = AudioTally()
    encoder = open_body_encoder(request, audio_format)
    async for seq, item in encoded_audio(events, encoder, tally):
        if isinstance(item, Error):
            yield _sse("error", wire_error(replace(item, request_id=rid)))
        else:
            chunk = {"type": "audio_chunk", "request_id": rid, "seq": seq}
            chunk["audio"] = base64.b64encode(item).decode("ascii")
            yield _sse("audio_chunk", chunk)
    yield _sse(
        "audio_stream_end",
        {
            "type": "audio_stream_end",
            "request_id": rid,
            "duration_s": round(tally.duration_s, 6),
            "sentences": tally.sentences,
            "total_chunks": tally.chunks,
            "elapsed_s": round(time.monotonic() - started, 6),
        },
    )


async def openai_sse_body(events: AsyncIterator[Event], request: SpeechRequest) -> AsyncIterator[bytes]:
    """OpenAI's ``stream_format: "sse"``: ``speech.audio.delta`` events, then ``speech.audio.done``."""
    encoder = open_body_encoder(request, sse_format(request))
    async for _seq, item in encoded_audio(events, encoder, AudioTally()):
        if isinstance(item, Error):
            yield _sse(None, {"type": "error", "error": {"code": str(item.code), "message": item.message}})
        else:
            yield _sse(None, {"type": "speech.audio.delta", "audio": base64.b64encode(item).decode("ascii")})
    characters = len(request.text)
    yield _sse(
        None,
        {
            "type": "speech.audio.done",
            "usage": {"input_tokens": characters, "output_tokens": 0, "total_tokens": characters},
        },
    )
