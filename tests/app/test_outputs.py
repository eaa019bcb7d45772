"""Output devices by the names PulseAudio gives them, and a choice that really routes the sound there: a second
null sink is loaded into the private PulseAudio, picked by name in the window, and its monitor hears the reply
while the default sink stays silent. The list comes from libpulse (pulsectl), not from PortAudio's "pulse"."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from PySide6.QtCore import Qt

from tests.app.helpers import until
from tests.support.audio_capture import SinkCapture, require_null_sink
from voicedesk.app.outputs import PULSE_PREFIX, list_outputs, pulse_sinks

pytestmark = pytest.mark.audio

SECOND = "voicedesk_second"


@pytest.fixture
def second_sink():
    require_null_sink()
    loaded = subprocess.run(
        [
            "pactl",
            "load-module",
            "module-null-sink",
            f"sink_name={SECOND}",
            "rate=24000",
            "channels=1",
            "format=float32le",
            "sink_properties=device.description=Kitchen_speaker",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    module = loaded.stdout.strip()
    yield SECOND
    subprocess.run(["pactl", "unload-module", module], check=False)


def test_sinks_are_listed_by_their_names(second_sink):
    sinks = dict(pulse_sinks())
    assert sinks[second_sink] == "Kitchen_speaker"
    choices = list_outputs(["pulse", "default", "hw:9,0"])
    keys = [c.key for c in choices]
    assert f"{PULSE_PREFIX}{second_sink}" in keys and "hw:9,0" in keys
    assert "pulse" not in keys and "default" not in keys  # PortAudio's aliases add nothing beside real names


def test_a_reply_plays_on_the_sink_chosen_by_name(second_sink, make_window, qtbot, qloop):
    default = require_null_sink()
    with SinkCapture(second_sink) as kitchen, SinkCapture(default) as elsewhere:
        window = make_window()
        picker = window.sidebar.output.device
        index = picker.findData(f"{PULSE_PREFIX}{second_sink}")
        assert index >= 0 and picker.itemText(index) == "Kitchen_speaker"
        picker.setCurrentIndex(index)
        qloop.run_until_complete(
            until(lambda: window.controller.player is not None and window.controller.player.device != "")
        )
        assert window.controller.player.device == f"{PULSE_PREFIX}{second_sink}"
        qtbot.keyClicks(window.composer.editor, "In the kitchen.")
        qtbot.mouseClick(window.composer.speak, Qt.MouseButton.LeftButton)
        qloop.run_until_complete(until(lambda: window.controller.turns and not window.controller.turns[-1].active))
        qloop.run_until_complete(until(lambda: True))
        latency = window.controller.player.output_latency_s
        qloop.run_until_complete(_sleep(latency + 0.3))
        window.save_settings()
        qloop.run_until_complete(window.shutdown())
        heard_there = kitchen.stop()
        heard_here = elsewhere.stop()
    assert np.abs(heard_there).max() > 0.01  # the reply reached the kitchen…
    assert np.abs(heard_here).max() == 0.0  # …and nothing else
    assert window.settings.output_device == f"{PULSE_PREFIX}{second_sink}"


async def _sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)
