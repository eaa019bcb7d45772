"""The voice catalog, the ``info`` Home Assistant reads, the command's options and the zeroconf plan (pure)."""

from __future__ import annotations

import argparse

import pytest
from wyoming.info import Describe, Info

from voicedesk.endpoint.wyoming.catalog import VoiceCatalog, describe_voice, wyoming_language
from voicedesk.endpoint.wyoming.cli import is_loopback, plan_from_args
from voicedesk.endpoint.wyoming.conversation import PROGRAM_NAME, build_info
from voicedesk.endpoint.wyoming.discovery import SERVICE_TYPE, default_instance_name, plan_advertisement
from voicedesk.engine.commands import build_parser
from voicedesk.engine.errors import VoicedeskError, VoiceError


def test_voices_carry_their_language_and_a_readable_description() -> None:
    assert wyoming_language("af_heart") == "en_US"
    assert wyoming_language("bf_emma:0.5,af_heart:0.5") == "en_GB"  # a blend speaks its first part's language
    assert wyoming_language("jf_alpha") == "ja_JP"
    assert describe_voice("am_adam") == "am_adam (American English, male)"
    assert describe_voice("my_custom") == "my_custom (American English)"


def test_a_blend_default_is_offered_first_as_its_own_voice() -> None:
    catalog = VoiceCatalog.build(["af_heart", "bf_emma"], "af_heart:0.7,bf_emma:0.3")
    assert catalog.names == ("af_heart:0.7,bf_emma:0.3", "af_heart", "bf_emma")
    assert "blend" in catalog.voices[0].description
    assert catalog.resolve() == "af_heart:0.7,bf_emma:0.3"
    assert catalog.resolve(language="en_US") == "af_heart:0.7,bf_emma:0.3"
    assert catalog.resolve(language="en") == "af_heart:0.7,bf_emma:0.3"
    assert catalog.resolve(language="en-gb") == "bf_emma"
    assert catalog.languages == ("en_US", "en_GB")
    with pytest.raises(VoiceError, match="Did you mean 'bf_emma'"):
        catalog.resolve("bf_emmma")


def test_info_survives_the_librarys_own_parser_the_way_home_assistant_reads_it() -> None:
    catalog = VoiceCatalog.build(["af_heart", "am_adam", "bf_emma"], "af_heart")
    event = build_info(catalog, "sagemaker my-endpoint", version="9.9").event()
    assert not Describe.is_type(event.type)
    info = Info.from_event(event)
    # Home Assistant: the first installed TTS program; its installed voices grouped by language.
    program = next(p for p in info.tts if p.installed)
    assert program.name == PROGRAM_NAME and program.version == "9.9"
    assert program.supports_synthesize_streaming is True
    assert "sagemaker my-endpoint" in (program.description or "")
    assert [(v.name, v.languages, v.installed) for v in program.voices] == [
        ("af_heart", ["en_US"], True),
        ("am_adam", ["en_US"], True),
        ("bf_emma", ["en_GB"], True),
    ]
    assert all(v.attribution.url.startswith("https://") for v in program.voices)


def wyoming_args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["wyoming", *argv])


def test_the_command_binds_loopback_on_the_standard_port_and_announces_by_default() -> None:
    plan = plan_from_args(wyoming_args())
    assert (plan.settings.host, plan.settings.port) == ("127.0.0.1", 10200)  # type: ignore[attr-defined]
    assert plan.zeroconf is True and plan.voice == "af_heart" and plan.voices is None
    quiet = plan_from_args(wyoming_args("--no-zeroconf", "--host", "0.0.0.0", "--voice", "af_heart,am_adam"))
    assert quiet.zeroconf is False
    assert quiet.settings.host == "0.0.0.0"  # type: ignore[attr-defined]
    assert quiet.voice == "af_heart:0.5,am_adam:0.5"
    assert wyoming_args("--engine", "sagemaker", "ep").engine == ["sagemaker", "ep"]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--speed", "9"], "--speed"),
        (["--max-chars", "0"], "--max-chars"),
        (["--max-chars", "20001"], "--max-chars"),
        (["--samples-per-chunk", "0"], "--samples-per-chunk"),
        (["--port", "70000"], "--port"),
        (["--voices", " , "], "--voices is empty"),
        (["--voices", "af_heart:0.5,am_adam:0.5"], "not one"),
        (["--voice", "no such voice"], "not a voice name"),
    ],
)
def test_bad_options_are_refused_with_what_to_change(argv: list[str], says: str) -> None:
    with pytest.raises(VoicedeskError, match=says):
        plan_from_args(wyoming_args(*argv))


def test_loopback_detection() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0")


def test_zeroconf_is_announced_where_the_server_listens() -> None:
    local = plan_advertisement("127.0.0.1", 10200, "vd")
    assert (local.address, local.interfaces, local.service_name) == ("127.0.0.1", ("127.0.0.1",), "vd." + SERVICE_TYPE)
    info = local.service_info()
    assert info.type == "_wyoming._tcp.local." and info.port == 10200
    assert info.parsed_addresses() == ["127.0.0.1"]
    lan = plan_advertisement("0.0.0.0", 10300, "vd")
    assert lan.interfaces is None and not lan.address.startswith("0.")
    with pytest.raises(VoicedeskError, match="without dots"):
        plan_advertisement("127.0.0.1", 1, "a.b")
    assert default_instance_name(10200, 10200).startswith("voicedesk-")
    assert default_instance_name(10201, 10200).endswith("-10201")
