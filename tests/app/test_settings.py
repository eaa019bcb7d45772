"""Settings: a round trip through the file, and files a person (or a crash) damaged."""

from __future__ import annotations

import json

import pytest

from voicedesk.app.history import load_history
from voicedesk.app.settings import AppSettings, VoiceSettings, load_app_lexicon, load_settings, save_settings


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
                "voice": {"voice": "am_adam", "speed": 9.0, "blend_weight": float("nan"), "max_buffer_delay_ms": -5},
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
    assert loaded.settings.voice.max_buffer_delay_ms == 1000
    assert loaded.settings.composer_mode == "agent"
    for name in ("engine.kind", "engine.failover_to_local", "voice.speed", "voice.blend_weight", "source"):
        assert name in loaded.message
    assert "voice.max_buffer_delay_ms" in loaded.message


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


# ---- hostile files (issue 11): whatever the file holds, the app starts, and nothing is lost ----------------


def _damaged_copies(folder):
    return [p for p in folder.iterdir() if p.name.startswith("settings.damaged-")]


def test_a_400_digit_number_resets_that_value_only_and_keeps_the_file(tmp_path):
    path = tmp_path / "settings.json"
    body = (
        '{"voice": {"speed": '
        + "9" * 400
        + ', "voice": "bf_emma"}, "engine": {"health_interval_s": -'
        + "1" * 400
        + "}}"
    )
    path.write_text(body)
    loaded = load_settings(path)
    assert loaded.settings.voice.speed == 1.0
    assert loaded.settings.voice.voice == "bf_emma"
    assert loaded.settings.engine.health_interval_s == 15.0
    assert "voice.speed" in loaded.message and "engine.health_interval_s" in loaded.message
    (kept,) = _damaged_copies(tmp_path)
    assert kept.read_text() == body and path.read_text() == body  # a copy: the original is still there
    assert kept.name in loaded.message


def test_deeply_nested_json_is_damage_not_a_crash(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text('{"engine": ' + "[" * 100_000 + "]" * 100_000 + "}")
    loaded = load_settings(path)
    assert loaded.settings == AppSettings()
    assert "nested too deeply" in loaded.message
    assert len(_damaged_copies(tmp_path)) == 1 and not path.exists()


def test_huge_numbers_strings_and_files_are_refused(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"source": {"system_prompt": "x" * 20_000}, "voice": {"blend_weight": 1e308 * 10}}))
    loaded = load_settings(path)
    assert loaded.settings.source.system_prompt == AppSettings().source.system_prompt
    assert "source.system_prompt" in loaded.message
    path.write_text('{"a": "' + "y" * (2 << 20) + '"}')
    loaded = load_settings(path)
    assert loaded.settings == AppSettings() and "larger than" in loaded.message
    path.write_text('{"voice": {"speed": 1' + "0" * 5000 + "}}")  # past Python's int-digits limit
    assert load_settings(path).settings == AppSettings()


def test_binary_garbage_and_invalid_utf8_are_damage(tmp_path):
    path = tmp_path / "settings.json"
    path.write_bytes(b"\xff\xfe\x00{garbage")
    loaded = load_settings(path)
    assert loaded.settings == AppSettings() and "damaged" in loaded.message


def test_urls_that_are_not_urls_fall_back(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(
        json.dumps(
            {
                "engine": {"websocket_url": "http://box:8080"},
                "source": {"openai_base_url": "file:///etc/passwd"},
            }
        )
    )
    loaded = load_settings(path)
    assert loaded.settings.engine.websocket_url == AppSettings().engine.websocket_url
    assert loaded.settings.source.openai_base_url == AppSettings().source.openai_base_url
    assert "engine.websocket_url" in loaded.message and "source.openai_base_url" in loaded.message
    for url in ("http://user:secret@box/v1", "http://box:99999/v1", "ftp://box", "http:///v1"):
        path.write_text(json.dumps({"source": {"openai_base_url": url}}))
        assert load_settings(path).settings.source.openai_base_url == AppSettings().source.openai_base_url, url


def test_phrases_are_checked_one_by_one(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(
        json.dumps(
            {
                "phrases": [
                    {"name": "Dinner", "text": "Dinner is ready.", "shortcut": "Ctrl+Alt+1", "voice": "bf_emma"},
                    {"name": "Empty", "text": ""},
                    {"name": "Bad key", "text": "Hi.", "shortcut": "Q"},
                    "not an object",
                    {"name": "Number", "text": 5},
                ]
            }
        )
    )
    loaded = load_settings(path)
    assert [p.name for p in loaded.settings.phrases] == ["Dinner"]
    assert loaded.settings.phrases[0].voice == "bf_emma"
    for number in (2, 3, 4, 5):
        assert f"phrase {number}" in loaded.message
    save_settings(loaded.settings, path)
    assert load_settings(path).settings.phrases == loaded.settings.phrases


@pytest.mark.parametrize(
    ("name", "load"),
    [("settings.json", load_settings), ("history.json", load_history), ("lexicon.json", load_app_lexicon)],
)
def test_two_damaged_files_in_one_second_are_both_kept(tmp_path, name, load):
    """The settings, the history and the pronunciations keep a damaged file aside the same way (app/json_file.py);
    the history and the pronunciations used to put a second one over the first."""
    path = tmp_path / name
    for body in ("{", "[1"):
        path.write_text(body)
        assert "kept as" in load(path).message
    kept = [p for p in tmp_path.iterdir() if p.name.startswith(path.stem + ".damaged-")]
    assert sorted(p.read_text() for p in kept) == ["[1", "{"]
