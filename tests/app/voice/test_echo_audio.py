"""Barge-in by voice through real audio: VoiceInput on the real AudioPlayer and SpeechController (no Qt), the
console's output sink looped into the virtual microphone (module-loopback, 30 ms, the echo about as loud as the
person), Silero VAD, livekit's echo canceller, tiny.en.

The console speaks espeak-ng (speech to the VAD: the raw microphone's VAD takes the echo for speech, the control
that this test fails without the canceller) for over a minute and hears nothing; then a person speaks over it: the
reply fades, the interruption is transcribed and answered.
"""

from __future__ import annotations

import asyncio
import time
import wave

import numpy as np
import pytest
import soxr

from tests.app.house.helpers import paced_opener
from tests.app.voice.conftest import mic_input, play_into, words
from tests.app.voice.test_listen_audio import Heard as Recorder
from tests.app.voice.test_listen_audio import pactl
from tests.support.audio_capture import SinkCapture, find, gaps
from voicedesk.app.controller import SpeechController
from voicedesk.app.conversation import CutMark, TurnKind, TurnState
from voicedesk.app.engines import EngineHub
from voicedesk.app.house.announcer import HeadlessListener
from voicedesk.app.lab.paced_synth import PacedSynthesizer, tone
from voicedesk.app.player import AudioPlayer
from voicedesk.app.voice import echo as echo_module
from voicedesk.app.voice.vad import RATE, SpeechDetector
from voicedesk.app.voice.voice_input import Heard, Interrupted, Listening, NotHeard, VoiceInput, VoiceSettings
from voicedesk.engine.engine_spec import EngineSpec
from voicedesk.engine.events import SAMPLE_RATE, SessionConfig
from voicedesk.engine.model.synthesis import SynthesisResult

# alone: real-time audio that must not starve (tests/support/parallel.py)
pytestmark = [pytest.mark.audio, pytest.mark.slow, pytest.mark.alone]

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

    def synthesize(self, text, voice, speed, should_stop=None, settings=None) -> SynthesisResult:
        with wave.open(str(self.speech(text, "-v", "en-gb", "-s", "160"))) as w:
            pcm = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768
            audio = soxr.resample(pcm, w.getframerate(), SAMPLE_RATE).astype(np.float32)
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


async def reply(sentences: list[str]):
    for sentence in sentences:
        yield sentence + " "


async def test_the_console_never_hears_itself_and_a_person_cuts_it_off(
    virtual_mic, speech, whisper, test_sink, monkeypatch
):
    monkeypatch.setattr(echo_module, "EchoCanceller", RecordingCanceller)
    heard = Recorder()
    synth, headless = EspeakVoice(speech), HeadlessListener()
    controller = SpeechController(EngineHub(headless.engine_status, paced_opener(synth)), headless)
    controller.voice = SessionConfig("af_heart", max_buffer_delay_ms=0)
    player = controller.player = AudioPlayer(on_event=controller.on_player_event, loop=asyncio.get_running_loop())
    settings = VoiceSettings(enabled=True, input_device=mic_input(virtual_mic))  # barge-in after 0.3 s of speech
    voice = VoiceInput(settings, heard, controller.stop, "bf_emma", whisper)
    voice.attach(player)
    pauses, pause = [], player.buffer.pause  # (what the listener had heard, monotonic) at each pause
    player.buffer.pause = lambda: (pauses.append((voice.listener.now, time.monotonic())), pause())[1]
    person = speech("stop, turn off the kitchen lights")
    loopback = await pactl(
        "load-module", "module-loopback", f"source={test_sink}.monitor", f"sink={virtual_mic}", "latency_msec=30"
    )
    loudness(loopback, ECHO_VOLUME)
    task = asyncio.create_task(voice.run())
    capture = SinkCapture(test_sink)
    try:
        await controller.use_engine(EngineSpec("local"))
        with capture:
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
            moves = echo.realigned
            assert turn.active, f"a false barge-in: {heard_alone}; echo lags (ms) before it {lags}, moves {moves}"
            await play_into(virtual_mic, person)
            await heard.until(lambda: heard.of(Interrupted) and heard.of(Heard))
            await asyncio.sleep(player.output_latency_s + 0.2)  # null-sink rule 3: the fade reaches parec
            recording = soxr.resample(capture.stop(), capture.sample_rate, RATE).astype(np.float32)
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

    # Over a minute of the console's voice nothing reached the agent or cut the console (issue 29's "0 false
    # barge-ins"), although the raw microphone's VAD takes it for speech. Echo let through now and then starts an
    # utterance that comes to nothing (a partial, then NotHeard: a false start, printed below like the resumed
    # pauses; one CI run had one in the minute).
    assert heard_alone[:1] and isinstance(heard_alone[0], Listening), heard_alone
    assert not [e for e in heard_alone if isinstance(e, Heard | Interrupted)], heard_alone
    false_starts = [e.reason for e in heard_alone if isinstance(e, NotHeard)]
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

    # The interruption, on the microphone's own clock: the VAD's onset, and where the sink went quiet for good (the
    # fade's end) as the microphone heard it through the loop, found by the echo before the person spoke.
    clock = voice.listener.to_monotonic(0.0)
    onset = int((said.times.speech_start - clock) * RATE)
    # The echo alone in a half-second before the person's first sample (up to 265 ms before the VAD's onset), the
    # one that fits best (underflows and the loop's drift blur longer stretches), searched for in the 8 s the sink
    # played before it went quiet (the reply says each sentence 4 times, 25 s apart).
    quiet_from = gaps(recording)[-1][0]
    near = max(0, quiet_from - 8 * RATE)
    fits = {
        s: find(recording[near:quiet_from], raw[s : s + RATE // 2])
        for s in range(onset - 2 * RATE, onset - RATE, RATE // 8)
    }
    start, (at, fit) = max(fits.items(), key=lambda f: f[1][1])
    assert fit > 0.6, f"the console's echo before the onset was not found in the sink's recording ({fit:.2f})"
    gone_s = (quiet_from - near - at + start - onset) / RATE
    ours = [p for p in pauses if p[0] > onset / RATE] or pauses[-1:]
    assert ours, "the reply was never paused"
    heard_to, paused_at = ours[0]
    behind_s = paused_at - clock - heard_to  # the listener behind the microphone: the machine's load
    barge_s = interrupted.at - clock - onset / RATE
    print(
        f"\nconsole's voice for {(listened_to - console_from):.0f} s, echo at {np.median([r for r, _ in windows]):.1f}"
        f" dBFS: the canceller took off {np.median(attenuation):.1f} dB (median), under 20 dB in {leaky:.1%} of "
        f"250-ms windows; VAD windows of speech: {raw_vad} raw, {clean_vad} after (before the echo gate); "
        f"{sum(p[0] < onset / RATE for p in pauses)} pauses resumed (echo taken for the onset of speech), "
        f"{len(false_starts)} false starts {false_starts}; "
        f"{underflows} player underflows ({echo.lost / SAMPLE_RATE:.2f} s of silence the device played fed as "
        f"reference), the echo's lag {min(echo.lags) * 1000:.0f}-{max(echo.lags) * 1000:.0f} ms, moved back into step"
        f" {echo.realigned} times. Speech onset (VAD) → paused after hearing {(heard_to - onset / RATE) * 1000:.0f} "
        f"ms of it, {behind_s * 1000:.0f} ms behind the microphone → the reply gone from the sink {gone_s * 1000:.0f}"
        f" ms after the onset (output latency {latency * 1000:.0f} ms); barge-in committed "
        f"{barge_s:.3f} s after it; heard {said.text!r}; cut after {getattr(interrupted.cut, 'quote', None)!r}"
    )
    assert raw_vad > 100  # without the canceller, the console's voice is speech to the VAD
    assert np.median(attenuation) > 25
    assert isinstance(interrupted.cut, CutMark) and interrupted.cut.heard_text
    assert turn.state is TurnState.CUT and answer.state is TurnState.DONE, heard.events
    assert "kitchen" in words(said.text)
    assert said.times.speech_start < interrupted.at < said.times.final_transcript
    # Issue 29's 300 ms from the onset, as test_barge_in_audio.py asserts it: the pause is decided on the onset's own
    # samples, and the fade reaches the sink at once, unless the machine keeps the listener behind (docs/voice.md).
    assert heard_to - onset / RATE <= 0.1
    assert 0.0 < gone_s <= 0.3 + max(behind_s - 0.05, 0.0)
