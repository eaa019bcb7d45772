"""``voicedesk serve``: run the endpoint on this machine; ``python -m endpoint.serve_cli``: the container's
``serve`` (``packaging/serve``), as SageMaker starts it with ``docker run IMAGE serve``.

Outside the container the server binds 127.0.0.1 unless told otherwise; inside it binds 0.0.0.0:8080 (or
``SAGEMAKER_BIND_TO_PORT``) and takes the model from ``/opt/ml/model`` when SageMaker mounted model data there
(see ``endpoint.model_dir``). Registration stays import-light: torch loads only when the server starts.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from engine.engine_spec import TOKEN_ENV

CONTAINER_PORT_ENV = "SAGEMAKER_BIND_TO_PORT"

log = logging.getLogger(__name__)


def add_serve_arguments(parser: argparse.ArgumentParser, host: str, port: int) -> None:
    parser.add_argument("--host", default=host, help=f"address to bind (default {host})")
    parser.add_argument("--port", type=int, default=port, help=f"port to listen on (default {port})")
    parser.add_argument(
        "--token",
        default=None,
        help=f"require 'Authorization: Bearer TOKEN' on every route but /ping (default: ${TOKEN_ENV}, if set)",
    )
    parser.add_argument(
        "--device", default=None, help="torch device for the model: cpu, cuda, cuda:1 (default: CUDA if present)"
    )
    parser.add_argument(
        "--max-sessions", type=int, default=16, help="concurrent sessions and HTTP streams (default 16)"
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=300.0,
        help="seconds before a silent WebSocket session is closed (default 300)",
    )
    parser.add_argument(
        "--shutdown-grace",
        type=float,
        default=25.0,
        help="seconds sessions get to finish their sentence on SIGTERM (default 25)",
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the streaming speech endpoint (WebSocket, /invocations, OpenAI-compatible /v1/audio/speech)",
        description="Serve speech over HTTP and WebSocket on this machine (the container's server). "
        "Binds 127.0.0.1 unless --host says otherwise; use --token when exposing it on a network.",
    )
    add_serve_arguments(parser, host="127.0.0.1", port=8080)
    parser.set_defaults(handler=run_serve)


def _settings(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from endpoint.settings import ServerSettings
    from engine.errors import ErrorCode, VoicedeskError

    if args.max_sessions < 1:
        raise VoicedeskError(ErrorCode.BAD_MESSAGE, "--max-sessions must be at least 1.")
    if args.idle_timeout <= 0:
        raise VoicedeskError(ErrorCode.BAD_MESSAGE, "--idle-timeout must be a positive number of seconds.")
    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV) or None
    return ServerSettings(
        host=args.host,
        port=args.port,
        token=token,
        device=args.device,
        max_sessions=args.max_sessions,
        idle_timeout_s=args.idle_timeout,
        shutdown_grace_s=args.shutdown_grace,
    )


def run_serve(args: argparse.Namespace, prepare_model: bool = False) -> int:
    settings = _settings(args)
    if settings.host not in ("127.0.0.1", "localhost", "::1") and settings.token is None and not prepare_model:
        log.warning("serving on %s without a token: anyone who can reach this port can use it", settings.host)

    from endpoint.runner import serve_forever
    from endpoint.server import create_app

    if not prepare_model:
        # Fail now, with the fix in the message, rather than serve 503s for a model that can never load.
        from engine import weights
        from engine.kokoro_synth import select_device

        select_device(settings.device)
        weights.require_model_files()
        weights.require_spacy_model()

    def load():  # type: ignore[no-untyped-def]
        if prepare_model:
            from endpoint.model_dir import prepare_model_dir

            prepare_model_dir()
        from engine.kokoro_synth import KokoroSynthesizer

        return KokoroSynthesizer.load(settings.device, warm_up=False)  # warmed on the scheduler's thread

    print(
        f"voicedesk serve: listening on http://{settings.host}:{settings.port} "
        f"(token {'required' if settings.token else 'off'}); the model loads in the background, "
        "GET /ping answers 200 once it is ready.",
        file=sys.stderr,
        flush=True,
    )
    serve_forever(create_app(load, settings), settings)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The container's ``serve``: 0.0.0.0, port 8080 (or $SAGEMAKER_BIND_TO_PORT), model data from /opt/ml/model."""
    port = int(os.environ.get(CONTAINER_PORT_ENV) or 8080)
    parser = argparse.ArgumentParser(prog="serve", description="voicedesk's endpoint, as the container runs it.")
    add_serve_arguments(parser, host="0.0.0.0", port=port)
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv: debug, logs text)")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO - 10 * min(args.verbose, 1),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from endpoint.model_dir import configure_hub_cache
    from engine.errors import VoicedeskError

    # Must run before huggingface_hub is imported: it reads its cache location once, at import.
    configure_hub_cache()
    try:
        return run_serve(args, prepare_model=True)
    except VoicedeskError as exc:
        print(f"serve: {exc.message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
