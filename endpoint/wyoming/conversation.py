"""One Wyoming TTS connection as a state machine with no I/O: Wyoming and session events in, actions out; the session
does all chunking and scheduling.

The ``synthesize`` a streaming client repeats for older servers is ignored. Bad input or an engine failure gets an
``error`` event and the connection is closed: Home Assistant ignores ``error``, so the close ends its wait."""

from __future__ import annotations

import itertools
import logging
from collections import deque
from dataclasses import dataclass
from importlib import metadata

from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error as WyomingError
from wyoming.event import Event as WyomingEvent
from wyoming.info import Attribution, Describe, Info, SelectProgram, TtsProgram, TtsVoice
from wyoming.ping import Ping, Pong
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
    SynthesizeTextFormat,
    SynthesizeVoice,
)

from voicedesk.endpoint.wyoming.catalog import VoiceCatalog
from voicedesk.engine import request_fields as fields
from voicedesk.engine.errors import ErrorCode, LocalErrorCode, VoicedeskError
from voicedesk.engine.events import BYTES_PER_SAMPLE, SAMPLE_RATE, Audio, Closed, Error, Flushed
from voicedesk.engine.events import Event as SessionEvent
from voicedesk.engine.protocol import Configure, Flush, SendText
from voicedesk.engine.session import SessionLimits

log = logging.getLogger(__name__)

CHANNELS = 1
DEFAULT_SAMPLES_PER_CHUNK = 1024
"""Samples per ``audio-chunk`` (about 43 ms at 24 kHz), as wyoming-piper sends them."""
DEFAULT_LIMITS = SessionLimits()
DEFAULT_MAX_CHARS = DEFAULT_LIMITS.max_message_chars
"""Longest text of one request (a ``synthesize``, or all chunks of one stream)."""


@dataclass(frozen=True, slots=True)
class Reply:
    event: WyomingEvent


@dataclass(frozen=True, slots=True)
class Hangup:
    reason: str


Action = Reply | Hangup | Configure | SendText | Flush


@dataclass(slots=True)
class _Request:
    request_id: str
    streaming: bool
    open: bool
    """A stream whose ``synthesize-stop`` has not come yet."""
    chars: int = 0
    audio_started: bool = False
    samples: int = 0


class TtsConversation:
    def __init__(
        self,
        info: Info,
        catalog: VoiceCatalog,
        program_name: str,
        max_chars: int = DEFAULT_MAX_CHARS,
        samples_per_chunk: int = DEFAULT_SAMPLES_PER_CHUNK,
        speed: float = 1.0,
    ) -> None:
        self._info_event = info.event()
        self._catalog = catalog
        self._program_name = program_name
        self._max_chars = max_chars
        self._speed = speed
        self._chunk_bytes = samples_per_chunk * BYTES_PER_SAMPLE * CHANNELS
        self._requests: deque[_Request] = deque()
        self._ids = itertools.count(1)
        self._session_voice = catalog.default
        """The voice the session speaks with now (sessions open with the catalog's default)."""
        self._session_markup = "auto"
        """How the session reads text now (sessions open with the front-end's ``auto``)."""
        self._finished = False

    @property
    def busy(self) -> bool:
        """A request is waiting for audio (an abandoned session then has work to cancel)."""
        return bool(self._requests)

    @property
    def finished(self) -> bool:
        return self._finished

    def session_reset(self) -> None:
        """The adapter dropped the session; the next one opens with the default voice."""
        self._session_voice = self._catalog.default
        self._session_markup = "auto"

    # ---- client → server ----------------------------------------------------------------------------

    def client_event(self, event: WyomingEvent) -> list[Action]:
        if self._finished:
            return []
        try:
            return self._client_event(event)
        except VoicedeskError as exc:
            return self._fail(exc.code, str(exc))
        except (KeyError, TypeError, ValueError, AttributeError):
            # What Python said is for this server's developers, not for a client; the client learns what to fix.
            return self._fail(
                ErrorCode.BAD_MESSAGE,
                f"The {event.type[:64]!r} event is malformed: its data does not have the fields and types the Wyoming "
                "protocol gives it (see docs/wyoming.md).",
            )

    def _client_event(self, event: WyomingEvent) -> list[Action]:
        kind = event.type
        if Describe.is_type(kind):
            return [Reply(self._info_event)]
        if Ping.is_type(kind):
            return [Reply(Pong(text=Ping.from_event(event).text).event())]
        if SelectProgram.is_type(kind):
            name = SelectProgram.from_event(event).name
            if name != self._program_name:
                raise VoicedeskError(
                    ErrorCode.BAD_MESSAGE,
                    f"This server has one TTS program, {self._program_name!r}; there is no program {name!r}.",
                )
            return []
        stream = self._open_stream
        if Synthesize.is_type(kind):
            if stream is not None:
                return []  # the whole text, repeated inside a stream for servers that cannot stream
            return self._synthesize(Synthesize.from_event(event))
        if SynthesizeStart.is_type(kind):
            if stream is not None:
                raise VoicedeskError(
                    ErrorCode.BAD_MESSAGE, "synthesize-start came while a stream was open; send synthesize-stop first."
                )
            start = SynthesizeStart.from_event(event)
            actions = self._begin(start.voice, start.text_format)
            self._requests.append(_Request(self._next_id(), streaming=True, open=True))
            return actions
        if SynthesizeChunk.is_type(kind):
            if stream is None:
                raise VoicedeskError(
                    ErrorCode.BAD_MESSAGE, "synthesize-chunk came outside a stream; send synthesize-start first."
                )
            text = SynthesizeChunk.from_event(event).text
            if not isinstance(text, str):
                raise VoicedeskError(ErrorCode.BAD_MESSAGE, "A synthesize-chunk's text must be a string.")
            stream.chars += len(text)
            fields.text_length(stream.chars, self._max_chars, "The streamed text")
            return [SendText(text)] if text else []
        if SynthesizeStop.is_type(kind):
            if stream is None:
                raise VoicedeskError(
                    ErrorCode.BAD_MESSAGE, "synthesize-stop came outside a stream; send synthesize-start first."
                )
            stream.open = False
            return [Flush(stream.request_id)]
        log.debug("ignored a %r event", kind)  # Wyoming servers drop events they do not serve
        return []

    def _synthesize(self, request: Synthesize) -> list[Action]:
        text = fields.text(request.text, self._max_chars)
        fields.audio_budget(text, self._speed, DEFAULT_LIMITS.max_request_audio_s)
        actions = self._begin(request.voice, request.text_format)
        rid = self._next_id()
        self._requests.append(_Request(rid, streaming=False, open=False, chars=len(text)))
        return [*actions, SendText(text), Flush(rid)]

    def _begin(self, voice: SynthesizeVoice | None, text_format: object) -> list[Action]:
        if text_format in (SynthesizeTextFormat.SSML, "ssml"):
            markup = "ssml"
        elif text_format in (None, SynthesizeTextFormat.TEXT, "text"):
            markup = "auto"
        else:
            raise VoicedeskError(
                ErrorCode.BAD_MESSAGE, f"Text format {text_format!r} is not supported; send 'text' or 'ssml'."
            )
        spec = self._catalog.resolve(fields.voice(voice.name) if voice else None, voice.language if voice else None)
        if spec == self._session_voice and markup == self._session_markup:
            return []
        change = Configure(
            voice=None if spec == self._session_voice else spec,
            markup=None if markup == self._session_markup else markup,
        )
        self._session_voice, self._session_markup = spec, markup
        return [change]

    # ---- session → client ---------------------------------------------------------------------------

    def session_event(self, event: SessionEvent) -> list[Action]:
        if self._finished:
            return []
        match event:
            case Audio(pcm=pcm) if pcm:
                return self._audio(pcm)
            case Flushed(request_id=rid):
                return self._complete(rid)
            case Error(code=code, message=message):
                if not self._requests:
                    log.info("the engine reported %s while no request was open: %s", code, message)
                    return []
                return self._fail(code, message)
            case Closed(reason=reason):
                return self.session_ended(reason)
        return []

    def session_ended(self, reason: str = "closed") -> list[Action]:
        """The session's events ended: open requests can no longer be answered with audio."""
        if self._finished or not self._requests:
            return []
        return self._fail(
            LocalErrorCode.CONNECTION,
            f"The speech engine ended the session ({reason}) before this request was spoken; try again.",
        )

    def _audio(self, pcm: bytes) -> list[Action]:
        if not self._requests:
            log.warning("dropped %d bytes of audio that belong to no request", len(pcm))
            return []
        request = self._requests[0]
        actions = self._start_audio(request)
        for offset in range(0, len(pcm), self._chunk_bytes):
            piece = pcm[offset : offset + self._chunk_bytes]
            actions.append(
                Reply(
                    AudioChunk(
                        rate=SAMPLE_RATE,
                        width=BYTES_PER_SAMPLE,
                        channels=CHANNELS,
                        audio=piece,
                        timestamp=self._milliseconds(request.samples),
                    ).event()
                )
            )
            request.samples += len(piece) // (BYTES_PER_SAMPLE * CHANNELS)
        return actions

    def _complete(self, request_id: str | None) -> list[Action]:
        if not self._requests or self._requests[0].request_id != request_id:
            log.warning("a flush (%s) that matches no open request was ignored", request_id)
            return []
        request = self._requests.popleft()
        actions = self._start_audio(request)
        actions.append(Reply(AudioStop(timestamp=self._milliseconds(request.samples)).event()))
        if request.streaming:
            actions.append(Reply(SynthesizeStopped().event()))
        return actions

    def _start_audio(self, request: _Request) -> list[Action]:
        if request.audio_started:
            return []
        request.audio_started = True
        return [Reply(AudioStart(rate=SAMPLE_RATE, width=BYTES_PER_SAMPLE, channels=CHANNELS, timestamp=0).event())]

    # ---- internals ----------------------------------------------------------------------------------

    @property
    def _open_stream(self) -> _Request | None:
        last = self._requests[-1] if self._requests else None
        return last if last is not None and last.open else None

    def _next_id(self) -> str:
        return f"wyoming-{next(self._ids)}"

    def _fail(self, code: str, message: str) -> list[Action]:
        # Requests stay listed: ``busy`` then tells the adapter the session may still have work to cancel.
        self._finished = True
        return [Reply(WyomingError(text=message, code=str(code)).event()), Hangup(f"{code}: {message}")]

    @staticmethod
    def _milliseconds(samples: int) -> int:
        return samples * 1000 // SAMPLE_RATE


PROGRAM_NAME = "voicedesk"
KOKORO = Attribution(name="hexgrad (Kokoro-82M)", url="https://huggingface.co/hexgrad/Kokoro-82M")


def voicedesk_version() -> str | None:
    try:
        return metadata.version("voicedesk")
    except metadata.PackageNotFoundError:
        return None


def build_info(catalog: VoiceCatalog, engine_description: str, version: str | None = None) -> Info:
    voices = [
        TtsVoice(
            name=voice.name,
            attribution=KOKORO,
            installed=True,
            description=voice.description,
            version=None,
            languages=list(voice.languages),
        )
        for voice in catalog.voices
    ]
    program = TtsProgram(
        name=PROGRAM_NAME,
        attribution=KOKORO,
        installed=True,
        description=f"Kokoro-82M streaming speech by voicedesk ({engine_description} engine)",
        version=version or voicedesk_version(),
        voices=voices,
        supports_synthesize_streaming=True,
    )
    return Info(tts=[program])
