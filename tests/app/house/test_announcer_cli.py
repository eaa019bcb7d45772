"""``voicedesk announcer``'s options, read into the console's configuration; wrong ones refused with what to write."""

from __future__ import annotations

from datetime import time as dtime

import pytest

from voicedesk.app.console.announcement import Priority
from voicedesk.app.house.cli import build_config
from voicedesk.engine.commands import build_parser
from voicedesk.engine.errors import UsageError


def config_of(*argv: str):
    return build_config(build_parser().parse_args(["announcer", *argv]))


def test_options_become_the_console_configuration(tmp_path, monkeypatch):
    monkeypatch.setenv("VOICEDESK_MQTT_PASSWORD", "pw")
    monkeypatch.setenv("VOICEDESK_ANNOUNCER_TOKEN", "tok")
    config = config_of(
        "--mqtt", "broker.lan:1884", "--mqtt-user", "console", "--name", "Hallway console",
        "--http-port", "8766", "--http-host", "0.0.0.0",
        "--chime", "urgent=none", "--chime", "low=dingdong", "--volume", "low=0.3", "--ttl", "low=60",
        "--quiet-hours", "22:00-07:00", "--quiet-volume", "0.2", "--voice", "am_adam", "--no-audio",
        "--engine", "websocket", "ws://gpu-box:8080",
    )  # fmt: skip
    house = config.house
    mqtt = house.mqtt
    assert (mqtt.host, mqtt.port, mqtt.username, mqtt.password) == ("broker.lan", 1884, "console", "pw")
    assert (mqtt.base, mqtt.node_id, mqtt.name) == ("voicedesk/Hallway_console", "Hallway_console", "Hallway console")
    assert (house.http_host, house.http_port, house.http_token) == ("0.0.0.0", 8766, "tok")
    assert house.chimes.for_announcement(None, Priority.URGENT) is None
    assert house.chimes.defaults[Priority.LOW] == "dingdong"
    assert house.policy.volume[Priority.LOW] == 0.3 and house.policy.ttl_s[Priority.LOW] == 60
    quiet = house.policy.quiet_hours
    assert (quiet.start, quiet.end, quiet.volume) == (dtime(22), dtime(7), 0.2)
    assert config.voice.voice == "am_adam" and not config.audio
    assert (config.engine.kind, config.engine.target) == ("websocket", "ws://gpu-box:8080")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), "has no input"),
        (("--http-port", "1", "--chime", "loud=ding"), "unknown priority 'loud'"),
        (("--http-port", "1", "--chime", "urgent=/nonexistent.wav"), "cannot read the chime"),
        (("--http-port", "1", "--volume", "low=2"), "not a number from 0 to 1"),
        (("--http-port", "1", "--quiet-hours", "late"), "HH:MM-HH:MM"),
        (("--mqtt", "broker:abc"), "the port is not a number"),
    ],
)
def test_wrong_options_say_what_to_write(argv, message):
    with pytest.raises(UsageError, match=message):
        config_of(*argv)


def test_the_lexicon_is_the_windows_file_unless_another_is_given(tmp_path, monkeypatch):
    from voicedesk.app.settings import default_settings_path, lexicon_path

    assert config_of("--http-port", "1").lexicon_file == lexicon_path(default_settings_path())
    mine = tmp_path / "names.json"
    mine.write_text('[{"word": "Siobhan", "phonemes": "ʃɪvˈɔn"}]')
    config = config_of("--http-port", "1", "--lexicon", str(mine))
    assert config.lexicon_file == mine and config.voice.text.lexicon.lookup("siobhan").phonemes == "ʃɪvˈɔn"
    mine.write_text('[{"word": ""}]')
    with pytest.raises(UsageError, match="--lexicon"):  # checked before anything starts
        config_of("--http-port", "1", "--lexicon", str(mine))


def test_listening_beyond_loopback_without_a_token_is_refused_before_anything_starts(monkeypatch):
    monkeypatch.delenv("VOICEDESK_ANNOUNCER_TOKEN", raising=False)
    with pytest.raises(UsageError, match="without a token"):
        config_of("--mqtt", "broker.lan", "--http-port", "8766", "--http-host", "0.0.0.0")
