"""Output audio formats and sample rates: resample Kokoro's PCM16 mono 24 kHz and encode it as a stream (pure: bytes in,
bytes out).

A container header goes out only with the first audio, so a client timing its first read times real audio. soxr keeps
chunk seams click-free; PyAV encodes one chunk at a time (lameenc is mp3 only, soundfile buffers Ogg pages, an ffmpeg
subprocess buffers 1.5-2 s). Costs: docs/protocol.md ("Audio formats")."""

from __future__ import annotations

import contextlib
import io
from typing import Protocol

import numpy as np

from voicedesk.engine.audio import pcm16_to_wav, streaming_wav_header
from voicedesk.engine.events import BYTES_PER_SAMPLE, SAMPLE_RATE

FORMATS: tuple[str, ...] = ("pcm", "wav", "mp3", "opus", "flac", "aac")
"""Every output format, in the order OpenAI's ``response_format`` lists them last (its default, mp3, first)."""

MIME_TYPES: dict[str, str] = {
    "pcm": "audio/pcm",
    "wav": "audio/wav",
    "mp3": "audio/mpeg",
    "opus": "audio/ogg",
    "flac": "audio/flac",
    "aac": "audio/aac",
}

ENCODINGS: dict[str, str] = {
    "pcm": "pcm_s16le",
    "wav": "pcm_s16le",
    "mp3": "mp3",
    "opus": "opus",
    "flac": "flac",
    "aac": "aac",
}
"""The codec inside each format (``X-Audio-Encoding``)."""

SAMPLE_RATES: tuple[int, ...] = (8000, 16000, 22050, 24000, 44100, 48000)
"""Rates a client may ask for: the AWS sample's, plus 44.1/48 kHz (upsampled) so such pipelines need not resample."""

FORMAT_RATES: dict[str, tuple[int, ...]] = {
    "opus": (8000, 16000, 24000, 48000),  # libopus encodes only at 8/12/16/24/48 kHz
}
"""Formats that take fewer rates than ``SAMPLE_RATES``."""

BIT_RATES: dict[str, int] = {"mp3": 48_000, "opus": 32_000, "aac": 64_000}
"""Mono bit rates: mp3 as the AWS sample sends it, opus at fullband speech, AAC higher (FFmpeg's needs more than
LAME)."""

_AV_FORMATS: dict[str, tuple[str, str, dict[str, str], dict[str, str]]] = {
    # format: (muxer, codec, muxer options when streaming, muxer options for a whole file)
    "mp3": ("mp3", "libmp3lame", {"id3v2_version": "0", "write_xing": "0"}, {"id3v2_version": "0"}),
    # Ogg pages of 60 ms: at most 60 ms waits for the next chunk; 20 ms pages would cost 18% more bytes.
    "opus": ("ogg", "libopus", {"page_duration": "60000"}, {"page_duration": "60000"}),
    "flac": ("flac", "flac", {"metadata_header_padding": "0"}, {"metadata_header_padding": "0"}),
    "aac": ("adts", "aac", {}, {}),
}


def rates_for(audio_format: str) -> tuple[int, ...]:
    return FORMAT_RATES.get(audio_format, SAMPLE_RATES)


def output_problem(audio_format: str, sample_rate: int) -> str | None:
    """Why this format/rate cannot be made, in words for the person who asked; None when it can."""
    if audio_format not in FORMATS:
        return f"'format' {audio_format!r} is not made here; use one of: {', '.join(FORMATS)}."
    rates = rates_for(audio_format)
    if sample_rate not in rates:
        with_format = f" with {audio_format}" if audio_format in FORMAT_RATES else ""
        return (
            f"'sample_rate' {sample_rate} is not offered{with_format}; use one of: {', '.join(map(str, rates))} (Hz)."
        )
    return None


def whole_wav(pcm: bytes, sample_rate: int) -> bytes:
    """A complete WAV file with real sizes (44-byte header, as clients computing ``len - 44`` expect)."""
    return pcm16_to_wav(pcm, sample_rate)


def _samples(pcm: bytes) -> np.ndarray:
    if len(pcm) % BYTES_PER_SAMPLE:
        raise ValueError(f"PCM16 must have an even number of bytes; got {len(pcm)}")
    return np.frombuffer(pcm, dtype="<i2")


class Resampler:
    """PCM16 mono from 24 kHz to ``sample_rate``, chunk by chunk (identity at 24 kHz)."""

    def __init__(self, sample_rate: int, source_rate: int = SAMPLE_RATE) -> None:
        self.sample_rate = sample_rate
        self._stream = None
        if sample_rate != source_rate:
            import soxr

            self._stream = soxr.ResampleStream(source_rate, sample_rate, 1, dtype="int16", quality="HQ")

    def process(self, pcm: bytes) -> np.ndarray:
        samples = _samples(pcm)
        if self._stream is None or not len(samples):
            return samples
        return self._stream.resample_chunk(samples)

    def drain(self) -> np.ndarray:
        """What the filter still holds; the next chunk then starts afresh (call it where the audio is silent)."""
        if self._stream is None:
            return np.zeros(0, dtype="<i2")
        tail = self._stream.resample_chunk(np.zeros(0, dtype=np.int16), last=True)
        self._stream.clear()
        return tail


def resample(pcm: bytes, sample_rate: int, source_rate: int = SAMPLE_RATE) -> bytes:
    """One-shot PCM16 mono resampling (the same filter as ``Resampler``)."""
    resampler = Resampler(sample_rate, source_rate)
    head = resampler.process(pcm)
    return head.astype("<i2").tobytes() + resampler.drain().astype("<i2").tobytes()


class Encoder(Protocol):
    format: str
    sample_rate: int
    streaming: bool

    def encode(self, pcm: bytes) -> bytes:
        """PCM16 mono 24 kHz in; the encoded bytes ready so far out (often empty for a whole file)."""
        ...

    def flush(self) -> bytes:
        """Everything held back that can go out without ending the stream."""
        ...

    def finish(self) -> bytes:
        """The rest of the stream (or the whole file). The encoder is done after this."""
        ...

    def close(self) -> None:
        """Releases the encoder without finishing it (a client went away). Idempotent."""
        ...


class _Base:
    def __init__(self, audio_format: str, sample_rate: int, streaming: bool) -> None:
        problem = output_problem(audio_format, sample_rate)
        if problem is not None:
            raise ValueError(problem)
        self.format = audio_format
        self.sample_rate = sample_rate
        self.streaming = streaming
        self._resampler = Resampler(sample_rate)
        self._finished = False

    def _check_open(self) -> None:
        if self._finished:
            raise RuntimeError(f"this {self.format} encoder has finished; open a new one")

    def close(self) -> None:
        self._finished = True


class PcmEncoder(_Base):
    """Raw PCM16 mono (``pcm``), or WAV: a streaming header with the first audio, or a whole file at the end."""

    def __init__(self, audio_format: str, sample_rate: int, streaming: bool) -> None:
        super().__init__(audio_format, sample_rate, streaming)
        self._header_due = audio_format == "wav" and streaming
        self._whole: list[bytes] | None = [] if audio_format == "wav" and not streaming else None

    def _out(self, samples: np.ndarray) -> bytes:
        data = samples.astype("<i2").tobytes()
        if self._whole is not None:
            self._whole.append(data)
            return b""
        if data and self._header_due:
            self._header_due = False
            return streaming_wav_header(self.sample_rate) + data
        return data

    def encode(self, pcm: bytes) -> bytes:
        self._check_open()
        return self._out(self._resampler.process(pcm))

    def flush(self) -> bytes:
        self._check_open()
        return self._out(self._resampler.drain())

    def finish(self) -> bytes:
        tail = self.flush()
        self._finished = True
        if self._whole is not None:
            return whole_wav(b"".join(self._whole), self.sample_rate)
        if self._header_due:  # no audio at all: still a valid (empty) WAV stream
            return streaming_wav_header(self.sample_rate)
        return tail


class _Sink:
    """A write-only file for FFmpeg: not seekable, so muxers write streaming headers; drained after each call."""

    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: bytes) -> int:
        self.data += data
        return len(data)

    def take(self) -> bytes:
        out = bytes(self.data)
        self.data.clear()
        return out


class CodecEncoder(_Base):
    """mp3, opus, flac or aac through PyAV; a whole file goes to a seekable buffer so its header gets real sizes."""

    def __init__(self, audio_format: str, sample_rate: int, streaming: bool) -> None:
        super().__init__(audio_format, sample_rate, streaming)
        import av

        muxer, codec, stream_options, file_options = _AV_FORMATS[audio_format]
        self._file: _Sink | io.BytesIO = _Sink() if streaming else io.BytesIO()
        self._container = av.open(self._file, "w", format=muxer, options=stream_options if streaming else file_options)
        self._stream = self._container.add_stream(codec, rate=sample_rate)
        self._stream.layout = "mono"
        if audio_format in BIT_RATES:
            self._stream.bit_rate = BIT_RATES[audio_format]
        self._av = av
        self._pts = 0
        self._container.start_encoding()  # writes the container header now, so its size is known
        self._header_left = len(self._file.data) if isinstance(self._file, _Sink) else 0

    def _mux(self, samples: np.ndarray | None) -> bytes:
        if samples is None:
            packets = self._stream.encode(None)
        elif len(samples):
            frame = self._av.AudioFrame.from_ndarray(
                np.ascontiguousarray(samples, dtype="<i2").reshape(1, -1), format="s16", layout="mono"
            )
            frame.sample_rate = self.sample_rate
            frame.pts = self._pts
            self._pts += len(samples)
            packets = self._stream.encode(frame)
        else:
            packets = []
        for packet in packets:
            self._container.mux(packet)
        # The container header waits until audio follows it (a header alone would look like first audio).
        if isinstance(self._file, _Sink) and len(self._file.data) > self._header_left:
            self._header_left = 0
            return self._file.take()
        return b""

    def encode(self, pcm: bytes) -> bytes:
        self._check_open()
        return self._mux(self._resampler.process(pcm))

    def flush(self) -> bytes:
        # The resampler's tail can go on; a codec's own look-ahead cannot be flushed without ending the stream.
        self._check_open()
        return self._mux(self._resampler.drain())

    def finish(self) -> bytes:
        self._check_open()
        head = self._mux(self._resampler.drain()) + self._mux(None)
        self._container.close()
        self._finished = True
        if isinstance(self._file, _Sink):
            return head + self._file.take()
        return self._file.getvalue()

    def close(self) -> None:
        if not self._finished:
            self._finished = True
            with contextlib.suppress(self._av.error.FFmpegError, ValueError):
                self._container.close()


def open_encoder(audio_format: str, sample_rate: int = SAMPLE_RATE, *, streaming: bool = True) -> Encoder:
    """An encoder for one stream. ``streaming=False`` makes one whole file, returned by ``finish()``."""
    if audio_format in ("pcm", "wav"):
        return PcmEncoder(audio_format, sample_rate, streaming)
    return CodecEncoder(audio_format, sample_rate, streaming)
