"""Barge-in's pause through real audio (issue 29.3): the real player, controller and VoiceInput, the console's sink
recorded (parec) and looped into the virtual microphone (module-loopback, 30 ms), Silero VAD, livekit's canceller.

The console says seeded white noise: Silero never takes it for speech, and a correlation finds any stretch of it
again, so the recording tells exactly where the reply stopped and where it went on. Speech over it pauses the reply
at the VAD's onset: a spoken interruption commits (the reply is gone within 300 ms of the onset), a cough-short
"uh" resumes it from where it faded, nothing lost.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import soxr

from tests.app.house.helpers import paced_opener
from tests.app.voice.conftest import mic_input, play_into, read_16k, words
from tests.app.voice.test_echo_audio import ECHO_VOLUME, RecordingCanceller, db, loud_from, loudness, reply
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
from voicedesk.app.voice.vad import RATE
from voicedesk.app.voice.voice_input import Heard, Interrupted, Listening, NotHeard, VoiceInput, VoiceSettings
from voicedesk.engine.engine_spec import EngineSpec
from voicedesk.engine.events import SAMPLE_RATE, SessionConfig
from voicedesk.engine.model.synthesis import SynthesisResult
from voicedesk.engine.paths import DATA_DIR_ENV

# alone: real-time audio that must not starve (tests/support/parallel.py)
pytestmark = [pytest.mark.audio, pytest.mark.slow, pytest.mark.alone]

REPLY_S = 8.0
SPOKEN_AT_S = 3.0
"""Into the reply (the canceller has found its echo by then)."""


class NoiseVoice(PacedSynthesizer):
    def __init__(self) -> None:
        super().__init__()
        self.said: list[np.ndarray] = []

    def synthesize(self, text, voice, speed, should_stop=None, settings=None) -> SynthesisResult:
        noise = np.random.default_rng(len(self.said)).standard_normal(int(REPLY_S * SAMPLE_RATE)) * 0.1
        self.said.append(np.clip(noise, -1, 1).astype(np.float32))
        return SynthesisResult(audio=self.said[-1], words=tone(text, REPLY_S)[1], phonemes=text)


@dataclass
class Run:
    events: Recorder
    turn: object
    recording: np.ndarray
    """The sink, 16 kHz."""
    mic: np.ndarray
    """The raw microphone (before the canceller), 16 kHz from when it opened: the listener's clock."""
    clock: float
    said: np.ndarray
    pauses: list[tuple[float, float]]
    """(microphone clock, monotonic) when VoiceInput paused the player: what the listener had heard, and when."""
    cancelled: np.ndarray
    """The canceller's output (AEC3), on the same clock as ``mic``."""


async def speak_over_the_reply(
    person: Path,
    done,
    virtual_mic: str,
    test_sink: str,
    whisper,
    monkeypatch,
    barge_in_min_s: float = 0.3,
    echo_volume: float = ECHO_VOLUME,
    spoken_at_s: float = SPOKEN_AT_S,
    recordings: Path | None = None,
) -> Run:
    """Plays ``person`` into the microphone ``spoken_at_s`` into the reply; returns once ``done(events)`` holds and
    the turn is over."""
    monkeypatch.setattr(echo_module, "EchoCanceller", RecordingCanceller)
    events, synth, headless = Recorder(), NoiseVoice(), HeadlessListener()
    controller = SpeechController(EngineHub(headless.engine_status, paced_opener(synth)), headless)
    controller.voice = SessionConfig("af_heart", max_buffer_delay_ms=0)
    player = controller.player = AudioPlayer(on_event=controller.on_player_event, loop=asyncio.get_running_loop())
    settings = VoiceSettings(
        enabled=True,
        input_device=mic_input(virtual_mic),
        barge_in_min_s=barge_in_min_s,
        keep_recordings=recordings is not None,
    )
    if recordings is not None:
        monkeypatch.setenv(DATA_DIR_ENV, str(recordings))  # (kept in its recordings/)
    voice = VoiceInput(settings, events, controller.stop, "af_heart", whisper)
    voice.attach(player)
    pauses, pause = [], player.buffer.pause
    player.buffer.pause = lambda: (pauses.append((voice.listener.now, time.monotonic())), pause())[1]
    loopback = await pactl(
        "load-module", "module-loopback", f"source={test_sink}.monitor", f"sink={virtual_mic}", "latency_msec=30"
    )
    loudness(loopback, echo_volume)
    task = asyncio.create_task(voice.run())
    try:
        with SinkCapture(test_sink) as capture:
            await controller.use_engine(EngineSpec("local"))
            player.open()
            await events.until(lambda: events.of(Listening))
            while voice.listener.now < 0.3:  # noqa: ASYNC110 - null-sink rule 1: play once audio flows
                await asyncio.sleep(0.05)
            turn = await controller.speak(TurnKind.AGENT, "what's new?", reply(["The house is quiet tonight."]))
            async with asyncio.timeout(90):
                while (controller.heard_position() or 0.0) < spoken_at_s:  # noqa: ASYNC110
                    await asyncio.sleep(0.02)
                await play_into(virtual_mic, person)
                try:
                    await events.until(lambda: done(events), 45)
                except TimeoutError:
                    pytest.fail(f"no outcome in 45 s: heard {events.events}, paused at {pauses}")
                await controller.wait_turn(turn)
            await asyncio.sleep(player.output_latency_s + 0.2)  # null-sink rule 3: the last block reaches parec
            recording = capture.stop()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        player.close()
        await controller.aclose()
        await pactl("unload-module", loopback)
    echo = voice.listener.echo
    return Run(
        events,
        turn,
        soxr.resample(recording, capture.sample_rate, RATE).astype(np.float32),
        np.concatenate(echo.raw),
        voice.listener.to_monotonic(0.0),
        soxr.resample(np.concatenate(synth.said), SAMPLE_RATE, RATE).astype(np.float32),
        pauses,
        np.concatenate(echo.clean),
    )


def mic_offset(run: Run, onset: int) -> int:
    """Microphone sample = recording sample + this: a second of the reply's echo before ``onset``, found again."""
    start = loud_from(run.recording)
    second = run.recording[start + RATE // 2 : start + 3 * RATE // 2]
    at, fit = find(run.mic[: onset + RATE], second)
    assert fit > 0.5, "the reply's echo was not found in the microphone"
    return at - (start + RATE // 2)


async def test_speech_over_the_reply_silences_it_within_300_ms_of_its_onset(
    virtual_mic, speech, whisper, test_sink, monkeypatch, tmp_path
):
    spoken = speech("stop, turn off the kitchen lights")
    person = read_16k(spoken)
    run = await speak_over_the_reply(
        spoken,
        lambda events: events.of(Interrupted) and events.of(Heard),
        virtual_mic,
        test_sink,
        whisper,
        monkeypatch,
        recordings=tmp_path,
    )
    (said,), (interrupted,) = run.events.of(Heard), run.events.of(Interrupted)
    onset = int((said.times.speech_start - run.clock) * RATE)  # the VAD's, on the microphone's clock
    offset = mic_offset(run, onset)
    # Where the sink went quiet for good (a pause that resumed would not count): the fade's end, as the microphone
    # heard it, so the 30-ms loopback counts against the product as a room's would.
    quiet_from = gaps(run.recording)[-1][0]
    gone_s = (quiet_from + offset - onset) / RATE
    ours = [p for p in run.pauses if p[0] > onset / RATE]  # (an earlier one: the echo taken for speech, resumed)
    assert ours, run.pauses
    heard_to, paused_at = ours[0]
    behind_s = paused_at - run.clock - heard_to  # the listener behind the microphone: the machine's load
    first, _ = find(run.mic[onset - RATE // 2 : onset + RATE], person[loud_from(person) :][: RATE // 2])
    print(
        f"\nVAD onset → paused after hearing {(heard_to - onset / RATE) * 1000:.0f} ms of it, {behind_s * 1000:.0f} ms "
        f"behind the microphone; the reply gone from the sink {gone_s * 1000:.0f} ms after the onset (heard there "
        "through the 30-ms loop); "
        f"the VAD's onset came {(RATE // 2 - first) / RATE * 1000:.0f} ms after the person's first "
        f"sample; barge-in committed {(interrupted.at - run.clock) - onset / RATE:.3f} s after the onset; heard "
        f"{said.text!r}, cut after {getattr(interrupted.cut, 'quote', None)!r}"
    )
    # The pause is decided on the onset's own samples; the fade then reaches the room at once. Issue 29's 300 ms
    # holds unless the machine keeps the listener behind (docs/voice.md has the figures under load).
    assert heard_to - onset / RATE <= 0.1
    assert 0.0 < gone_s <= 0.3 + max(behind_s - 0.05, 0.0)
    assert isinstance(interrupted.cut, CutMark) and interrupted.cut.heard_text
    assert run.turn.state is TurnState.CUT and "kitchen" in words(said.text)
    # Its start, which the canceller's suppressor took for echo (60 dB off: tiny.en then heard "turn off the kitchen
    # lights" in five runs of five), is in what was transcribed: the utterance as kept, from its 0.3-s pre-roll.
    kept = read_16k(max((tmp_path / "recordings").glob("*.wav"), key=lambda wav: wav.stat().st_size))
    start = onset - RATE // 2 + first  # the person's first sample
    span = slice(start, start + RATE // 10)  # its first 100 ms, where the suppressor takes most
    kept_span = kept[start - (onset - RATE * 3 // 10) :][: RATE // 10]
    print(
        f"the person's first 100 ms: the microphone {db(run.mic[span]):.1f} dB, the canceller left "
        f"{db(run.cancelled[span]):.1f}, transcribed {db(kept_span):.1f}; heard {said.text!r}"
    )
    # Nothing of it lost (the microphone holds the echo too: less of it is left), whatever the canceller did: under
    # load it sometimes passes the person untouched, more often it takes 60-90 dB.
    assert db(kept_span) > db(run.mic[span]) - 6
    assert said.times.speech_start < interrupted.at < said.times.final_transcript


async def test_a_cough_over_the_reply_pauses_it_and_it_plays_on_from_where_it_faded(
    virtual_mic, speech, whisper, test_sink, monkeypatch
):
    uh = speech("uh")  # 0.26 s of voice to Silero: under a 0.5-s minimum with a margin the echo cannot eat
    run = await speak_over_the_reply(
        uh, lambda events: True, virtual_mic, test_sink, whisper, monkeypatch, barge_in_min_s=0.5
    )  # (to the reply's end: under 0.15 s of it voiced through the canceller, it is not even an utterance)
    assert {e.reason for e in run.events.of(NotHeard)} <= {"too short to interrupt"} and run.pauses
    assert not run.events.of(Interrupted) and run.turn.state is TurnState.DONE
    start = loud_from(run.recording)
    silences = [g for g in gaps(run.recording) if start < g[0] and g[1] < len(run.recording)]
    # The cough's pause (the last): the longest silence in the sink within a second after what the listener had
    # heard when it paused (the device stalls under load, but briefly).
    heard_to = int(run.pauses[-1][0] * RATE) - mic_offset(run, int(run.pauses[-1][0] * RATE))
    paused_at, resumed_at = max((g for g in silences if 0 < g[0] - heard_to + RATE // 20 < RATE), key=np.diff)
    # Where in the reply the sink stopped, and where it went on: the 60 ms up to the silence (the fade-out is its
    # second half) and after it (the fade-in), found in the reply (so a stall further off does not count).
    near = int(0.06 * RATE)
    before, fit_before = find(run.said, run.recording[paused_at - near : paused_at])
    went_on, fit_after = find(run.said, run.recording[resumed_at : resumed_at + near])
    stopped = before + near
    end, fit_end = find(run.recording, run.said[-RATE // 5 :])
    played_s = (end + RATE // 5 - start - sum(b - a for a, b in silences)) / RATE
    print(
        f"\npaused {(resumed_at - paused_at) / RATE:.3f} s at {stopped / RATE:.3f} s into the reply, went on from "
        f"{went_on / RATE:.3f} s (fits {fit_before:.2f}, {fit_after:.2f}); {len(silences)} silences in the reply, "
        f"{played_s:.3f} s of it recorded (parec and PulseAudio lose some under a heavy load); {len(run.pauses)} pauses"
    )
    assert fit_before > 0.4 and fit_after > 0.4  # found (a chance fit of white noise is under 0.2)
    assert 0.3 < (resumed_at - paused_at) / RATE < 2.5
    assert -0.035 <= (went_on - stopped) / RATE <= 0.002  # nothing skipped: at most the 30-ms fade played again
    assert fit_end > 0.4 and end > resumed_at  # it played to its end: all of it, the fade twice


async def test_a_headset_wearer_cuts_the_first_reply_off_half_a_second_in(
    virtual_mic, speech, whisper, test_sink, monkeypatch
):
    """Issue 29.3: a microphone that never hears the console (the loop muted). AEC3 alone took 15-30 dB off a person
    over a reply's first seconds, and the listener's echo gate took what it had cut for echo: nothing was heard."""
    run = await speak_over_the_reply(
        speech("stop, turn off the kitchen lights"),
        lambda events: events.of(Interrupted) and events.of(Heard),
        virtual_mic,
        test_sink,
        whisper,
        monkeypatch,
        echo_volume=0.0,
        spoken_at_s=0.5,
    )
    (said,), (interrupted,) = run.events.of(Heard), run.events.of(Interrupted)
    assert run.turn.state is TurnState.CUT and "kitchen" in words(said.text)
    assert said.times.speech_start < interrupted.at < said.times.final_transcript
