"""The wake word (pymicro-wakeword's okay_nabu) on espeak-ng speech played into the virtual microphone: the wake word
is heard once, shortly after it was said, and a command that does not contain it is not."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest

from tests.app.voice.conftest import mic_input, play_into
from voicedesk.app.voice.microphone import Microphone
from voicedesk.app.voice.wake_word import WakeWord
from voicedesk.engine.errors import UsageError


async def test_okay_nabu_said_into_the_microphone_is_heard_once_and_a_plain_command_is_not(virtual_mic, speech):
    wake = WakeWord("okay_nabu")
    assert wake.phrase.lower() == "okay nabu"
    blocks: asyncio.Queue = asyncio.Queue()
    loop = asyncio.get_running_loop()
    heard: list[float] = []
    delivering, detected = asyncio.Event(), asyncio.Event()

    async def feed() -> None:
        while True:
            block = await blocks.get()
            delivering.set()
            if wake.feed(block):
                heard.append(time.monotonic())
                detected.set()

    microphone = Microphone(
        mic_input(virtual_mic), lambda block, _t: loop.call_soon_threadsafe(blocks.put_nowait, block)
    )
    microphone.open()
    feeding = asyncio.ensure_future(feed())
    try:
        await asyncio.wait_for(delivering.wait(), 10)  # the source delivers: start speaking
        await play_into(virtual_mic, speech("Turn off the kitchen lights and set the thermostat to twenty one."))
        command_played = time.monotonic()
        await play_into(virtual_mic, speech("Okay Nabu", "-v", "en-us", "-s", "150"))
        wake_played = time.monotonic()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(detected.wait(), 2.0)
        await asyncio.sleep(0.5)  # a second detection of the same utterance would come now
    finally:
        feeding.cancel()
        microphone.close()
    assert len(heard) == 1, heard
    assert command_played < heard[0] < wake_played + 2.0


def test_an_unknown_wake_word_says_which_there_are():
    with pytest.raises(UsageError, match="Unknown wake word 'hey_nabu'") as caught:
        WakeWord("hey_nabu")
    assert "okay_nabu" in (caught.value.advice or "")
