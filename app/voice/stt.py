"""Speech-to-text behind one interface, like the TTS engines: local faster-whisper, or a Wyoming ASR server.

Both take float32 16 kHz mono arrays (what the microphone gives; never file paths: faster-whisper 1.2.1's file
decoding fails with the PyAV the product uses) and return the text. Partials are the same call on the audio so far.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol
from urllib.parse import urlparse

import numpy as np

from voicedesk.engine.errors import ConnectionFailed, UsageError, WeightsMissingError

RATE = 16_000


class Transcriber(Protocol):
    async def transcribe(self, audio: np.ndarray, language: str | None) -> str: ...


def stt_language(voice: str, override: str | None = None) -> str:
    """The STT language: the one set, else the voice's (``bf_emma`` → ``en``, ``jf_alpha`` → ``ja``)."""
    if override:
        return override
    from voicedesk.engine.model.languages import LANGUAGES

    lang = LANGUAGES.get(voice[:1])
    return lang.tag.split("-")[0] if lang else "en"


class WhisperTranscriber:
    def __init__(self, model: str = "small.en", device: str = "auto", compute_type: str = "default") -> None:
        from faster_whisper import WhisperModel

        from voicedesk.engine.model.stt_models import fetch_advice, stt_model_dir

        folder = stt_model_dir(model)
        if compute_type == "default" and device in ("auto", "cpu"):
            compute_type = "int8"  # the hub's models are float16; a CPU would convert them to float32
        try:
            self._model = WhisperModel(str(folder), device=device, compute_type=compute_type)
        except (RuntimeError, ValueError, OSError) as exc:
            raise WeightsMissingError(
                f"The speech-to-text model in {folder} cannot be loaded ({exc}).", fetch_advice(model)
            ) from None
        self.name = model
        self.multilingual = bool(self._model.model.is_multilingual)
        self._lock = asyncio.Lock()
        self._run(np.zeros(16_000, np.float32), "en")  # CTranslate2's first call is several times slower: paid here

    async def transcribe(self, audio: np.ndarray, language: str | None) -> str:
        if language and language != "en" and not self.multilingual:
            raise UsageError(
                f"The speech-to-text model {self.name!r} understands only English, not {language!r}.",
                "Set the STT language to en, or fetch a multilingual model (`voicedesk models fetch --stt small`).",
            )
        async with self._lock:  # one model, one transcription at a time
            return await asyncio.to_thread(self._run, np.asarray(audio, np.float32), language)

    def _run(self, audio: np.ndarray, language: str | None) -> str:
        segments, _ = self._model.transcribe(
            audio,
            language=language if self.multilingual else "en",
            beam_size=1,
            without_timestamps=True,
            condition_on_previous_text=False,
        )
        return "".join(s.text for s in segments).strip()


class WyomingTranscriber:
    """A Wyoming ASR server (``wyoming-faster-whisper``), a connection per transcription; ``timeout_s`` per step."""

    def __init__(self, uri: str, timeout_s: float = 15.0) -> None:
        self.uri, self.timeout_s = uri, timeout_s
        self._connect = wyoming_connector(uri)  # a malformed address is refused here, not at the first sentence

    async def transcribe(self, audio: np.ndarray, language: str | None) -> str:
        from wyoming.asr import Transcribe, Transcript
        from wyoming.audio import AudioChunk, AudioStart, AudioStop
        from wyoming.event import async_read_event, async_write_event

        pcm = (np.clip(audio, -1.0, 1.0) * 32767).astype("<i2").tobytes()
        fmt = {"rate": RATE, "width": 2, "channels": 1}
        chunks = [AudioChunk(audio=pcm[i : i + 8192], **fmt).event() for i in range(0, len(pcm), 8192)]
        events = [Transcribe(language=language).event(), AudioStart(**fmt).event(), *chunks, AudioStop().event()]
        loop, step = asyncio.get_running_loop(), "accept the connection"
        writer: asyncio.StreamWriter | None = None
        try:
            async with asyncio.timeout(self.timeout_s) as deadline:
                reader, writer = await self._connect()
                step = "take the audio"
                for event in events:
                    await async_write_event(event, writer)
                    deadline.reschedule(loop.time() + self.timeout_s)
                step = "send a transcript"
                while (event := await async_read_event(reader)) is not None:
                    if Transcript.is_type(event.type):
                        return Transcript.from_event(event).text.strip()
            problem = "closed the connection without a transcript"
        except TimeoutError:
            problem = f"did not {step} within {self.timeout_s:g} s"
        except OSError as exc:
            problem = f"did not answer ({type(exc).__name__}: {exc})"
        finally:  # abort, not close: a graceful close would wait for audio that a stalled server never reads
            if writer is not None:
                writer.transport.abort()
        raise ConnectionFailed(
            f"The Wyoming speech-to-text server at {self.uri} {problem}.",
            "Check that it runs (Home Assistant's Whisper add-on listens on port 10300) and the address; a slow one"
            " needs a longer STT timeout (stt_timeout_s).",
        )


def wyoming_connector(uri: str) -> Callable[[], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]:
    """Wyoming's own URI forms (``tcp://host:port``, ``unix://path``), opened as plain asyncio streams we own."""
    parsed = urlparse(uri)
    if parsed.scheme == "unix" and parsed.path:
        return lambda: asyncio.open_unix_connection(parsed.path)
    if parsed.scheme == "tcp" and parsed.hostname and parsed.port:
        return lambda: asyncio.open_connection(parsed.hostname, parsed.port)
    raise UsageError(
        f"{uri!r} is not a Wyoming speech-to-text address.",
        "Write it as tcp://HOST:PORT (Home Assistant's Whisper add-on listens on port 10300) or unix://PATH.",
    )
