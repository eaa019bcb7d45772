"""Queued announcements follow each other after the pause their punctuation asks for, not after the model's time:
the next one is synthesized while the current one plays (the real random-weight Kokoro on the CPU, whose first
sentence takes long; the gap is measured in what the PulseAudio null sink recorded). The first announcement is
three times the second's length, so the model has its playing time to prepare the second even on a busy machine
(a model slower than real time on an overloaded CPU leaves no such time; nothing can hide that)."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest

from tests.app.house.helpers import outcomes, running_console, synthesize, until
from tests.app.house.test_announcer_audio import locate_fft
from tests.support.audio_capture import SinkCapture, require_null_sink
from voicedesk.app.console.announcement import Priority, Request, Source
from voicedesk.engine.audio import pcm16_to_float
from voicedesk.engine.events import SAMPLE_RATE
from voicedesk.engine.local import LocalEngine

FIRST = "The washer is done. The dryer is done too. Please empty both of them."
SECOND = "The front door is open."


def gap_s(recorded: np.ndarray, first: np.ndarray, second: np.ndarray) -> float:
    """Seconds of silence in the recording between the end of ``first`` (its trailing pause included) and the start
    of ``second``: what neither announcement's own audio accounts for. Each is found by cross-correlating a stretch
    of its sound (random-weight speech is noise: it aligns exactly; a pause is zeros, which align anywhere), so a
    stall inside ``first`` on a busy machine is not taken for the gap."""
    loud_first = np.flatnonzero(np.abs(first) > 1e-4)
    loud_second = np.flatnonzero(np.abs(second) > 1e-4)
    tail_end = loud_first[-1] + 1
    tail = first[max(tail_end - 4096, 0) : tail_end]
    first_end = locate_fft(recorded, tail) + len(tail) + (len(first) - tail_end)
    head_start = loud_second[0]
    second_start = locate_fft(recorded, second[head_start : head_start + 4096]) - head_start
    return (second_start - first_end) / SAMPLE_RATE


def real_kokoro(synthesizer):
    async def opener(spec):
        return LocalEngine(synthesizer)

    return opener


@pytest.mark.slow  # the real Kokoro says two announcements
async def test_the_next_queued_announcement_follows_after_its_pause_not_the_models_time(synthesizer):
    sink = require_null_sink()
    with SinkCapture(sink) as capture:
        async with running_console(None, audio=True, opener=real_kokoro(synthesizer)) as house:
            await house.hub.engine()  # the model is loaded before anything is said
            said: list[np.ndarray] = []  # each announcement's audio as it was handed to the player
            house.listener.turn_ended = lambda turn: said.append(
                pcm16_to_float(b"".join(house.controller.last_run.pcm))
            )
            for text, item_id in ((FIRST, "first"), (SECOND, "second")):
                house.runner.submit(Request(text, Priority.NORMAL, chime="none", id=item_id, source=Source.HTTP))
            await until(lambda: len(outcomes(house)) == 2, within_s=120)
            await asyncio.sleep(0.3)  # the last block leaves the device before parec stops
        recorded = capture.stop()
    assert [(r.id, r.outcome.value) for r in outcomes(house)] == [("first", "spoken"), ("second", "spoken")]

    # What the second one costs the model when nothing prepared it: its whole synthesis, timed the same way.
    engine = LocalEngine(synthesizer)
    try:
        started = time.perf_counter()
        alone = await synthesize(engine, "af_heart", SECOND)
        synthesis_s = time.perf_counter() - started
    finally:
        await engine.aclose()
    gap = gap_s(recorded, said[0], said[1])
    print(f"gap between the two {gap:.2f} s; the second one's synthesis {synthesis_s:.2f} s ({len(alone)} samples)")
    assert synthesis_s > 0.5  # random weights on a CPU: long enough that waiting for it is heard
    assert -0.02 <= gap < 0.5 * synthesis_s, (gap, synthesis_s)


async def test_a_prepared_announcement_that_expires_is_not_said_and_an_urgent_one_still_cuts_in():
    require_null_sink()
    async with running_console(None, realtime_factor=20.0, audio=True) as house:
        runner = house.runner
        runner.submit(Request("One two three four five six seven.", id="long", source=Source.HTTP))
        runner.submit(Request("Gone soon.", ttl_s=1.0, id="short-lived", source=Source.HTTP))
        await until(lambda: len(outcomes(house)) == 2)
        # Prepared while "long" played, it expired meanwhile: reported when its TTL passed, never played.
        assert [(r.id, r.outcome.value) for r in outcomes(house)] == [("short-lived", "expired"), ("long", "spoken")]
        assert [turn.text for turn in house.controller.turns] == ["One two three four five six seven."]

        runner.submit(Request("Alpha one two three. Bravo one two three.", id="first", source=Source.HTTP))
        runner.submit(Request("Charlie.", id="next", source=Source.HTTP))
        await until(lambda: house.controller.run is not None and house.controller.player.position_s > 0.3)
        runner.submit(Request("Fire!", Priority.URGENT, id="urgent", source=Source.MQTT))
        await until(lambda: len(outcomes(house)) == 5)
    said = [(turn.text.strip(), turn.state.value) for turn in list(house.controller.turns)[1:]]
    assert [r.id for r in outcomes(house)[2:]] == ["urgent", "first", "next"]
    # "Charlie." was prepared while "first" played; the urgent one cut in first, "first" resumed from Bravo, and
    # only then "Charlie." (prepared again: the one made earlier was discarded unheard).
    assert [text for text, _state in said] == [
        "Alpha one two three. Bravo one two three.",
        "Fire!",
        "Bravo one two three.",
        "Charlie.",
    ], said
    assert said[0][1] == "cut"
