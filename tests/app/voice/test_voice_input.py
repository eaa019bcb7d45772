"""VoiceInput's settings and what it says when voice cannot work (no model, no microphone, no server): an event, and
``run`` returns; typing goes on."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.app.voice.conftest import mic_input, play_into, voiced_s, words
from tests.app.voice.test_listen_audio import Heard as Recorder
from voicedesk.app.voice.turns import Mode
from voicedesk.app.voice.voice_input import Heard, Listening, VoiceInput, VoiceProblem, VoiceSettings
from voicedesk.engine.errors import UsageError


def test_settings_round_trip_and_bad_values_are_named_or_reset():
    s = VoiceSettings(enabled=True, mode=Mode.PUSH_TO_TALK, barge_in="keyword", barge_in_keywords=("stop",))
    assert VoiceSettings.from_dict(s.to_dict()) == s
    assert s.to_dict()["mode"] == "push_to_talk" and s.to_dict()["barge_in_keywords"] == ["stop"]
    with pytest.raises(UsageError, match="barge_in = 'loud'") as info:
        VoiceSettings.from_dict({"barge_in": "loud"})
    assert "speech, keyword, off" in (info.value.advice or "")
    with pytest.raises(UsageError, match="Unknown voice input setting 'colour'"):
        VoiceSettings.from_dict({"colour": "red"})
    rejected: list[str] = []
    data = {"end_silence_s": 1e400, "enabled": "yes", "stt": "whisper", "barge_in_keywords": [" Stop ", 3], "x": 1}
    data |= {"wyoming_uri": "homeassistant:10300"}  # no scheme: Wyoming's clients would not take it either
    assert VoiceSettings.from_dict(data, rejected) == VoiceSettings()
    named = ("end_silence_s", "enabled", "barge_in_keywords", "x", "wyoming_uri")
    assert rejected == [f"voice_input.{k}" for k in named]
    assert VoiceSettings.from_dict({"wyoming_uri": "tcp://homeassistant:10300"}).wyoming_uri.endswith(":10300")
    assert VoiceSettings.from_dict({"end_silence_s": 1, "barge_in_keywords": ["Stop "]}) == VoiceSettings(
        end_silence_s=1.0, barge_in_keywords=("stop",)
    )


class Events(list):
    def kinds(self) -> list[type]:
        return [type(e) for e in self]


async def interrupt() -> None:
    raise AssertionError("nothing to interrupt")


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        (VoiceSettings(stt_model="medium.en"), "voicedesk models fetch --stt medium.en"),
        (VoiceSettings(stt="wyoming"), "No Wyoming speech-to-text server is set"),
    ],
)
async def test_no_model_or_no_server_is_an_event_not_an_exception(settings, says):
    events = Events()
    voice = VoiceInput(settings, events.append, interrupt, voice="af_heart")
    await voice.run()
    assert events.kinds() == [VoiceProblem, Listening]
    assert says in events[0].message and not events[1].open and not voice.listening


async def test_no_microphone_by_that_name_says_typing_still_works(whisper):
    events = Events()
    settings = VoiceSettings(input_device="pulse-source:nowhere")
    voice = VoiceInput(settings, events.append, interrupt, "af_heart", whisper)
    await voice.run()
    assert events.kinds() == [VoiceProblem, Listening]
    assert "microphone 'nowhere' is not connected" in events[0].message and voice.level == -120.0
    assert events[0].message.startswith("Voice input is off") and "Typing still works" in events[0].message


@pytest.mark.audio
async def test_spoken_and_pushed_turns_are_heard_with_their_times(virtual_mic, speech, whisper):
    command = speech("turn off the kitchen lights")
    for mode in (Mode.HANDS_FREE, Mode.PUSH_TO_TALK):
        events = Recorder()
        settings = VoiceSettings(input_device=mic_input(virtual_mic), mode=mode)
        voice = VoiceInput(settings, events, interrupt, "af_heart", whisper)
        task = asyncio.create_task(voice.run())
        try:
            await events.until(lambda e=events: e.of(Listening))
            assert voice.listening and events.of(Listening)[0].open
            while voice.listener is None or voice.listener.now < 0.3:  # noqa: ASYNC110 - null-sink rule 1
                await asyncio.sleep(0.05)
            voice.press()  # hands-free: ignored
            await play_into(virtual_mic, command)
            await asyncio.sleep(0.3)
            voice.release()
            await events.until(lambda e=events: e.of(Heard))
            (heard,) = events.of(Heard)
            assert words(heard.text) == "turn off the kitchen lights"
            t = heard.times
            assert t.speech_start < t.speech_end < t.final_transcript <= time.monotonic()
            assert voiced_s(command) - 0.3 < t.speech_end - t.speech_start < voiced_s(command) + 1.5, mode
            assert voice.level < -60  # the sink's silence after the speech
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        assert not voice.listening and events.of(Listening)[-1] == Listening(False, "stopped")
