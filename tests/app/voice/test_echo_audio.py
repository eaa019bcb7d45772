"""Barge-in with echo cancellation, through real audio: the console's output sink is looped into the virtual
microphone (module-loopback, 30 ms, the echo about as loud as the person), so the microphone hears the console as a
room would.

Over a minute of random-weight Kokoro (noise, which silero never takes for speech, so it measures the attenuation)
and of espeak-ng as the console's voice (speech, which the raw microphone's VAD does take for speech: the control
that this test fails without the canceller), nothing is heard; a person speaking over it barges in and is transcribed.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from tests.app.voice.conftest import mic_input, play_into, read_16k, words
from tests.app.voice.test_listen_audio import Heard, pactl, started
from voicedesk.app.player import AudioPlayer
from voicedesk.app.voice.echo import EchoCanceller
from voicedesk.app.voice.listener import Listener
from voicedesk.app.voice.microphone import Microphone
from voicedesk.app.voice.turns import BargeIn, SpeechStarted, TurnConfig, TurnDetector
from voicedesk.app.voice.vad import RATE, SpeechDetector

pytestmark = [pytest.mark.audio, pytest.mark.slow]


class RecordingCanceller(EchoCanceller):
    """The product's canceller, keeping what went in and what came out."""

    def __init__(self) -> None:
        super().__init__()
        self.raw: list[np.ndarray] = []
        self.clean: list[np.ndarray] = []

    def process(self, mic: np.ndarray) -> np.ndarray:
        out = super().process(mic)
        self.raw.append(mic)
        self.clean.append(out)
        return out


ECHO_VOLUME = 0.7
"""The loop's gain (PulseAudio's cubic volume: -9 dB): the console's echo about as loud as the person speaking."""


def loudness(module: str, volume: float) -> None:
    import pulsectl

    with pulsectl.Pulse("voicedesk-test") as pulse:
        for stream in pulse.sink_input_list():
            if str(stream.owner_module) == module:
                pulse.volume_set_all_chans(stream, volume)


def level_db(x: np.ndarray) -> float:
    return 10 * np.log10(np.mean(x.astype(np.float64) ** 2) + 1e-12)


async def test_console_echo_is_never_heard_and_a_person_still_interrupts(
    virtual_mic, speech, whisper, synthesizer, test_sink
):
    import torch

    torch.manual_seed(0)
    kokoro = np.concatenate(
        [synthesizer.synthesize(t, "af_heart", 1.0).audio for t in ("The lights are off now.", "It will rain at noon.")]
    )
    kokoro = np.clip(np.asarray(kokoro, np.float32), -1, 1)
    loops = int(np.ceil(60 * 24_000 / len(kokoro)))
    console_voice = read_16k(speech("The kitchen lights are now off, and the front door is locked.", "-v", "en-gb"))
    import soxr

    console_voice = soxr.resample(console_voice, RATE, 24_000).astype(np.float32)
    # The console's voice after a first Kokoro reply: an always-on console's canceller has converged by then.
    program = np.concatenate([kokoro, console_voice, *[kokoro] * loops, kokoro])
    voice_from = len(kokoro) / 24_000
    noise_from = voice_from + len(console_voice) / 24_000
    person = speech("stop, turn off the kitchen lights")

    loopback = await pactl(
        "load-module", "module-loopback", f"source={test_sink}.monitor", f"sink={virtual_mic}", "latency_msec=30"
    )
    loudness(loopback, ECHO_VOLUME)
    echo = RecordingCanceller()
    heard = Heard()
    turns = TurnDetector(TurnConfig())
    listener = Listener(Microphone(mic_input(virtual_mic)), turns, whisper, heard, echo=echo)
    player = AudioPlayer(tap=echo.played)
    task = asyncio.create_task(listener.run())
    try:
        player.open()
        await started(listener)
        console_from = listener.now
        turns.speaking = True
        player.push_float(np.zeros(6000, np.float32))
        player.push_float(program)
        player.end_utterance()
        await asyncio.sleep(len(program) / 24_000 - len(kokoro) / 24_000)  # into the last Kokoro stretch
        false_starts = heard.of(SpeechStarted)
        false_barge_ins = heard.of(BargeIn)
        underflows = player.device_underflows
        turns.speaking = True  # had one cut the console, the app would have stopped it; here it plays on
        person_from = listener.now
        await play_into(virtual_mic, person)
        await heard.until(lambda: [b for b in heard.of(BargeIn) if b.at > person_from])
        player.interrupt()
        await heard.until(lambda: [t for t in heard.finals() if t.at > person_from])
        barge = heard.of(BargeIn)[-1]
        begin = next(s for s in heard.of(SpeechStarted) if s.at > person_from)
        assert begin.at < person_from + 3.0  # paplay starting, buffers, and a listener behind on a busy machine
        assert barge.at - begin.at < 1.5  # 0.5 s of voiced speech: 'stop,' then a pause, then the rest
        # Heard through the canceller while the console still spoke (double talk, until the fade and the room's
        # echo of it end), by the tiny test model, the words suffer: "turn up the kitchen right" and "and turns off
        # the kit and drives" came back (alone, tiny.en hears every word). That it became a turn is the check.
        assert len(words(heard.finals()[-1].text).split()) >= 3
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        player.close()
        await pactl("unload-module", loopback)

    raw, clean = np.concatenate(echo.raw), np.concatenate(echo.clean)
    start = int((console_from + noise_from) * RATE)
    stretch = slice(start, int((console_from + len(program) / 24_000 - len(kokoro) / 24_000) * RATE))
    windows = [
        (level_db(raw[i : i + RATE // 4]), level_db(clean[i : i + RATE // 4]))
        for i in range(stretch.start, stretch.stop - RATE // 4, RATE // 4)
    ]
    attenuation = [r - c for r, c in windows]
    leaky = sum(a < 20 for a in attenuation) / len(attenuation)
    voice_at = console_from + 0.25 + voice_from
    voice = slice(int(voice_at * RATE), int((voice_at + len(console_voice) / 24_000) * RATE))
    raw_vad = sum(p > 0.5 for p in SpeechDetector().feed(raw[voice]))
    clean_vad = sum(p > 0.5 for p in SpeechDetector().feed(clean[voice]))
    print(
        f"\nKokoro echo {np.median([r for r, _ in windows]):.1f} dBFS at the microphone; over "
        f"{len(windows) / 4:.0f} s the canceller took off {np.median(attenuation):.1f} dB (median), under 20 dB in "
        f"{leaky:.1%} of 250-ms windows; the console's voice: {raw_vad} VAD windows speech raw, {clean_vad} after; "
        f"{len(false_starts)} false speech starts, {len(false_barge_ins)} false barge-ins, {underflows} player "
        f"underflows, the reference moved back into step {echo.realigned} times; barge-in "
        f"{barge.at - begin.at:.2f} s after the person began; heard {heard.finals()[-1].text!r}"
    )
    assert np.median([r for r, _ in windows]) > -25  # the echo really reached the microphone
    assert np.median(attenuation) > 30
    assert raw_vad > 20  # without the canceller, the console's voice is speech to the VAD
    if underflows:
        # Each underrun makes the device play silence the tap never saw: the echo path jumps under the canceller,
        # which leaks until it finds it again. On this shared machine a minute had 6 to 29 of them; the strict
        # checks below are for a rig that played cleanly (the figures above are printed either way).
        pytest.xfail(f"{underflows} player underflows: the echo path was not steady enough to judge by")
    assert leaky < 0.05
    assert clean_vad < raw_vad / 5  # with the canceller, the console's voice is not speech
    assert not false_starts and not false_barge_ins
