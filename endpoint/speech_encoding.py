"""What the HTTP speech routes put on the wire: audio in the format and rate asked for, streamed or whole, encoded off
the event loop (``engine/audio_formats.py``), and the admission answers the AWS Kokoro sample's clients understand
(408 ``request_stale``, 503 ``queue_saturated`` with ``Retry-After``; aws-samples/sample-kokoro-tts-for-ai-agents,
its ``serve.py``, ``streaming_proxy.py`` and ``tts_client/errors.py``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import av  # noqa: F401 - imported here, at startup, so the first mp3/opus/flac/aac request does not pay ~0.3 s
import soxr  # noqa: F401 - likewise for the first resampled request
from starlette.responses import Response

from voicedesk.endpoint.runtime import EndpointRuntime
from voicedesk.endpoint.speech_request import SpeechRequest
from voicedesk.engine.audio_formats import ENCODINGS, MIME_TYPES, Encoder, open_encoder
from voicedesk.engine.errors import ErrorCode, VoicedeskError
from voicedesk.engine.events import BYTES_PER_SAMPLE, SAMPLE_RATE, Audio, Error, Event, SentenceFinished
from voicedesk.engine.limits import judge, refusal_message
from voicedesk.engine.request_fields import check_fresh

SLICE_BYTES = int(0.2 * SAMPLE_RATE) * BYTES_PER_SAMPLE
"""Audio is encoded 200 ms at a time, so a slow encoder delays first bytes by a slice, not a sentence."""


class AdmissionRefused(VoicedeskError):
    """A refusal that carries extra body fields and response headers (``queue_saturated``'s depth, Retry-After)."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        details: dict[str, object] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(code, message)
        self.details = details or {}
        self.headers = headers or {}


def check_not_saturated(runtime: EndpointRuntime, own_phonemes: int = 0, in_hand_s: float = 0.0) -> None:
    """Refuses a request its session's own backlog would keep waiting too long (``engine.limits``), or, as a
    backstop, while more than ``max_queue_depth`` sentences wait. The message starts with the code, which the
    sample's client matches."""
    settings = runtime.settings
    load = runtime.queue_load(own_phonemes, in_hand_s)
    saturated = judge(load, settings.first_audio_target_s, settings.max_queue_depth)
    if saturated is None:
        return
    wait = saturated.expected_wait_s
    raise AdmissionRefused(
        ErrorCode.QUEUE_SATURATED,
        refusal_message(saturated),
        {
            "queue_depth": saturated.queue_depth,
            "max_queue_depth": saturated.max_queue_depth,
            "expected_wait_s": None if wait is None else round(wait, 3),
            "first_audio_target_s": saturated.target_s,
            "retry_after_s": saturated.retry_after_s,
        },
        {"Retry-After": str(saturated.retry_after_s)},
    )


def check_admission(speech: SpeechRequest, runtime: EndpointRuntime) -> None:
    """Staleness first (a stale request is refused whatever the load), then saturation."""
    check_fresh(speech.request_timestamp, time.time(), runtime.settings.max_request_age_s)
    check_not_saturated(runtime)


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
