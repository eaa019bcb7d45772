"""The asyncio adapter around the turn detector: microphone → echo canceller → VAD → turns → STT.

It moves audio and runs what the detector asks for; the detector decides. Times are the microphone's sample clock
(seconds since it opened), exact for slicing audio; ``to_monotonic`` maps them for the latency timeline.
"""

from __future__ import annotations

import asyncio
import time
import wave
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voicedesk.app.voice.echo import FRAME, RESTORABLE, EchoCanceller
from voicedesk.app.voice.microphone import Microphone
from voicedesk.app.voice.stt import Transcriber
from voicedesk.app.voice.turns import (
    Dropped,
    Paused,
    SpeechEnded,
    SpeechStarted,
    TranscribeRequest,
    TurnDetector,
    TurnEvent,
)
from voicedesk.app.voice.vad import RATE, WINDOW, WINDOW_S, SpeechDetector
from voicedesk.engine.errors import VoicedeskError

ECHO_DOMINATED_DB = 12.0
"""While the console speaks, a VAD window the canceller took this much off is its own echo's residue, not a person:
a person's voice passes the canceller almost untouched (double talk), the echo loses 20-60 dB."""
SUPPRESSED = 4.0
"""A 10-ms frame the suppressor left 6 dB under the linear estimate lost something (an echo residue: little)."""
RESTORE_AFTER_S = 0.1
"""The suppressor may still hold the onset's next few frames: they are restored too, once heard."""
ECHO_LIKENESS = 0.5
"""... or one this much like what was played (``EchoCanceller.echo_likeness``): the echo leaking through."""


@dataclass(frozen=True, slots=True)
class ListenerError:
    message: str
    listening: bool = False
    """True: one transcription failed (the STT server is down) and listening goes on."""


ListenerEvent = TurnEvent | ListenerError


class Listener:
    def __init__(
        self,
        microphone: Microphone,
        turns: TurnDetector,
        transcriber: Transcriber,
        on_event: Callable[[ListenerEvent], None],
        echo: EchoCanceller | None = None,
        language: str | None = "en",
        recordings: Path | None = None,
    ) -> None:
        self.microphone, self.turns, self.transcriber, self.echo = microphone, turns, transcriber, echo
        self.language = language
        self.recordings = recordings
        """Where each utterance is kept as a WAV; None (the default): nothing is written."""
        self._on_event = on_event
        self.taps: list[Callable[[np.ndarray], None]] = []
        """Each echo-cancelled block, as the VAD hears it (the wake word listens here)."""
        self._vad = SpeechDetector()
        self._blocks: asyncio.Queue[tuple[np.ndarray, float]] = asyncio.Queue()
        self._audio_start = 0  # sample index of _audio[0]
        self._heard = 0  # samples through the VAD
        self._received = 0  # samples from the microphone
        self._vad_in = (np.zeros(0, np.float32), np.zeros(0, np.float32))  # (raw, clean) not through the VAD yet
        self._starts: dict[int, float] = {}
        self._offset = float("inf")  # monotonic time - sample clock, the least seen (callbacks only run late)
        self._keep_s = turns.config.max_utterance_s + turns.config.pre_roll_s + 5.0
        # Room for twice what is kept: copying all of it for each 10-ms block cost 1.6 % of a core.
        self._buffer, self._kept = np.zeros(2 * int(self._keep_s * RATE), np.float32), 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._release_at: float | None = None
        self._restore: tuple[float, float] | None = None  # (from, once heard up to) an onset to restore
        self._delivered = 0  # samples the microphone's thread handed over

    @property
    def now(self) -> float:
        return self._heard / RATE

    def to_monotonic(self, at: float) -> float:
        return at + self._offset

    async def run(self) -> None:
        """Listens until cancelled or the microphone is lost (reported as a ``ListenerError``)."""
        loop = asyncio.get_running_loop()

        def on_block(block: np.ndarray, captured: float) -> None:
            self._delivered += len(block)
            loop.call_soon_threadsafe(self._blocks.put_nowait, (block, captured))

        self.microphone.on_block = on_block
        self.microphone.open()
        try:
            while True:
                try:
                    block, captured = await asyncio.wait_for(self._blocks.get(), 0.25)
                except TimeoutError:
                    self.microphone.check()
                    continue
                self._hear(block, captured)
                if self._received % (RATE // 2) < len(block):  # twice a second: PulseAudio moves a lost
                    self.microphone.check()  # microphone's stream to another one, so blocks alone prove nothing
        except VoicedeskError as exc:
            self._handle(self.turns.stop(self.now))
            self._on_event(ListenerError(exc.message))
        finally:
            self.microphone.close()
            if self._tasks:
                await asyncio.gather(*self._tasks, return_exceptions=True)

    def press(self) -> None:
        self._handle(self.turns.press(self._mic_now()))

    def release(self) -> None:
        """Ends the held turn once the audio up to now has been heard (a busy loop runs behind the microphone)."""
        self._release_at = self._mic_now()

    def _mic_now(self) -> float:
        return max(self.now, self._delivered / RATE)  # the newest sample captured, heard or not

    def _hear(self, block: np.ndarray, captured: float) -> None:
        clean = self.echo.process(block) if self.echo is not None else block
        raw = self.echo.consumed if self.echo is not None else block
        for tap in self.taps:
            tap(clean)
        if self._kept + len(clean) > len(self._buffer):  # once every ~35 s: the oldest half goes
            drop = self._kept + len(clean) - int(self._keep_s * RATE)
            self._buffer[: self._kept - drop] = self._buffer[drop : self._kept]
            self._kept, self._audio_start = self._kept - drop, self._audio_start + drop
        self._buffer[self._kept : self._kept + len(clean)] = clean
        self._kept += len(clean)
        raws, cleans = (np.concatenate([self._vad_in[0], raw]), np.concatenate([self._vad_in[1], clean]))
        probabilities = self._vad.feed(clean)
        self._vad_in = (raws[len(probabilities) * WINDOW :], cleans[len(probabilities) * WINDOW :])
        for i, probability in enumerate(probabilities):
            if self.turns.speaking and self.echo is not None and probability >= self.turns.config.keep_threshold:
                probability = 0.0 if self._echo_only(raws, cleans, i) else probability
            self._heard += WINDOW
            self._handle(self.turns.vad(probability, self.now, WINDOW_S))
        self._received += len(block)
        self._offset = min(self._offset, captured - self._received / RATE)
        if self._restore is not None and self.now >= self._restore[1]:
            self._restore_onset(self._restore[0])
            self._restore = None
        if self._release_at is not None and self.now >= self._release_at:
            self._release_at = None
            self._handle(self.turns.release(self.now))

    def _echo_only(self, raws: np.ndarray, cleans: np.ndarray, i: int) -> bool:
        """Whether the ``i``th VAD window is the console's own voice, not a person speaking over it."""
        raw, clean = raws[i * WINDOW : (i + 1) * WINDOW], cleans[i * WINDOW : (i + 1) * WINDOW]
        taken_db = 10 * np.log10((float(raw @ raw) + 1e-7) / (float(clean @ clean) + 1e-7))
        age = len(cleans) - (i + 1) * WINDOW
        echo = self.echo
        assert echo is not None
        return not echo.locked or taken_db > ECHO_DOMINATED_DB or echo.echo_likeness(clean, age) > ECHO_LIKENESS

    def _handle(self, events: list[TurnEvent]) -> None:
        for event in events:
            if isinstance(event, TranscribeRequest):
                task = asyncio.get_running_loop().create_task(self._transcribe(event))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
                continue
            if isinstance(event, Paused):
                self._restore = (event.at - WINDOW_S - self.turns.config.pre_roll_s, event.at + RESTORE_AFTER_S)
            if isinstance(event, SpeechStarted):
                self._starts[event.utterance] = event.at
            elif isinstance(event, SpeechEnded):
                start = self._starts.pop(event.utterance, event.at)
                if self.recordings is not None:
                    self._keep(self.recordings, event.utterance, start, event.at)
            self._on_event(event)

    @property
    def _audio(self) -> np.ndarray:
        """What was heard (echo-cancelled), the last ``_keep_s`` or more: a view."""
        return self._buffer[: self._kept]

    def _restore_onset(self, start: float) -> None:
        """Speech over the console: where the canceller's suppressor took its start for echo, the transcript hears
        the microphone less a linear estimate of the echo instead (``EchoCanceller.without_echo``)."""
        n = min(self._audio_start + len(self._audio) - int(start * RATE), len(self._audio), RESTORABLE)
        n -= n % FRAME
        restored = self.echo.without_echo(n) if self.echo is not None and n > 0 else None
        if restored is None:
            return
        kept, linear = self._audio[-n:].reshape(-1, FRAME), restored.reshape(-1, FRAME)
        eaten = np.sum(linear * linear, axis=1) > SUPPRESSED * np.sum(kept * kept, axis=1)
        kept[eaten] = linear[eaten]  # (a view: the audio transcribed and kept)

    def _slice(self, start: float, end: float) -> np.ndarray:
        lo = max(int(start * RATE) - self._audio_start, 0)
        return self._audio[lo : max(int(end * RATE) - self._audio_start, lo)].copy()

    async def _transcribe(self, request: TranscribeRequest) -> None:
        try:
            text, failed = await self.transcriber.transcribe(self._slice(request.start, request.end), self.language), ""
        except VoicedeskError as exc:
            text, failed = "", exc.message + (f" {exc.advice}" if exc.advice else "")
        events = self.turns.transcribed(request, text, self.now, bool(failed))
        if failed and any(isinstance(e, Dropped) for e in events):  # told once, with the utterance it loses
            self._on_event(ListenerError(failed, listening=True))
        self._handle(events)

    def _keep(self, folder: Path, utterance: int, start: float, end: float) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        audio = self._slice(start - self.turns.config.pre_roll_s, end + self.turns.config.tail_s)
        with wave.open(str(folder / time.strftime(f"%Y%m%d-%H%M%S-{utterance}.wav")), "wb") as out:
            out.setnchannels(1)
            out.setsampwidth(2)
            out.setframerate(RATE)
            out.writeframes((np.clip(audio, -1, 1) * 32767).astype("<i2").tobytes())
