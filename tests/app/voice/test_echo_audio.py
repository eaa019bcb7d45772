"""Barge-in by voice through real audio: VoiceInput on the real AudioPlayer and SpeechController (no Qt), the
console's output sink looped into the virtual microphone (module-loopback, 30 ms, the echo about as loud as the
person), Silero VAD, livekit's echo canceller, tiny.en.

The console speaks espeak-ng (speech to the VAD: the raw microphone's VAD takes the echo for speech, the control
that this test fails without the canceller) for over a minute and hears nothing; then a person speaks over it: the
reply fades, the interruption is transcribed and answered.
"""

from __future__ import annotations

import asyncio
import wave

import numpy as np
import pytest
import soxr

from tests.app.house.helpers import paced_opener
from tests.app.voice.conftest import mic_input, play_into, words
from tests.app.voice.test_listen_audio import Heard as Recorder
from tests.app.voice.test_listen_audio import pactl
from voicedesk.app.controller import SpeechController
from voicedesk.app.conversation import CutMark, TurnKind, TurnState
from voicedesk.app.engines import EngineHub
from voicedesk.app.house.announcer import HeadlessListener
from voicedesk.app.lab.paced_synth import PacedSynthesizer, tone
from voicedesk.app.player import AudioPlayer
from voicedesk.app.voice import echo as echo_module
from voicedesk.app.voice.vad import RATE, SpeechDetector
from voicedesk.app.voice.voice_input import Heard, Interrupted, Listening, VoiceInput, VoiceSettings
from voicedesk.engine.engine_spec import EngineSpec
from voicedesk.engine.events import SAMPLE_RATE, SessionConfig
from voicedesk.engine.model.synthesis import SynthesisResult

pytestmark = [pytest.mark.audio, pytest.mark.slow]

ECHO_VOLUME = 0.7
"""The loop's gain (PulseAudio's cubic volume: -9 dB): the console's echo about as loud as the person speaking."""
REPLY = [
    "The kitchen lights are now off, and the front door is locked.",
    "The living room is at twenty one degrees, and the heating will turn down at ten.",
    "Tomorrow it will rain in the morning, with some sun after lunch.",
    "The washing machine finished twenty minutes ago.",
    "Nobody has rung the door bell since this morning.",
    "The garage door is closed, and the car is charging.",
]
LISTENED_S = 62.0


class EspeakVoice(PacedSynthesizer):
    """The console's voice for this test: espeak-ng (British), which Silero hears as speech."""

    def __init__(self, speech) -> None:
        super().__init__()
        self.speech = speech
        self.said: list[np.ndarray] = []

    def synthesize(self, text, voice, speed, should_stop=None, settings=None) -> SynthesisResult:
        with wave.open(str(self.speech(text, "-v", "en-gb", "-s", "160"))) as w:
            pcm = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768
            audio = soxr.resample(pcm, w.getframerate(), SAMPLE_RATE).astype(np.float32)
        self.said.append(audio)
        return SynthesisResult(audio=audio, words=tone(text, len(audio) / SAMPLE_RATE)[1], phonemes=text)


class RecordingCanceller(echo_module.EchoCanceller):
    """The product's canceller, keeping what went in and what came out."""

    def __init__(self) -> None:
        super().__init__()
        self.raw: list[np.ndarray] = []
        self.clean: list[np.ndarray] = []
        self.lost = 0
        self.lags: list[float] = []

    def played(self, block: np.ndarray, lost: int = 0) -> None:
        self.lost += lost
        super().played(block, lost)

    def _keep_in_step(self) -> None:
        super()._keep_in_step()
        if self.lag_s is not None:
            self.lags.append(self.lag_s)

    def process(self, mic: np.ndarray) -> np.ndarray:
        out = super().process(mic)
        self.raw.append(mic)
        self.clean.append(out)
        return out


def loudness(module: str, volume: float) -> None:
    import pulsectl

    with pulsectl.Pulse("voicedesk-test") as pulse:
        for stream in pulse.sink_input_list():
            if str(stream.owner_module) == module:
                pulse.volume_set_all_chans(stream, volume)


def db(x: np.ndarray) -> float:
    return 10 * np.log10(np.mean(x.astype(np.float64) ** 2) + 1e-12)


def loud_from(audio: np.ndarray) -> int:
    return int(np.flatnonzero(np.abs(audio) > 0.01)[0])


def echo_gone_at(mic: np.ndarray, console: np.ndarray, onset: int) -> int:
    """Where the console's echo stops for good in the microphone after ``onset``: half a second before it (echo
    alone) finds the echo's place in ``console`` and its gain; a 40-ms window still holds the echo when some
    placement of the console's audio near there (±150 ms: an underrun moves it) explains a third of that gain."""
    gap = RATE // 10  # the VAD's onset may be a window late
    before = mic[onset - RATE // 2 - gap : onset - gap]
    dots = np.correlate(console, before, "valid")
    energies = np.convolve(console**2, np.ones(len(before)), "valid")
    k = int(np.argmax(dots / np.sqrt(energies * float(before @ before) + 1e-12)))
    assert dots[k] / np.sqrt(energies[k] * float(before @ before)) > 0.4, "the echo before the onset was not found"
    place, gain = k + len(before) + gap, dots[k] / energies[k]
    win, reach, last = RATE // 25, int(0.15 * RATE), onset
    for at in range(onset, onset + int(1.5 * RATE), win):
        here = place + at - onset
        expected = console[max(0, here - reach) : here + win + reach]
        if len(expected) < win + reach or db(console[here : here + win]) < -40:
            continue  # a pause in what the console says (or its end): nothing to match
        fits = np.correlate(expected, mic[at : at + win], "valid") / (
            np.convolve(expected**2, np.ones(win), "valid") + 1e-9
        )
        if np.max(fits) >= gain / 3:
            last = at + win
    return last


async def reply(sentences: list[str]):
    for sentence in sentences:
        yield sentence + " "


async def test_the_console_never_hears_itself_and_a_person_cuts_it_off(
    virtual_mic, speech, whisper, test_sink, monkeypatch
):
    monkeypatch.setattr(echo_module, "EchoCanceller", RecordingCanceller)
    heard, onsets = Recorder(), []
    synth, headless = EspeakVoice(speech), HeadlessListener()
    controller = SpeechController(EngineHub(headless.engine_status, paced_opener(synth)), headless)
    controller.voice = SessionConfig("af_heart", max_buffer_delay_ms=0)
    player = controller.player = AudioPlayer(
        on_event=lambda e: (onsets.append(e), controller.on_player_event(e)), loop=asyncio.get_running_loop()
    )
    settings = VoiceSettings(enabled=True, input_device=mic_input(virtual_mic))  # barge-in after 0.3 s of speech
    voice = VoiceInput(settings, heard, controller.stop, "bf_emma", whisper)
    voice.attach(player)
    person = speech("stop, turn off the kitchen lights")
    loopback = await pactl(
        "load-module", "module-loopback", f"source={test_sink}.monitor", f"sink={virtual_mic}", "latency_msec=30"
    )
    loudness(loopback, ECHO_VOLUME)
    task = asyncio.create_task(voice.run())
    try:
        await controller.use_engine(EngineSpec("local"))
        player.open()
        await heard.until(lambda: heard.of(Listening))
        while voice.listener.now < 0.3:  # noqa: ASYNC110 - null-sink rule 1: play once audio flows
            await asyncio.sleep(0.05)
        console_from = voice.listener.now
        turn = await controller.speak(TurnKind.AGENT, "what's new?", reply(REPLY * 4))
        async with asyncio.timeout(LISTENED_S * 3):
            while turn.active and (controller.heard_position() or 0.0) < LISTENED_S:  # noqa: ASYNC110
                await asyncio.sleep(0.5)
        heard_alone, listened_to, underflows = list(heard.events), voice.listener.now, player.device_underflows
        echo = voice.listener.echo
        # Nothing cut the console while it spoke alone (short stalls walk the echo 25-48 ms a second under load).
        lags = [round(lag * 1000) for lag in echo.lags[-24:]]
        assert turn.active, f"a false barge-in: {heard_alone}; echo lags (ms) before it {lags}, moves {echo.realigned}"
        await play_into(virtual_mic, person)
        await heard.until(lambda: heard.of(Interrupted) and heard.of(Heard))
        (said,), (interrupted,) = heard.of(Heard), heard.of(Interrupted)
        answer = await controller.speak(TurnKind.AGENT, said.text, reply(["Done, the kitchen lights are off."]))
        await controller.wait_turn(answer)
        latency = player.output_latency_s
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        player.close()
        await controller.aclose()
        await pactl("unload-module", loopback)

    # Over a minute of the console's voice nothing was heard, although the raw microphone's VAD takes it for speech.
    assert [type(e) for e in heard_alone] == [Listening]
    raw, clean = np.concatenate(echo.raw), np.concatenate(echo.clean)
    minute = slice(int(console_from * RATE), int(listened_to * RATE))
    raw_vad = sum(p > 0.5 for p in SpeechDetector().feed(raw[minute]))
    clean_vad = sum(p > 0.5 for p in SpeechDetector().feed(clean[minute]))
    quarter = RATE // 4
    windows = [
        (db(raw[i : i + quarter]), db(clean[i : i + quarter]))
        for i in range(minute.start, minute.stop - quarter, quarter)
        if db(raw[i : i + quarter]) > -40  # the echo of speech, not the pauses between sentences
    ]
    attenuation = [r - c for r, c in windows]
    leaky = sum(a < 20 for a in attenuation) / len(attenuation)

    # The interruption, on the microphone's own clock: the person's first sample, and where the console's echo ends
    # (so the loop's own delay counts against the product). The console was saying the sentence whose onset came
    # last before the barge-in, or the next.
    clock = voice.listener.to_monotonic(0.0)
    onset = int((said.times.speech_start - clock) * RATE)
    cut_in = sum(e.kind == "onset" and e.monotonic < interrupted.at for e in onsets) - 1
    console = soxr.resample(np.concatenate(synth.said[max(0, cut_in - 1) : cut_in + 2]), SAMPLE_RATE, RATE)
    gone = echo_gone_at(raw, console.astype(np.float32), onset)
    barge_s, gone_s = interrupted.at - clock - onset / RATE, (gone - onset) / RATE
    print(
        f"\nconsole's voice for {(listened_to - console_from):.0f} s, echo at {np.median([r for r, _ in windows]):.1f}"
        f" dBFS: the canceller took off {np.median(attenuation):.1f} dB (median), under 20 dB in {leaky:.1%} of "
        f"250-ms windows; VAD windows of speech: {raw_vad} raw, {clean_vad} after (before the echo gate); "
        f"{underflows} player underflows ({echo.lost / SAMPLE_RATE:.2f} s of silence the device played fed as "
        f"reference), the echo's lag {min(echo.lags) * 1000:.0f}-{max(echo.lags) * 1000:.0f} ms, moved back into step"
        f" {echo.realigned} times. Speech onset (VAD) → barge-in {barge_s:.3f} s → echo gone {gone_s:.3f} s (output "
        f"latency {latency * 1000:.0f} ms); heard {said.text!r}; cut after {getattr(interrupted.cut, 'quote', None)!r}"
    )
    assert raw_vad > 100  # without the canceller, the console's voice is speech to the VAD
    assert np.median(attenuation) > 25
    assert isinstance(interrupted.cut, CutMark) and interrupted.cut.heard_text
    assert turn.state is TurnState.CUT and answer.state is TurnState.DONE, heard.events
    assert "kitchen" in words(said.text)
    assert said.times.speech_start < interrupted.at < said.times.final_transcript
    # Issue 29 asks for 300 ms from the onset: the decision alone needs 0.3 s of voiced speech (a cough must not cut
    # the reply), and on a loaded machine the listener runs behind the microphone; docs/voice.md has the figures.
    # What must hold: the fade reaches the room within a second of the decision (the device's latency, the loop's
    # backlog, the loopback), never the rest of the sentence.
    assert gone_s < barge_s + latency + 1.0
