"""Real listening: espeak-ng speech played into the virtual microphone → a real PortAudio input stream → Silero VAD →
the turn detector → faster-whisper tiny.en. Nothing here is mocked."""

from __future__ import annotations

import asyncio
import wave
from collections.abc import Callable

import pytest

from tests.app.voice.conftest import mic_input, play_into, voiced_s, words
from voicedesk.app.voice.listener import Listener, ListenerError
from voicedesk.app.voice.microphone import Microphone
from voicedesk.app.voice.turns import SpeechEnded, SpeechStarted, Transcript, TurnConfig, TurnDetector

pytestmark = pytest.mark.audio


class Heard:
    """The listener's events, and a way to wait for one."""

    def __init__(self) -> None:
        self.events: list[object] = []
        self._changed = asyncio.Event()

    def __call__(self, event: object) -> None:
        self.events.append(event)
        self._changed.set()

    def of(self, kind: type) -> list:
        return [e for e in self.events if isinstance(e, kind)]

    def finals(self) -> list[Transcript]:
        return [e for e in self.of(Transcript) if e.final]

    async def until(self, predicate: Callable[[], object], within: float = 30.0) -> None:
        async with asyncio.timeout(within):
            while not predicate():
                self._changed.clear()
                await self._changed.wait()


async def pactl(*args: str) -> str:
    proc = await asyncio.create_subprocess_exec("pactl", *args, stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    assert proc.returncode == 0, args
    return out.decode().strip()


async def started(listener: Listener, seconds: float = 0.3) -> None:
    """Null-sink rule 1: an idle sink's monitor delivers its first block late; play only once audio flows."""
    async with asyncio.timeout(10):
        while listener.now < seconds:  # noqa: ASYNC110 - the listener has no event for it, and needs none
            await asyncio.sleep(0.05)


async def test_spoken_command_becomes_the_final_transcript(virtual_mic, speech, whisper, tmp_path, monkeypatch):
    command = speech("turn off the kitchen lights")
    heard = Heard()
    listener = Listener(Microphone(mic_input(virtual_mic)), TurnDetector(TurnConfig()), whisper, heard)
    task = asyncio.create_task(listener.run())
    levels: list[float] = []

    async def meter() -> None:  # what a level meter would read, ten times a second
        while True:
            levels.append(listener.microphone.level_dbfs)
            await asyncio.sleep(0.1)

    try:
        await started(listener)
        quiet = listener.microphone.level_dbfs
        metering = asyncio.create_task(meter())
        await play_into(virtual_mic, command)
        metering.cancel()
        assert quiet < -90 < -40 < max(levels)  # the null sink's silence, then the speech
        await heard.until(lambda: heard.finals())
        (begin,) = heard.of(SpeechStarted)
        (end,) = heard.of(SpeechEnded)
        assert words(heard.finals()[0].text) == "turn off the kitchen lights"
        assert end.reason == "silence"
        assert abs((end.at - begin.at) - voiced_s(command)) < 0.25  # the speech's own length, as the VAD saw it
        assert end.decided_at - end.at == pytest.approx(0.6, abs=0.07)  # the end-of-speech silence setting
        assert not list(tmp_path.rglob("*.wav")) and not heard.of(ListenerError)

        # Keeping recordings on: the next utterance is written, as heard (16 kHz), and only then.
        listener.recordings = tmp_path / "recordings"
        await play_into(virtual_mic, command)
        await heard.until(lambda: len(heard.finals()) == 2)
        (kept,) = (tmp_path / "recordings").glob("*.wav")
        with wave.open(str(kept)) as w:
            assert w.getframerate() == 16_000
            assert abs(w.getnframes() / 16_000 - (voiced_s(command) + 0.5)) < 0.3  # + pre-roll and tail
        print(
            f"\nend of speech decided after {end.decided_at - end.at:.3f} s; final transcript after another "
            f"{heard.finals()[0].at - end.decided_at:.3f} s (speculative transcription)"
        )
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_microphone_unplugged_mid_sentence_keeps_what_was_said(speech, whisper):
    module = await pactl("load-module", "module-null-sink", "sink_name=voicedesk_usb_mic", "rate=16000", "channels=1")
    heard = Heard()
    listener = Listener(Microphone(mic_input("voicedesk_usb_mic")), TurnDetector(TurnConfig()), whisper, heard)
    task = asyncio.create_task(listener.run())
    try:
        await started(listener)
        sentence = speech("turn off the kitchen lights and then lock the front door and close the garage")
        playing = asyncio.create_task(play_into("voicedesk_usb_mic", sentence))
        await heard.until(lambda: heard.of(SpeechStarted))
        await asyncio.sleep(1.0)
        await pactl("unload-module", module)  # unplugged
        module = ""
        await heard.until(lambda: heard.finals() and heard.of(ListenerError), within=60)
        await asyncio.wait_for(task, 5)  # the listener stopped by itself
        (error,) = heard.of(ListenerError)
        assert "microphone" in error.message and "typing still works" in error.message
        (end,) = heard.of(SpeechEnded)
        # Stopped by the loss, or ended by the silence of the source PulseAudio moved the stream to, if that came
        # first (the source is asked for twice a second; a busy machine's listener runs behind).
        assert end.reason in ("stopped", "silence")
        assert "turn off" in words(heard.finals()[0].text)  # the half sentence was still transcribed
        playing.cancel()
    finally:
        if module:
            await pactl("unload-module", module)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def test_no_microphone_by_that_name_is_a_clear_error():
    from voicedesk.app.player import AudioDeviceError

    with pytest.raises(AudioDeviceError, match="microphone 'nowhere' is not connected"):
        Microphone("pulse-source:nowhere").open()
