"""The real window driven through pytest-qt: typing, speaking, switching engines, settings across restarts,
a damaged settings file, a missing model. The local engine is the real Kokoro code with random weights.

Audio goes wherever PortAudio sends it (the private null sink under tests/run.sh); with no audio device at all
the window says so and still speaks into the void, which these tests accept: what they check does not depend
on hearing it (test_app_audio.py checks the audio itself).
"""

from __future__ import annotations

import csv
import functools
import json

from PySide6.QtCore import Qt

from tests.app.helpers import until
from voicedesk.app.conversation import TurnState
from voicedesk.app.engines import EngineState
from voicedesk.app.settings import load_settings
from voicedesk.engine.measure.timeline import CSV_COLUMNS


def test_typed_text_is_spoken_shown_and_measured(make_window, qtbot, qloop, tmp_path):
    window = make_window()
    assert window.sidebar.engine.status.title.text() == "Ready"
    assert "Kokoro-82M on CPU" in window.sidebar.engine.status.detail.text()
    qtbot.keyClicks(window.composer.editor, "Good morning, Ada. Coffee is ready.")
    qtbot.mouseClick(window.composer.speak, Qt.MouseButton.LeftButton)

    async def scenario():
        await until(lambda: window.controller.turns and not window.controller.turns[-1].active)

    qloop.run_until_complete(scenario())
    turn = window.controller.turns[-1]
    assert turn.state is TurnState.DONE
    view = window.conversation.views[turn.id]
    shown = view.text.text()
    assert "Good morning, Ada." in shown and "Coffee is ready." in shown
    assert not window.composer.stop.isEnabled()
    timeline = window.latency.timeline
    assert [s.text for s in timeline.sentences] == [s.text for s in turn.sentences]
    assert "First audible" in window.latency.metrics["first_audio"].text()
    assert window.latency.export.isEnabled()

    window.files.export_timeline("json", tmp_path / "latency.json")
    exported = json.loads((tmp_path / "latency.json").read_text())
    assert exported["schema"] == "voicedesk.timeline/1"
    assert len(exported["sentences"]) == len(turn.sentences)
    window.files.export_timeline("csv", tmp_path / "latency.csv")
    with (tmp_path / "latency.csv").open() as rows:
        reader = csv.DictReader(rows)
        assert tuple(reader.fieldnames) == CSV_COLUMNS
        assert len(list(reader)) == len(turn.sentences)
    window.files.save_wav(tmp_path / "reply.wav")
    assert (tmp_path / "reply.wav").read_bytes()[:4] == b"RIFF"


def test_switching_engines_shows_each_ones_live_status(make_window, qtbot, qloop):
    window = make_window()
    engine = window.sidebar.engine
    qtbot.mouseClick(engine.switch.buttons["websocket"], Qt.MouseButton.LeftButton)
    engine.ws_url.clear()
    qtbot.keyClicks(engine.ws_url, "ws://127.0.0.1:9")
    qtbot.mouseClick(engine.ws_connect, Qt.MouseButton.LeftButton)

    async def scenario():
        await until(lambda: window.hub.status.kind == "websocket" and window.hub.status.state is EngineState.ERROR)
        assert engine.message.isVisible() and "127.0.0.1:9" in engine.message.text()
        assert window.header_status.title.text() == "Not connected"

        qtbot.mouseClick(engine.switch.buttons["sagemaker"], Qt.MouseButton.LeftButton)
        await until(lambda: window.hub.status.kind == "sagemaker" and window.hub.status.state is EngineState.ERROR)
        assert "endpoint name" in engine.message.text()  # nothing filled in: says what to fill in

        qtbot.mouseClick(engine.switch.buttons["local"], Qt.MouseButton.LeftButton)
        await until(lambda: window.hub.status.kind == "local" and window.hub.status.state is EngineState.READY)
        assert not engine.message.isVisible()
        assert engine.pages.currentIndex() == 0

    qloop.run_until_complete(scenario())


def test_settings_survive_a_restart(make_window, qtbot, qloop, tmp_path):
    path = tmp_path / "conf" / "settings.json"
    first = make_window(path, start=False)
    sidebar = first.sidebar
    qtbot.mouseClick(sidebar.engine.switch.buttons["websocket"], Qt.MouseButton.LeftButton)
    sidebar.engine.ws_url.clear()
    qtbot.keyClicks(sidebar.engine.ws_url, "ws://lab-box:8080")
    sidebar.voice.voice.setCurrentIndex(sidebar.voice.voice.findData("bf_emma"))
    sidebar.voice.blend.setCurrentIndex(sidebar.voice.blend.findData("am_adam"))
    sidebar.voice.blend_weight.setValue(40)
    sidebar.voice.speed.setValue(125)
    sidebar.agent.source.setCurrentIndex(sidebar.agent.source.findData("openai"))
    sidebar.agent.model.clear()
    qtbot.keyClicks(sidebar.agent.model, "qwen2.5")
    qtbot.mouseClick(first.composer.mode.buttons["agent"], Qt.MouseButton.LeftButton)
    qloop.run_until_complete(first.shutdown())
    first.close()

    stored = load_settings(path)
    assert stored.message is None
    # Kept in the one form every part uses (the path the endpoint serves added).
    assert stored.settings.engine.websocket_url == "ws://lab-box:8080/invocations-bidirectional-stream"
    assert stored.settings.voice.spec() == "bf_emma:0.60,am_adam:0.40"

    second = make_window(path, start=False)
    assert second.sidebar.engine.switch.value() == "websocket"
    assert second.sidebar.engine.ws_url.text() == "ws://lab-box:8080/invocations-bidirectional-stream"
    assert second.sidebar.voice.voice.currentData() == "bf_emma"
    assert second.sidebar.voice.blend.currentData() == "am_adam"
    assert second.sidebar.voice.speed_label.text() == "1.25×"
    assert second.sidebar.agent.source.currentData() == "openai"
    assert second.sidebar.agent.model.text() == "qwen2.5"
    assert second.composer.mode.value() == "agent"
    assert second.controller.voice.voice == "bf_emma:0.60,am_adam:0.40"
    assert not any("settings" in text for text in second.banners.visible_texts())


def test_a_damaged_settings_file_opens_with_defaults_and_says_so(make_window, qloop, tmp_path):
    path = tmp_path / "settings.json"
    path.write_text('{"engine": {"kind": "sagemaker", "sagemaker_endpoint": ')  # cut off mid-write
    window = make_window(path)
    (shown,) = [text for text in window.banners.visible_texts() if "damaged" in text]
    assert "defaults" in shown
    assert window.sidebar.engine.switch.value() == "local"
    assert window.hub.status.state is EngineState.READY  # still usable
    assert any(p.name.startswith("settings.damaged-") for p in tmp_path.iterdir())


def test_a_missing_model_is_explained_and_the_download_is_offered(make_window, qtbot, qloop, tmp_path):
    from voicedesk.engine.model import weights
    from voicedesk.engine.model.kokoro_synth import KokoroSynthesizer

    empty = tmp_path / "hf-cache"
    empty.mkdir()

    async def opener(spec):
        return KokoroSynthesizer.load(spec.device, cache_dir=empty)  # the real loader on an empty cache

    window = make_window(engine_opener=opener, model_fetcher=functools.partial(weights.fetch, cache_dir=empty))
    engine = window.sidebar.engine
    assert window.hub.status.state is EngineState.MISSING
    assert engine.status.title.text() == "Model not downloaded"
    assert "voicedesk models fetch" in engine.message.text() or "models import" in engine.message.text()
    assert engine.download.isVisible()

    qtbot.mouseClick(engine.download, Qt.MouseButton.LeftButton)  # the suite runs offline (HF_HUB_OFFLINE=1)

    async def scenario():
        await until(lambda: window.hub.status.state is EngineState.MISSING and "OFFLINE" in engine.message.text())

    qloop.run_until_complete(scenario())
    assert engine.download.isVisible()

    qtbot.keyClicks(window.composer.editor, "Hello.")
    qtbot.mouseClick(window.composer.speak, Qt.MouseButton.LeftButton)

    async def speak_refused():
        await until(lambda: "models" in window.status.text)

    qloop.run_until_complete(speak_refused())
    assert not window.controller.turns


def test_voice_preview_speaks_the_chosen_blend(make_window, qtbot, qloop):
    window = make_window()
    voice = window.sidebar.voice
    voice.blend.setCurrentIndex(voice.blend.findData("am_adam"))
    voice.blend_weight.setValue(30)
    assert window.controller.voice.voice == "af_heart:0.70,am_adam:0.30"
    qtbot.mouseClick(voice.preview, Qt.MouseButton.LeftButton)

    async def scenario():
        await until(lambda: window.controller.turns and not window.controller.turns[-1].active)

    qloop.run_until_complete(scenario())
    turn = window.controller.turns[-1]
    assert turn.kind.value == "preview" and turn.state is TurnState.DONE
    assert turn.prompt == "Heart blended with Adam"
    assert "Voice preview" in window.conversation.views[turn.id].meta.text()
    assert turn.sentences and all(s.error is None for s in turn.sentences)  # the engine accepted the blend
