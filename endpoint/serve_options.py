"""The options of ``voicedesk serve`` turned into ``ServerSettings``, with everything an operator can get wrong (tokens,
token files, TLS pairs) checked before the model loads, saying what to do. No torch, no Starlette."""

from __future__ import annotations

import argparse
import os
import re
import ssl
import stat
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from voicedesk.endpoint.settings import ServerSettings
from voicedesk.engine.engine_spec import add_lexicon_option, lexicon_from_args
from voicedesk.engine.errors import UsageError
from voicedesk.engine.limits import SessionLimits

TOKEN_ENV = "VOICEDESK_TOKEN"
DEFAULTS = ServerSettings()
DEFAULT_LIMITS = SessionLimits()
DEFAULT_SESSIONS_PER_CLIENT = DEFAULTS.max_sessions_per_client or 4
BURST_FRAMES_PER_RATE = 4
DEFAULT_CONNECTIONS_PER_CLIENT = DEFAULTS.max_connections_per_client or 32

_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(s|sec|m|min|h)?\s*$", re.IGNORECASE)
_UNIT_S = {None: 1.0, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def duration_s(text: str) -> float:
    """``90``, ``90s``, ``20m``, ``1.5h`` → seconds (argparse ``type``)."""
    match = _DURATION.match(text)
    if match is None or float(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration; write e.g. 90s, 20m or 2h (a bare number: s)")
    return float(match.group(1)) * _UNIT_S[match.group(2).lower() if match.group(2) else None]


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:g}m" if seconds < 3600 else f"{seconds / 3600:g}h"


def add_serve_arguments(parser: argparse.ArgumentParser, host: str, port: int) -> None:
    parser.add_argument("--host", default=host, help=f"address to bind (default {host})")
    parser.add_argument("--port", type=int, default=port, help=f"port to listen on (default {port})")
    parser.add_argument(
        "--device", default=None, help="torch device for the model: cpu, cuda, cuda:1 (default: CUDA if present)"
    )
    access = parser.add_argument_group("access", "who may talk to the server, and over what (see docs/security.md)")
    access.add_argument(
        "--token-file",
        metavar="PATH",
        help="require 'Authorization: Bearer TOKEN' on every route but /ping, the token read from this file "
        f"(keep it chmod 600); or set ${TOKEN_ENV}",
    )
    access.add_argument(
        "--token", help="the token itself: works, but anyone on this machine can read it in the process list"
    )
    access.add_argument("--tls-cert", metavar="PEM", help="serve HTTPS/WSS with this certificate (chain)")
    access.add_argument("--tls-key", metavar="PEM", help="the certificate's private key (unencrypted)")
    add_lexicon_option(parser, "every session")
    limits = parser.add_argument_group("limits", "(0 turns a cap off)")
    limits.add_argument(
        "--max-sessions",
        type=int,
        default=DEFAULTS.max_sessions,
        metavar="N",
        help=f"WebSocket sessions and HTTP streams at once (default {DEFAULTS.max_sessions})",
    )
    limits.add_argument(
        "--max-sessions-per-client",
        type=int,
        default=None,
        metavar="N",
        help=f"of those, from one client address (default {DEFAULT_SESSIONS_PER_CLIENT}; off behind SageMaker; "
        "behind a reverse proxy, where all clients share its address: 0)",
    )
    limits.add_argument(
        "--max-connections",
        type=int,
        default=DEFAULTS.max_connections,
        metavar="N",
        help=f"open TCP connections, in any state (default {DEFAULTS.max_connections})",
    )
    limits.add_argument(
        "--max-connections-per-client",
        type=int,
        default=None,
        metavar="N",
        help=f"of those, from one client address (default {DEFAULT_CONNECTIONS_PER_CLIENT}; off behind SageMaker; "
        "behind a reverse proxy: 0)",
    )
    limits.add_argument(
        "--max-frame-rate",
        type=float,
        default=DEFAULTS.connection.frames_per_s,
        metavar="N",
        help="frames per second read from one WebSocket session, sustained, with bursts of "
        f"{BURST_FRAMES_PER_RATE}× that (default {DEFAULTS.connection.frames_per_s:g}); a faster client is read "
        "later (TCP slows it), never dropped",
    )
    limits.add_argument(
        "--max-request-audio",
        type=duration_s,
        default=DEFAULT_LIMITS.max_request_audio_s,
        metavar="DURATION",
        help="compute budget of one request, as audio it would make (text ÷ speed): e.g. 90s, 20m "
        f"(default {_minutes(DEFAULT_LIMITS.max_request_audio_s)})",
    )
    limits.add_argument(
        "--max-session-audio",
        type=duration_s,
        default=DEFAULT_LIMITS.max_session_audio_s,
        metavar="DURATION",
        help=f"compute budget of one session over its life (default {_minutes(DEFAULT_LIMITS.max_session_audio_s)})",
    )
    limits.add_argument(
        "--first-audio-target-ms",
        type=float,
        default=None,
        metavar="MS",
        help="refuse new whole requests (503 queue_saturated, with a Retry-After hint) while a new sentence would "
        "wait longer than this for the model, by the forward times measured so far and the work queued; "
        f"0 turns it off (default {DEFAULTS.first_audio_target_s * 1000:.0f})",
    )
    limits.add_argument(
        "--batch",
        choices=("auto", "on", "off"),
        default=DEFAULTS.batch,
        help="run sentences of different sessions that are ready together as one padded forward: auto (on CUDA "
        "when a start-up measurement finds it faster; off on a CPU, where it does not pay), on, or off "
        f"(default {DEFAULTS.batch})",
    )
    limits.add_argument(
        "--prepare-workers",
        type=prepare_workers_arg,
        default=DEFAULTS.prepare_workers,
        metavar="N|auto",
        help="processes that run the text front-end and G2P of every session's upcoming sentences, so the model's "
        "thread only runs forwards: a count, 0 (in this process, beside the model), or auto (one per core but one "
        "with the model on a GPU and at least 3 cores; 0 otherwise) "
        f"(default {DEFAULTS.prepare_workers})",
    )
    limits.add_argument(
        "--max-queue-depth",
        type=int,
        default=None,
        metavar="N",
        help="also refuse them while more than N sentences wait for the model, whatever its speed (default: off)",
    )
    limits.add_argument(
        "--max-request-age",
        type=float,
        default=DEFAULTS.max_request_age_s,
        metavar="S",
        help="refuse requests whose request_timestamp is older (408 request_stale) "
        f"(default {DEFAULTS.max_request_age_s:g})",
    )
    limits.add_argument(
        "--header-timeout",
        type=float,
        default=DEFAULTS.header_timeout_s,
        metavar="S",
        help="a connection must send its request headers (and a request its body) within this "
        f"(default {DEFAULTS.header_timeout_s:g})",
    )
    limits.add_argument(
        "--send-timeout",
        type=float,
        default=DEFAULTS.send_timeout_s,
        metavar="S",
        help=f"drop a client that stops reading for this long (default {DEFAULTS.send_timeout_s:g})",
    )
    limits.add_argument(
        "--idle-timeout",
        type=float,
        default=DEFAULTS.connection.idle_timeout_s,
        metavar="S",
        help="close a WebSocket client that neither sends a valid command nor takes audio for this long, while the "
        f"server owes it nothing (default {DEFAULTS.connection.idle_timeout_s:g})",
    )
    limits.add_argument(
        "--shutdown-grace",
        type=float,
        default=DEFAULTS.shutdown_grace_s,
        metavar="S",
        help="on SIGTERM, how long sessions get to finish their sentence; the rest is then aborted, 4 s later "
        f"(default {DEFAULTS.shutdown_grace_s:g}: within SageMaker's 30 s)",
    )


# ---- the token --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TokenChoice:
    token: str | None
    origin: str | None
    """Where it came from, for messages: ``--token``, ``--token-file PATH``, ``$VOICEDESK_TOKEN``."""
    warnings: tuple[str, ...] = ()


def choose_token(args: argparse.Namespace, environ: Mapping[str, str]) -> TokenChoice:
    if args.token_file is not None and args.token is not None:
        raise UsageError("Give the token once: --token-file or --token, not both.")
    if args.token_file is not None:
        token, warnings = read_token_file(Path(args.token_file))
        return TokenChoice(check_token(token, "--token-file"), f"--token-file {args.token_file}", warnings)
    if args.token is not None:
        warning = (
            "--token puts the token in the process list, where every user of this machine can read it "
            f"(ps, /proc); use --token-file PATH or ${TOKEN_ENV} instead."
        )
        return TokenChoice(check_token(args.token, "--token"), "--token", (warning,))
    token = environ.get(TOKEN_ENV) or None
    if token is None:
        return TokenChoice(None, None)
    return TokenChoice(check_token(token, f"${TOKEN_ENV}"), f"${TOKEN_ENV}")


def read_token_file(path: Path) -> tuple[str, tuple[str, ...]]:
    try:
        raw = path.read_bytes()
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise UsageError(f"The token file {path} does not exist.") from None
    except IsADirectoryError:
        raise UsageError(f"The token file {path} is a directory; give the file that holds the token.") from None
    except OSError as exc:
        raise UsageError(f"The token file {path} cannot be read ({exc.strerror}).") from None
    try:
        token = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise UsageError(f"The token file {path} is not UTF-8 text.") from None
    if not token:
        raise UsageError(f"The token file {path} is empty; put the token in it (one line).")
    warnings: tuple[str, ...] = ()
    if stat.S_IMODE(mode) & 0o077:
        warnings = (f"the token file {path} can be read by other users; run: chmod 600 {path}",)
    return token, warnings


def check_token(token: str, origin: str) -> str:
    """A token is printable text without spaces, which could never survive an ``Authorization`` header."""
    token = token.strip()
    if not token:
        raise UsageError(f"The token from {origin} is empty.")
    if any(ch.isspace() or not ch.isprintable() for ch in token):
        raise UsageError(
            f"The token from {origin} holds spaces or control characters, which cannot be sent in an "
            "Authorization header; use printable characters only."
        )
    return token


# ---- TLS ------------------------------------------------------------------------------------------


def check_tls(cert: str | None, key: str | None) -> None:
    """Both or neither; each a readable file; together a loadable, matching, unencrypted pair."""
    if cert is None and key is None:
        return
    if cert is None or key is None:
        raise UsageError("TLS needs both --tls-cert and --tls-key (the certificate and its private key).")
    for flag, path in (("--tls-cert", cert), ("--tls-key", key)):
        try:
            with open(path, "rb") as file:
                file.read(1)
        except FileNotFoundError:
            raise UsageError(f"{flag} {path}: no such file.") from None
        except IsADirectoryError:
            raise UsageError(f"{flag} {path} is a directory; give a PEM file.") from None
        except OSError as exc:
            raise UsageError(f"{flag} {path} cannot be read ({exc.strerror}).") from None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        # An empty password instead of OpenSSL's prompt: an encrypted key fails here, clearly, not at a tty.
        context.load_cert_chain(cert, key, password=lambda: b"")
    except ssl.SSLError as exc:
        raise UsageError(
            f"--tls-cert {cert} and --tls-key {key} cannot be used together ({exc.reason or exc}): both must be "
            "PEM, the key must be the certificate's and unencrypted."
        ) from None


# ---- settings -------------------------------------------------------------------------------------


def _positive(value: float, flag: str) -> None:
    if not value > 0:
        raise UsageError(f"{flag} must be a positive number; got {value:g}.")


def _cap(value: int | None, flag: str) -> int | None:
    """0 turns a cap off."""
    if value is None or value == 0:
        return None
    if value < 0:
        raise UsageError(f"{flag} must be 0 (off) or more; got {value}.")
    return value


def _first_audio_target_s(value_ms: float | None) -> float | None:
    """0 turns the check off."""
    if value_ms is None:
        return DEFAULTS.first_audio_target_s
    if value_ms < 0 or value_ms != value_ms:
        raise UsageError(f"--first-audio-target-ms must be 0 (off) or more; got {value_ms:g}.")
    return value_ms / 1000 or None


def _per_client(value: int | None, flag: str, default: int) -> int | None:
    return default if value is None else _cap(value, flag)


def settings_from_args(
    args: argparse.Namespace, environ: Mapping[str, str] = os.environ, behind_sagemaker: bool = False
) -> tuple[ServerSettings, TokenChoice]:
    if args.max_sessions < 1:
        raise UsageError("--max-sessions must be at least 1.")
    if args.max_connections < 1:
        raise UsageError("--max-connections must be at least 1.")
    for flag, value in (
        ("--idle-timeout", args.idle_timeout),
        ("--header-timeout", args.header_timeout),
        ("--send-timeout", args.send_timeout),
        ("--max-frame-rate", args.max_frame_rate),
        ("--shutdown-grace", args.shutdown_grace),
    ):
        _positive(value, flag)
    if args.max_request_age is not None and args.max_request_age < 0:
        raise UsageError("--max-request-age must be 0 (off) or more seconds.")
    token = choose_token(args, environ)
    check_tls(args.tls_cert, args.tls_key)
    # Behind SageMaker every session comes from its sidecar: one address for all of them.
    per_client = _per_client(args.max_sessions_per_client, "--max-sessions-per-client", DEFAULT_SESSIONS_PER_CLIENT)
    connections_per_client = _per_client(
        args.max_connections_per_client, "--max-connections-per-client", DEFAULT_CONNECTIONS_PER_CLIENT
    )
    if behind_sagemaker:
        per_client = per_client if args.max_sessions_per_client is not None else None
        connections_per_client = connections_per_client if args.max_connections_per_client is not None else None
    limits = replace(
        DEFAULT_LIMITS, max_request_audio_s=args.max_request_audio, max_session_audio_s=args.max_session_audio
    )
    settings = ServerSettings(
        host=args.host,
        port=args.port,
        token=token.token,
        device=args.device,
        max_sessions=args.max_sessions,
        max_sessions_per_client=per_client,
        max_connections=args.max_connections,
        max_connections_per_client=connections_per_client,
        connection=replace(
            DEFAULTS.connection,
            idle_timeout_s=args.idle_timeout,
            frames_per_s=args.max_frame_rate,
            frame_burst=max(1, round(args.max_frame_rate * BURST_FRAMES_PER_RATE)),
        ),
        header_timeout_s=args.header_timeout,
        send_timeout_s=args.send_timeout,
        shutdown_grace_s=args.shutdown_grace,
        max_request_age_s=args.max_request_age or None,
        first_audio_target_s=_first_audio_target_s(args.first_audio_target_ms),
        batch=args.batch,
        prepare_workers=args.prepare_workers,
        max_queue_depth=_cap(args.max_queue_depth, "--max-queue-depth"),
        limits=limits,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        lexicon=lexicon_from_args(args),
    )
    return settings, token


def prepare_workers_arg(value: str) -> int | str:
    """``--prepare-workers``: ``auto`` or a count of processes (0: in-process)."""
    if value == "auto":
        return value
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"takes a number of processes (0: in this process) or 'auto'; got {value!r}")
    return int(value)
