"""``voicedesk announcer``: the console without a window, for a mini PC by the door or a Raspberry Pi with a speaker.

Takes announcements from MQTT and/or the local HTTP endpoint, says them by priority with chimes at one loudness,
and publishes its state, each outcome and Home Assistant discovery on MQTT. Runs until SIGINT/SIGTERM
(packaging/systemd/voicedesk-announcer.service runs it as a systemd user service). Imports nothing heavy at the
top: ``voicedesk --help`` stays fast.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
from dataclasses import replace
from pathlib import Path

from voicedesk.app.console.announcement import Priority
from voicedesk.app.console.core import QuietHours
from voicedesk.engine.engine_spec import (
    add_engine_options,
    add_lexicon_option,
    add_session_options,
    config_from_args,
    spec_from_args,
)
from voicedesk.engine.errors import UsageError

log = logging.getLogger(__name__)

PASSWORD_ENV = "VOICEDESK_MQTT_PASSWORD"
HTTP_TOKEN_ENV = "VOICEDESK_ANNOUNCER_TOKEN"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "announcer",
        help="the console without a window: announcements from MQTT/HTTP, by priority (Home Assistant)",
        description="Say announcements from the house (MQTT topic <topic>/say, HTTP POST /announce) by priority, "
        "with chimes and one loudness for every voice; publish state, outcomes and Home Assistant discovery on "
        "MQTT. See docs/house.md.",
    )
    add_input_arguments(parser)
    add_listen_arguments(parser)
    sound = parser.add_argument_group("sound")
    sound.add_argument("--output-device", help="audio output device name (default: the system default)")
    sound.add_argument("--no-audio", action="store_true", help="no sound device: synthesize and report only")
    sound.add_argument("--media-role", default="announcement", help="PulseAudio/PipeWire media.role ('none': unset)")
    add_session_options(parser)
    add_lexicon_option(
        parser, "every announcement (default: the window's, Tools ▸ Pronunciations…; read again when it changes)"
    )
    add_engine_options(parser)
    parser.add_argument("--no-failover", action="store_true", help="no local engine when the remote one fails")
    parser.set_defaults(handler=run_announcer)


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """The house's inputs (MQTT, HTTP): ``voicedesk announcer``'s, and the desktop app's (``voicedesk app``)."""
    mqtt = parser.add_argument_group("MQTT")
    mqtt.add_argument("--mqtt", metavar="HOST[:PORT]", help="the MQTT broker (default port 1883)")
    mqtt.add_argument("--mqtt-user", help="broker user name")
    mqtt.add_argument(
        "--mqtt-password-env", default=PASSWORD_ENV, metavar="NAME", help=f"variable with the password ({PASSWORD_ENV})"
    )
    mqtt.add_argument("--mqtt-tls", action="store_true", help="connect with TLS (the system's CA certificates)")
    mqtt.add_argument("--name", default=socket.gethostname(), help="the console's name in Home Assistant")
    mqtt.add_argument("--topic", metavar="BASE", help="topic prefix (default voicedesk/<name>)")
    mqtt.add_argument("--no-discovery", action="store_true", help="do not announce the console to Home Assistant")
    mqtt.add_argument("--discovery-prefix", default="homeassistant", help="Home Assistant's discovery prefix")
    http = parser.add_argument_group("HTTP")
    http.add_argument("--http-port", type=int, help="serve POST /announce on this port (e.g. 8766)")
    http.add_argument("--http-host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    http.add_argument(
        "--http-token-env",
        default=HTTP_TOKEN_ENV,
        metavar="NAME",
        help=f"variable holding the bearer token ({HTTP_TOKEN_ENV}); required off loopback",
    )
    add_rule_arguments(parser)


def add_listen_arguments(parser: argparse.ArgumentParser) -> None:
    ears = parser.add_argument_group("listening (docs/voice.md)")
    ears.add_argument(
        "--listen",
        action="store_true",
        help="open the microphone: push-to-talk from the house (MQTT <topic>/listen, HTTP POST /listen)",
    )
    ears.add_argument(
        "--wake-word", metavar="NAME", help="okay_nabu, hey_jarvis, hey_mycroft or alexa (implies --listen)"
    )
    ears.add_argument("--input-device", help="the microphone (default: the system's)")
    ears.add_argument(
        "--stt-model", default="small.en", help="faster-whisper model (small.en; voicedesk models fetch --stt NAME)"
    )
    ears.add_argument("--stt-device", default="auto", help="cpu, cuda or auto (default)")
    ears.add_argument("--wyoming-stt", metavar="URI", help="a Wyoming ASR server (tcp://HOST:10300) instead")
    ears.add_argument("--stt-timeout", type=float, default=15.0, metavar="S", help="its limit for each step (15)")
    ears.add_argument("--end-silence", type=float, default=0.6, metavar="S", help="silence that ends a turn (0.6)")
    ears.add_argument("--ha-url", help="ask Home Assistant's conversation agent what is heard; say its answer")
    ears.add_argument(
        "--ha-token-env", default="HASS_TOKEN", metavar="NAME", help="variable with its token (HASS_TOKEN)"
    )
    ears.add_argument("--ha-agent", default="", metavar="ID", help="one of its conversation agents (default Assist)")
    ears.add_argument("--language", default="", help="what is spoken (default: the voice's language)")


def listen_from_args(args: argparse.Namespace):
    """The ``ListenConfig`` the options ask for, or None (``UsageError`` saying what to change)."""
    if not (args.listen or args.wake_word):
        return None
    try:
        from voicedesk.app.house.listening import ListenConfig
        from voicedesk.app.voice.turns import Mode
        from voicedesk.app.voice.voice_input import VoiceSettings
        from voicedesk.app.voice.wake_word import WAKE_WORDS
    except ImportError as exc:
        raise UsageError(f"Listening needs the voice packages ({exc}).", 'pip install "voicedesk[voice]"') from None
    if args.wake_word and args.wake_word not in WAKE_WORDS:
        raise UsageError(f"--wake-word {args.wake_word}: no such model.", f"Use one of {', '.join(WAKE_WORDS)}.")
    if not args.ha_url and not args.mqtt:
        raise UsageError("What is heard would go nowhere.", "Give --ha-url (Home Assistant answers) or --mqtt.")
    agent = None
    if args.ha_url:
        from voicedesk.app.sources.home_assistant import HomeAssistantSource, assist_language
        from voicedesk.app.urls import AGENT_SCHEMES, check_url

        url = check_url(args.ha_url, AGENT_SCHEMES, "--ha-url", "http://homeassistant.local:8123")
        token = os.environ.get(args.ha_token_env)
        if not token:
            raise UsageError(f"--ha-url needs a token in ${args.ha_token_env}.", "Set it to a long-lived access token.")
        language = args.language or assist_language(args.voice)
        agent = HomeAssistantSource(url, token, language, args.ha_agent)
    values = {"input_device": args.input_device or "", "end_silence_s": args.end_silence, "stt_device": args.stt_device}
    if args.wyoming_stt:
        values |= {"stt": "wyoming", "wyoming_uri": args.wyoming_stt, "stt_timeout_s": args.stt_timeout}
    values |= {"stt_model": args.stt_model} if args.stt_model else {}
    settings = VoiceSettings.from_dict({**values, "language": args.language or None})  # UsageError: what to fix
    settings = replace(settings, enabled=True, mode=Mode.PUSH_TO_TALK)
    return ListenConfig(settings, agent, args.wake_word)


def add_rule_arguments(parser: argparse.ArgumentParser) -> None:
    """The house's rules, the same for the announcer and the window: chimes, volumes, loudness, TTL, merging,
    quiet hours."""
    sound = parser.add_argument_group("house rules: sound")
    sound.add_argument(
        "--chime",
        action="append",
        default=[],
        metavar="PRIORITY=CHIME",
        help="chime per priority: a built-in (ding, dingdong, alert), none, or a WAV file path",
    )
    sound.add_argument("--volume", action="append", default=[], metavar="PRIORITY=LEVEL", help="0 to 1 per priority")
    sound.add_argument("--no-loudness", action="store_true", help="play voices at their own loudness")
    queue = parser.add_argument_group("house rules: queue")
    queue.add_argument("--ttl", action="append", default=[], metavar="PRIORITY=SECONDS", help="default TTL")
    queue.add_argument("--merge-window", type=float, default=30.0, metavar="S", help="merge identical ones (30 s)")
    queue.add_argument("--quiet-hours", metavar="HH:MM-HH:MM", help="hold back all but urgent, lower the volume")
    queue.add_argument("--quiet-volume", type=float, default=0.4, help="volume factor in quiet hours (0.4)")


def _per_priority(values: list[str], what: str) -> dict[Priority, str]:
    out = {}
    for value in values:
        name, sep, setting = value.partition("=")
        try:
            priority = Priority.parse(name)
        except ValueError as exc:
            raise UsageError(f"--{what} {value}: {exc}.", f"Write --{what} urgent=VALUE.") from None
        if not sep or not setting:
            raise UsageError(f"--{what} {value} has no value.", f"Write --{what} {priority.label}=VALUE.")
        out[priority] = setting
    return out


def _number(value: str, option: str, low: float, high: float) -> float:
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not low <= number <= high:
        raise UsageError(f"--{option} {value!r} is not a number from {low:g} to {high:g}.", f"Fix --{option}.")
    return number


def mqtt_from_args(args: argparse.Namespace):
    from voicedesk.app.house.discovery import node_id_of
    from voicedesk.app.house.mqtt import MqttSettings

    if not args.mqtt:
        return None
    host, _, port = args.mqtt.rpartition(":") if ":" in args.mqtt else (args.mqtt, "", "1883")
    if not port.isdigit():
        raise UsageError(f"--mqtt {args.mqtt}: the port is not a number.", "Write --mqtt HOST or HOST:PORT.")
    node_id = node_id_of(args.name)
    return MqttSettings(
        host=host,
        port=int(port),
        username=args.mqtt_user,
        password=os.environ.get(args.mqtt_password_env) or None,
        base=args.topic or f"voicedesk/{node_id}",
        node_id=node_id,
        name=args.name,
        discovery=not args.no_discovery,
        discovery_prefix=args.discovery_prefix,
        tls=args.mqtt_tls,
    )


def house_inputs_from_args(args: argparse.Namespace, required: bool = False):
    """The house's inputs and rules the options ask for, checked before anything starts (None: no input, which
    only the window allows); raises ``UsageError`` saying what to change."""
    from voicedesk.app.house.http import check_bind
    from voicedesk.app.house.inputs import HouseInputs

    if not getattr(args, "mqtt", None) and getattr(args, "http_port", None) is None:
        if required:
            raise UsageError("The announcer has no input.", "Give --mqtt HOST and/or --http-port PORT.")
        return None
    token = os.environ.get(args.http_token_env) or None
    if args.http_port is not None:
        check_bind(args.http_host, token)
    policy, chimes = rules_from_args(args)
    return HouseInputs(
        mqtt_from_args(args), args.http_host, args.http_port, token, policy, chimes, not args.no_loudness
    )


def rules_from_args(args: argparse.Namespace):
    """The ``Policy`` and ``Chimes`` the options ask for (``UsageError`` saying what to change)."""
    from voicedesk.app.console.core import Policy
    from voicedesk.app.house.chimes import BUILT_IN, DEFAULT_CHIMES, NONE, ChimeError, Chimes

    defaults, files = dict(DEFAULT_CHIMES), {}
    for priority, chime in _per_priority(args.chime, "chime").items():
        if chime in BUILT_IN or chime == NONE:
            defaults[priority] = chime
        else:
            files[f"{priority.label}-wav"] = Path(chime).expanduser()
            defaults[priority] = f"{priority.label}-wav"
    try:
        chimes = Chimes(files, defaults)
    except ChimeError as exc:
        raise UsageError(str(exc), "Give a built-in chime (ding, dingdong, alert), none, or a PCM WAV file.") from None
    policy = Policy()
    for priority, level in _per_priority(args.volume, "volume").items():
        policy.volume[priority] = _number(level, "volume", 0.0, 1.0)
    for priority, seconds in _per_priority(args.ttl, "ttl").items():
        policy.ttl_s[priority] = _number(seconds, "ttl", 1.0, 86_400.0)
    quiet = None
    if args.quiet_hours:
        try:
            quiet = QuietHours.parse(args.quiet_hours, _number(str(args.quiet_volume), "quiet-volume", 0.0, 1.0))
        except ValueError as exc:
            raise UsageError(f"--quiet-hours: {exc}.", "Write e.g. --quiet-hours 22:00-07:00.") from None
    return Policy(policy.ttl_s, args.merge_window, policy.volume, quiet), chimes


def build_config(args: argparse.Namespace):
    from voicedesk.app.house.announcer import AnnouncerConfig
    from voicedesk.app.settings import default_settings_path, lexicon_path

    voice = config_from_args(args)  # a --lexicon file is checked here, before anything starts
    return AnnouncerConfig(
        house=house_inputs_from_args(args, required=True),
        engine=spec_from_args(args),
        voice=voice,
        lexicon_file=Path(args.lexicon) if args.lexicon else lexicon_path(default_settings_path()),
        audio=not args.no_audio,
        output_device=args.output_device,
        media_role=None if args.media_role == "none" else args.media_role,
        failover=not args.no_failover,
        listen=listen_from_args(args),
    )


def run_announcer(args: argparse.Namespace) -> int:
    config = build_config(args)
    if args.verbose == 0:
        logging.getLogger("voicedesk").setLevel(logging.INFO)  # a service's log says what it did
    return asyncio.run(_serve(config))


async def _serve(config) -> int:
    from voicedesk.app.house.announcer import Announcer

    console = Announcer(config)
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, done.set)
    await console.start()
    log.warning("voicedesk announcer is running (%s)", _inputs(config))
    try:
        await done.wait()
    finally:
        await console.aclose()
    return 0


def _inputs(config) -> str:
    house, parts = config.house, []
    if house.mqtt is not None:
        parts.append(f"MQTT {house.mqtt.host}:{house.mqtt.port} topic {house.mqtt.base}/say")
    if house.http_port is not None:
        parts.append(f"HTTP {house.http_host}:{house.http_port}/announce")
    return ", ".join(parts)
