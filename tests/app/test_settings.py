"""Settings: a round trip through the file, and files a person (or a crash) damaged."""

from __future__ import annotations

import json

from app.settings import AppSettings, VoiceSettings, load_settings, save_settings


def test_round_trip_keeps_every_field(tmp_path):
    path = tmp_path / "conf" / "settings.json"
    settings = AppSettings()
    settings.engine.kind = "sagemaker"
    settings.engine.sagemaker_endpoint = "kokoro-prod"
    settings.engine.sagemaker_region = "eu-west-1"
    settings.engine.failover_to_local = False
    settings.voice = VoiceSettings(voice="bf_emma", blend_with="am_adam", blend_weight=0.4, speed=1.25)
    settings.source.kind = "openai"
    settings.source.openai_model = "qwen2.5"
    settings.composer_mode = "agent"
    settings.output_device = "pulse"
    save_settings(settings, path)
    loaded = load_settings(path)
    assert loaded.message is None
    assert loaded.settings == settings
    assert list(path.parent.iterdir()) == [path]  # no temp file left behind


def test_missing_file_gives_defaults_quietly(tmp_path):
    loaded = load_settings(tmp_path / "nothing.json")
    assert loaded.settings == AppSettings()
    assert loaded.message is None


def test_damaged_json_gives_defaults_and_keeps_the_bad_file(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text('{"engine": {"kind": "websocket", ')
    loaded = load_settings(path)
    assert loaded.settings == AppSettings()
    assert "damaged" in loaded.message and "defaults" in loaded.message
    kept = [p for p in tmp_path.iterdir() if p.name.startswith("settings.damaged-")]
    assert len(kept) == 1 and kept[0].read_text() == '{"engine": {"kind": "websocket", '
    assert kept[0].name in loaded.message


def test_wrong_values_fall_back_field_by_field(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(
        json.dumps(
            {
                "engine": {"kind": "carrier-pigeon", "websocket_url": "ws://box:8080/x", "failover_to_local": "yes"},
                "voice": {"voice": "am_adam", "speed": 9.0, "blend_weight": float("nan")},
                "source": [],
                "composer_mode": "agent",
                "unknown_key": 1,
            }
        )
    )
    loaded = load_settings(path)
    assert loaded.settings.engine.kind == "local"
    assert loaded.settings.engine.websocket_url == "ws://box:8080/x"
    assert loaded.settings.engine.failover_to_local is True
    assert loaded.settings.voice.voice == "am_adam"
    assert loaded.settings.voice.speed == 1.0
    assert loaded.settings.composer_mode == "agent"
    for name in ("engine.kind", "engine.failover_to_local", "voice.speed", "voice.blend_weight", "source"):
        assert name in loaded.message


def test_a_list_at_the_top_is_damage_not_a_crash(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text("[1, 2]")
    loaded = load_settings(path)
    assert loaded.settings == AppSettings()
    assert "not an object" in loaded.message


def test_voice_spec_blends():
    assert VoiceSettings("af_heart").spec() == "af_heart"
    assert VoiceSettings("af_heart", "am_adam", 0.3).spec() == "af_heart:0.70,am_adam:0.30"
    assert VoiceSettings("af_heart", "am_adam", 0.0).spec() == "af_heart"
    assert VoiceSettings("af_heart", "af_heart", 0.5).spec() == "af_heart"
    assert VoiceSettings("af_heart", "am_adam", 1.0).spec() == "am_adam"
