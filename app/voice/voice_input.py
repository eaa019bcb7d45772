"""Voice input as a front-end owns it (the window, the announcer): settings, microphone → listener → events, and
barge-in against the player it speaks through.

The echo reference and the "console is speaking" state both come from the player itself (its tap, its buffer), not
from the controller: what matters to the microphone is what the device played, including a fade and a stall.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from voicedesk.app.player import AudioDeviceError
from voicedesk.app.voice.listener import Listener, ListenerError, ListenerEvent
from voicedesk.app.voice.microphone import Microphone
from voicedesk.app.voice.stt import (
    Transcriber,
    WhisperTranscriber,
    WyomingTranscriber,
    stt_language,
    wyoming_connector,
)
from voicedesk.app.voice.turns import (
    BargeIn,
    Dropped,
    Mode,
    Paused,
    Resumed,
    SpeechEnded,
    SpeechStarted,
    Transcript,
    TurnConfig,
    TurnDetector,
)
from voicedesk.engine.errors import UsageError, VoicedeskError
from voicedesk.engine.model.stt_models import DEFAULT_STT_MODEL

BARGE_IN = ("speech", "keyword", "off")
STT_KINDS = ("whisper", "wyoming")
STT_DEVICES = ("auto", "cpu", "cuda")
ECHO_TAIL_S = 0.3
"""The console still counts as speaking this long after the device played its last sample (the room's echo)."""
MICROPHONE_RETRY_S = 10.0
"""How often a microphone that failed is tried again where nothing says it is back (a PulseAudio source that
reappears is tried at once): PortAudio's own hosts (WASAPI, CoreAudio, ALSA) list their devices only once."""


@dataclass(frozen=True, slots=True)
class VoiceSettings:
    enabled: bool = False
    input_device: str = ""
    """A PortAudio input name, ``pulse-source:NAME``, or empty for the default."""
    mode: Mode = Mode.HANDS_FREE
    end_silence_s: float = 0.6
    barge_in: str = "speech"
    """'speech' (any speech over the console stops it), 'keyword' (only one of ``barge_in_keywords``), 'off'."""
    barge_in_min_s: float = 0.3
    """Voiced time before speech over the console stops it (it pauses at once): a cough or an "mm-hm" only pauses it."""
    barge_in_keywords: tuple[str, ...] = ("stop", "wait")
    stt: str = "whisper"
    stt_model: str = DEFAULT_STT_MODEL
    stt_device: str = "auto"
    stt_compute: str = "default"
    wyoming_uri: str = ""
    stt_timeout_s: float = 15.0
    """How long a Wyoming server may take over each step, the transcript after the audio's end included."""
    language: str | None = None
    """None: the voice's language (``stt_language``)."""
    keep_recordings: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "mode": self.mode.value, "barge_in_keywords": list(self.barge_in_keywords)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], rejected: list[str] | None = None) -> VoiceSettings:
        """A ``UsageError`` on the first bad or unknown value (the CLI); given ``rejected``, that field keeps its
        default and its name is added there instead (the window's forgiving settings file)."""
        values: dict[str, Any] = {}
        for key, value in data.items():
            try:
                values[key] = _checked(key, value)
            except UsageError:
                if rejected is None:
                    raise
                rejected.append(f"voice_input.{key}")
        return cls(**values)


_RANGES = {"end_silence_s": (0.2, 5.0), "barge_in_min_s": (0.0, 5.0), "stt_timeout_s": (0.5, 300.0)}
_CHOICES = {"mode": tuple(Mode), "barge_in": BARGE_IN, "stt": STT_KINDS, "stt_device": STT_DEVICES}


def _checked(key: str, value: Any) -> Any:
    names = [f.name for f in fields(VoiceSettings)]
    if key not in names:
        raise UsageError(f"Unknown voice input setting {key!r}.", f"Known settings: {', '.join(names)}.")
    default = getattr(VoiceSettings(), key)
    if key == "barge_in_keywords":
        ok = isinstance(value, list | tuple) and bool(value) and all(isinstance(w, str) and w.strip() for w in value)
        value = tuple(w.strip().lower() for w in value) if ok else value
    elif key == "language":
        ok = value is None or (isinstance(value, str) and value.isascii() and 2 <= len(value) <= 8)
    elif key == "wyoming_uri" and isinstance(value, str) and value:
        wyoming_connector(value)  # its UsageError says the form an address takes
        ok = True
    elif isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, float):
        low, high = _RANGES[key]
        ok = isinstance(value, int | float) and not isinstance(value, bool) and low <= value <= high
        value = float(value) if ok else value
    else:
        ok = isinstance(value, str) and len(value) < 1000 and value in _CHOICES.get(key, (value,))
    if not ok:
        choices = _CHOICES.get(key) or _RANGES.get(key)
        hint = f"Use one of {', '.join(map(str, choices))}." if key in _CHOICES else f"Use a value in {choices}."
        raise UsageError(f"The voice input setting {key} = {value!r} is not valid.", hint if choices else None)
    return Mode(value) if key == "mode" else value


@dataclass(frozen=True, slots=True)
class Listening:
    open: bool
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Partial:
    text: str


@dataclass(frozen=True, slots=True)
class HeardTimes:
    """Monotonic seconds: the latency timeline starts at ``speech_end`` (the last voiced window)."""

    speech_start: float
    speech_end: float
    final_transcript: float
    decided: float = 0.0
    """When the end of the turn was decided (the silence timeout, a release): the loop's own work starts here."""


@dataclass(frozen=True, slots=True)
class Heard:
    text: str
    times: HeardTimes


@dataclass(frozen=True, slots=True)
class NotHeard:
    """An utterance came to nothing (empty, too short to interrupt): a front-end waiting for it stops waiting."""

    reason: str


@dataclass(frozen=True, slots=True)
class Interrupted:
    at: float
    """Monotonic time the barge-in was decided."""
    cut: object | None
    """What ``interrupt`` returned (the controller's ``CutMark``: "heard up to …")."""


@dataclass(frozen=True, slots=True)
class VoiceProblem:
    message: str
    """Says what went wrong and what to do, as it is to be shown."""
    listening: bool = False
    """True: only what was just said is lost; listening goes on."""


VoiceEvent = Listening | Partial | Heard | NotHeard | Interrupted | VoiceProblem


class VoiceInput:
    def __init__(
        self,
        settings: VoiceSettings,
        on_event: Callable[[VoiceEvent], None],
        interrupt: Callable[[], Awaitable[object]],
        voice: str = "",
        transcriber: Transcriber | None = None,
    ) -> None:
        """``interrupt``: the front-end's Stop (fades the reply, cancels the rest, returns the cut); ``voice``: the
        TTS voice (the STT language follows it); ``transcriber``: one already loaded, else the settings'."""
        s = self.settings = settings
        self._emit, self._interrupt, self._transcriber = on_event, interrupt, transcriber
        self.language = stt_language(voice, s.language)
        self.turns = TurnDetector(
            TurnConfig(
                mode=s.mode,
                end_silence_s=s.end_silence_s,
                barge_in=s.barge_in != "off",
                barge_in_min_s=s.barge_in_min_s,
                barge_in_keywords=s.barge_in_keywords if s.barge_in == "keyword" else (),
            )
        )
        self.microphone = Microphone(s.input_device)
        self.listener: Listener | None = None
        self._player: Any = None
        self._playing = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._quiet: asyncio.TimerHandle | None = None
        self._starts: dict[int, float] = {}
        self._ends: dict[int, float] = {}
        self._decided: dict[int, float] = {}
        self._interrupting: asyncio.Future[object] | None = None
        self._tasks: set[asyncio.Future[object]] = set()
        self._lost = ""
        self.microphone_failed = False
        """Listening ended because the microphone could not be opened or stopped delivering: trying it again may
        help (the window and the announcer do, every ``MICROPHONE_RETRY_S``)."""

    @property
    def level(self) -> float:
        """dBFS of the microphone's last block (for a meter)."""
        return self.microphone.level_dbfs if self.listening else -120.0

    @property
    def listening(self) -> bool:
        return self.microphone.is_open

    def attach(self, player: Any) -> None:
        """Listens against ``player``: what it hands the device is the echo reference, and the console speaks while
        its buffer plays (a fade and a stall included)."""
        self._player = player
        player.tap = self._played

    def press(self) -> None:
        if self.listener is not None:
            self.listener.press()

    def release(self) -> None:
        if self.listener is not None:
            self.listener.release()

    async def run(self) -> None:
        """Listens until cancelled; a problem (no microphone, no model, the microphone lost) is a ``VoiceProblem``
        and ends it, never an exception."""
        self._loop = asyncio.get_running_loop()
        try:
            transcriber = self._transcriber or await asyncio.to_thread(self._open_transcriber)
            from voicedesk.app.voice.echo import EchoCanceller

            recordings = None
            if self.settings.keep_recordings:
                from voicedesk.engine.paths import data_dir

                recordings = data_dir() / "recordings"
            self.listener = Listener(
                self.microphone, self.turns, transcriber, self._heard, EchoCanceller(), self.language, recordings
            )
            self.microphone.open()
        except ImportError as exc:
            return self._problem(
                f"Voice input needs the listening packages ({exc.name} is missing): pip install 'voicedesk[voice]'."
            )
        except VoicedeskError as exc:
            self.microphone_failed = isinstance(exc, AudioDeviceError)  # not a missing model: that stays missing
            return self._problem(exc.message + (f" {exc.advice}" if exc.advice else ""))
        self.turns.speaking = self._playing = self._player is not None and self._player.buffer.playing
        self._emit(Listening(True))
        reason = "stopped"
        try:
            await self.listener.run()  # returns when the microphone is lost (told as a VoiceProblem)
            reason = self._lost or "the microphone was lost"
            self.microphone_failed = True
        finally:
            self.microphone.close()
            if self._player is not None:
                self._player.buffer.resume()  # a reply paused by speech must not stay held once nobody listens
            self._emit(Listening(False, reason))

    def _open_transcriber(self) -> Transcriber:
        s = self.settings
        if s.stt == "wyoming":
            if not s.wyoming_uri:
                raise UsageError("No Wyoming speech-to-text server is set.", "Set its address (tcp://HOST:10300).")
            return WyomingTranscriber(s.wyoming_uri, s.stt_timeout_s)
        return WhisperTranscriber(s.stt_model, s.stt_device, s.stt_compute)

    def _problem(self, message: str) -> None:
        message = f"Voice input is off: {message} Typing still works."
        self._emit(VoiceProblem(message))
        self._emit(Listening(False, message))

    def _played(self, block: np.ndarray, lost: int = 0) -> None:
        """The player's tap, in its audio thread."""
        if self.listener is not None and self.listener.echo is not None:
            self.listener.echo.played(block, lost)
        playing = self._player.buffer.playing
        if playing != self._playing and self._loop is not None:
            self._playing = playing
            self._loop.call_soon_threadsafe(self._speaking, playing)

    def _speaking(self, playing: bool) -> None:
        if self._quiet is not None:
            self._quiet.cancel()
            self._quiet = None
        if playing:
            self.turns.speaking = True
        elif self._loop is not None:
            delay = self._player.output_latency_s + ECHO_TAIL_S  # the device's queue, then the room
            self._quiet = self._loop.call_later(delay, setattr, self.turns, "speaking", False)

    def _heard(self, event: ListenerEvent) -> None:
        listener = self.listener
        assert listener is not None
        if isinstance(event, SpeechStarted):
            self._starts[event.utterance] = listener.to_monotonic(event.at)
        elif isinstance(event, SpeechEnded):
            self._ends[event.utterance] = listener.to_monotonic(event.at)
            self._decided[event.utterance] = time.monotonic()
        elif isinstance(event, Paused | Resumed) and self._player is not None:
            buffer = self._player.buffer  # at once, in this thread: the fade reaches the device in its next block
            buffer.pause() if isinstance(event, Paused) else buffer.resume()
        elif isinstance(event, BargeIn):
            self._interrupting = self._spawn(self._barge(listener.to_monotonic(event.at)))
        elif isinstance(event, Dropped):
            for times in (self._starts, self._ends, self._decided):
                times.pop(event.utterance, None)
            self._emit(NotHeard(event.reason))
        elif isinstance(event, Transcript) and not event.final:
            self._emit(Partial(event.text))
        elif isinstance(event, Transcript):
            start = self._starts.pop(event.utterance, 0.0)
            end = self._ends.pop(event.utterance, start)
            times = HeardTimes(start, end, time.monotonic(), self._decided.pop(event.utterance, 0.0))
            heard = Heard(event.text, times)
            if self._interrupting is not None and not self._interrupting.done():
                self._spawn(self._after_interrupt(heard))  # the interruption is told before what it said
            else:
                self._emit(heard)
        elif isinstance(event, ListenerError) and event.listening:
            self._emit(VoiceProblem(f"Not heard: {event.message} Still listening: speak again, or type.", True))
        elif isinstance(event, ListenerError):
            self._lost = event.message
            self._emit(VoiceProblem(event.message))

    async def _barge(self, at: float) -> object:
        try:
            cut = await self._interrupt()
        except Exception as exc:  # the front-end's stop failing must not end listening
            self._emit(VoiceProblem(f"Stopping the reply failed ({exc}). Still listening.", True))
            cut = None
        self._emit(Interrupted(at, cut))
        return cut

    async def _after_interrupt(self, heard: Heard) -> None:
        if self._interrupting is not None:
            await asyncio.wait([self._interrupting])
        self._emit(heard)

    def _spawn(self, awaitable: Awaitable[object]) -> asyncio.Future[object]:
        task = asyncio.ensure_future(awaitable)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task
