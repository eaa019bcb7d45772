"""``voicedesk wyoming``: serve speech to Home Assistant over Wyoming through any engine (local, a ``serve`` box,
SageMaker), so a house can speak without a GPU at home. wyoming, zeroconf and torch load only when the server starts."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from dataclasses import dataclass

from voicedesk.endpoint.hosting import is_loopback
from voicedesk.engine.engine_spec import (
    add_engine_options,
    add_lexicon_option,
    add_session_options,
    config_from_args,
    lexicon_from_args,
    spec_from_args,
)
from voicedesk.engine.errors import ConnectionFailed, ErrorCode, UsageError, VoicedeskError

DEFAULT_PORT = 10200  # endpoint.wyoming.server.DEFAULT_PORT, repeated to keep --help from importing wyoming

log = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "wyoming",
        help="serve speech to Home Assistant over the Wyoming protocol (streaming TTS, any engine)",
        description="A Wyoming text-to-speech server (Home Assistant's Assist pipeline, Voice PE satellites, LLM "
        "conversation agents) in front of any engine. Supports streaming text in (synthesize-start/chunk/stop). "
        "Binds 127.0.0.1 unless --host says otherwise; Wyoming has no authentication, so only listen on a "
        "network you trust (--host 0.0.0.0 for the LAN).",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; LAN: 0.0.0.0)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT})")
    add_engine_options(parser)
    add_session_options(parser)
    add_lexicon_option(parser, "every request (it travels to a remote engine with each session)")
    parser.add_argument(
        "--voices",
        help="comma-separated voices to offer (default: every voice the engine can speak with)",
    )
    parser.add_argument(
        "--no-zeroconf",
        dest="zeroconf",
        action="store_false",
        help="do not announce the server over zeroconf/mDNS (_wyoming._tcp) for Home Assistant to discover",
    )
    parser.add_argument(
        "--zeroconf-name", help="zeroconf instance name (default voicedesk-HOSTNAME, plus -PORT off port 10200)"
    )
    parser.add_argument(
        "--samples-per-chunk", type=int, default=1024, help="audio samples per audio-chunk event (default 1024)"
    )
    parser.add_argument(
        "--max-chars", type=int, default=20_000, help="longest text of one request, in characters (default 20000)"
    )
    parser.add_argument(
        "--max-connections-per-client",
        type=int,
        default=8,
        metavar="N",
        help="connections one address may hold (default 8; 0: no cap, e.g. behind a proxy)",
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="close a connection that sends nothing for this long (default 300)",
    )
    parser.set_defaults(handler=run_wyoming)


@dataclass(frozen=True, slots=True)
class ServicePlan:
    settings: object  # endpoint.wyoming.server.WyomingSettings
    voice: str
    voices: tuple[str, ...] | None
    zeroconf: bool
    zeroconf_name: str | None


def plan_from_args(args: argparse.Namespace) -> ServicePlan:
    from voicedesk.endpoint.wyoming.guarded_read import ReadLimits
    from voicedesk.endpoint.wyoming.server import WyomingSettings
    from voicedesk.engine import request_fields
    from voicedesk.engine.model.voices import format_voice_spec, parse_voice_spec
    from voicedesk.engine.session import SessionLimits

    def bad(message: str) -> VoicedeskError:
        return UsageError(message)

    if not 0 <= args.port <= 65535:
        raise bad(f"--port {args.port} is not a TCP port (0 to 65535).")
    try:
        speed = request_fields.speed(args.speed)
    except request_fields.FieldError as exc:
        raise bad(f"--speed: {exc.message}") from None
    if not 1 <= args.samples_per_chunk <= 24_000:
        raise bad("--samples-per-chunk must be from 1 to 24000 (one second).")
    limit = SessionLimits().max_message_chars
    if not 1 <= args.max_chars <= limit:
        raise bad(f"--max-chars must be from 1 to {limit:,} (the most one session message may carry).")
    voice = format_voice_spec(parse_voice_spec(args.voice))
    voices = None
    if args.voices is not None:
        voices = tuple(v.strip() for v in args.voices.split(",") if v.strip())
        if not voices:
            raise bad("--voices is empty; name at least one voice, e.g. --voices af_heart,am_adam.")
        for name in voices:
            if format_voice_spec(parse_voice_spec(name)) != name:
                raise bad(
                    f"--voices lists voice names separated by commas; {name!r} is not one (a weight belongs to a "
                    "blend, which is set with --voice)."
                )
    if args.max_connections_per_client < 0 or not args.idle_timeout > 0:
        raise bad("--max-connections-per-client must be 0 or more, --idle-timeout more than 0.")
    settings = WyomingSettings(
        host=args.host,
        port=args.port,
        speed=speed,
        max_buffer_delay_ms=config_from_args(args).max_buffer_delay_ms,
        samples_per_chunk=args.samples_per_chunk,
        max_chars=args.max_chars,
        read_limits=ReadLimits(idle_timeout_s=args.idle_timeout),
        max_connections_per_client=args.max_connections_per_client or None,
        lexicon=lexicon_from_args(args),
    )
    return ServicePlan(settings, voice, voices, args.zeroconf, args.zeroconf_name)


def run_wyoming(args: argparse.Namespace) -> int:
    plan = plan_from_args(args)
    spec = spec_from_args(args)
    return asyncio.run(serve(plan, spec))


def _say(message: str) -> None:
    print(f"voicedesk wyoming: {message}", file=sys.stderr, flush=True)


@dataclass(slots=True)
class RunningService:
    """A started ``voicedesk wyoming``: the engine, the listening server and its zeroconf announcement."""

    engine: object  # engine.api.Engine
    server: object  # endpoint.wyoming.server.WyomingTtsServer
    advertiser: object | None  # endpoint.wyoming.discovery.ZeroconfAdvertiser

    async def aclose(self) -> None:
        if self.advertiser is not None:
            with contextlib.suppress(Exception):
                await self.advertiser.stop()  # type: ignore[attr-defined]
        await self.server.stop()  # type: ignore[attr-defined]
        await self.engine.aclose()  # type: ignore[attr-defined]


async def start_service(plan: ServicePlan, spec) -> RunningService:  # type: ignore[no-untyped-def]
    """Opens the engine, finds its voices, listens, and announces the server unless told not to."""
    from voicedesk.endpoint.wyoming.catalog import VoiceCatalog, probe_voices
    from voicedesk.endpoint.wyoming.conversation import build_info
    from voicedesk.endpoint.wyoming.discovery import ZeroconfAdvertiser, default_instance_name, plan_advertisement
    from voicedesk.endpoint.wyoming.server import DEFAULT_PORT as SERVER_PORT
    from voicedesk.endpoint.wyoming.server import WyomingSettings, WyomingTtsServer
    from voicedesk.engine.factory import open_engine
    from voicedesk.engine.model.voices import KNOWN_VOICES

    settings: WyomingSettings = plan.settings  # type: ignore[assignment]
    if not is_loopback(settings.host):
        _say(
            f"listening on {settings.host}: Wyoming has no authentication, so anyone who can reach port "
            f"{settings.port} can make this server speak (and use its engine, e.g. a SageMaker endpoint you pay "
            "for). Keep it on a network you trust."
        )
    _say(f"opening the {spec.describe()} engine…")
    engine = await open_engine(spec)
    try:
        if plan.voices is not None:
            candidates = list(plan.voices)
        else:
            listed = await engine.voices()
            candidates = list(KNOWN_VOICES) if listed is None else [v.name for v in listed if v.downloaded]
        usable = await probe_voices(engine, plan.voice, candidates, speed=settings.speed)
        missing = [name for name in candidates if name not in usable]
        if plan.voices is not None and missing:
            raise VoicedeskError(
                ErrorCode.UNKNOWN_VOICE,
                f"The {spec.describe()} engine cannot speak with {', '.join(missing)} (asked for by --voices); "
                "`voicedesk models status` lists the voices on this machine.",
            )
        catalog = VoiceCatalog.build(usable, plan.voice)
        server = WyomingTtsServer(engine, catalog, build_info(catalog, spec.describe()), settings)
        try:
            await server.start()
        except OSError as exc:
            raise ConnectionFailed(
                f"Cannot listen on {settings.host}:{settings.port} ({exc.strerror or exc}); "
                "is another server using that port? Pick another with --port.",
            ) from None
    except BaseException:
        await engine.aclose()
        raise
    _say(
        f"listening on tcp://{settings.host}:{settings.port} with {len(catalog.voices)} voices "
        f"({', '.join(catalog.languages)}); default {catalog.default} at speed {settings.speed:g}."
    )
    advertiser = None
    if plan.zeroconf:
        name = plan.zeroconf_name or default_instance_name(settings.port, SERVER_PORT)
        try:
            advertiser = ZeroconfAdvertiser(plan_advertisement(settings.host, settings.port, name))
            await advertiser.start()
            _say(f"announced over zeroconf as {advertiser.registered_name} (turn off with --no-zeroconf).")
        except (VoicedeskError, OSError) as exc:
            advertiser = None
            _say(f"not announced over zeroconf ({exc}); add it in Home Assistant by host and port.")
    return RunningService(engine, server, advertiser)


async def serve(plan: ServicePlan, spec) -> int:  # type: ignore[no-untyped-def]
    service = await start_service(plan, spec)
    try:
        _say("in Home Assistant: Settings → Devices & services → Add integration → Wyoming Protocol, host and port.")
        await _until_stopped()
        _say("stopping…")
    finally:
        await service.aclose()
    return 0


async def _until_stopped() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stop.set)
    await stop.wait()
