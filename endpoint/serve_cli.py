"""``voicedesk serve``, and the container's ``serve`` as SageMaker starts it.

Before anything loads it says what it exposes (a token on the command line, an open port without a token, a token
without TLS). torch loads only when the server starts."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from voicedesk.endpoint.hosting import is_loopback, sagemaker_marker
from voicedesk.endpoint.serve_options import TOKEN_ENV, TokenChoice, add_serve_arguments, settings_from_args
from voicedesk.endpoint.settings import ServerSettings

CONTAINER_PORT_ENV = "SAGEMAKER_BIND_TO_PORT"

log = logging.getLogger(__name__)

__all__ = ["TOKEN_ENV", "add_serve_arguments", "exposure_warnings", "main", "register", "run_serve"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the streaming speech endpoint (WebSocket, /invocations, OpenAI-compatible /v1/audio/speech)",
        description="Serve speech over HTTP and WebSocket on this machine (the container's server). "
        "Binds 127.0.0.1 unless --host says otherwise; beyond loopback, give it a token (--token-file) and "
        "TLS (--tls-cert/--tls-key). See docs/security.md.",
    )
    add_serve_arguments(parser, host="127.0.0.1", port=8080)
    parser.set_defaults(handler=run_serve)


def exposure_warnings(settings: ServerSettings, token: TokenChoice, sagemaker: str | None) -> list[str]:
    """What this configuration leaves open, in words an operator can act on."""
    warnings = list(token.warnings)
    if is_loopback(settings.host) or sagemaker is not None:
        return warnings
    where = f"{settings.host}:{settings.port}"
    if settings.token is None:
        warnings.append(
            f"serving on {where} without a token: anyone who can reach this port can use the server and its GPU. "
            f"Give it one with --token-file PATH or ${TOKEN_ENV}, or bind --host 127.0.0.1."
        )
    elif settings.tls_cert is None:
        warnings.append(
            f"serving on {where} without TLS: the token and every text travel in clear over the network. "
            "Use --tls-cert/--tls-key, or a TLS-terminating proxy in front."
        )
    return warnings


def run_serve(args: argparse.Namespace, prepare_model: bool = False) -> int:
    # Only the container's serve (prepare_model) can be behind SageMaker; a notebook's SM_* variables must not
    # switch off the warnings of a `voicedesk serve` started there.
    sagemaker = sagemaker_marker(os.environ) if prepare_model else None
    settings, token = settings_from_args(args, os.environ, behind_sagemaker=sagemaker is not None)
    for warning in exposure_warnings(settings, token, sagemaker):
        log.warning("%s", warning)

    from voicedesk.endpoint.runner import serve_forever
    from voicedesk.endpoint.server import create_app

    if not prepare_model:
        # Fail now, with the fix in the message, rather than serve 503s for a model that can never load.
        from voicedesk.engine.model import weights
        from voicedesk.engine.model.kokoro_synth import select_device

        select_device(settings.device)
        weights.require_model_files()
        weights.require_spacy_model()

    def load():  # type: ignore[no-untyped-def]
        if prepare_model:
            from voicedesk.endpoint.model_dir import prepare_model_dir

            prepare_model_dir()
        from voicedesk.engine.model.kokoro_synth import KokoroSynthesizer

        return KokoroSynthesizer.load(settings.device, warm_up=False)  # warmed on the scheduler's thread

    scheme = "https" if settings.tls_cert else "http"
    behind = f"; behind SageMaker ({sagemaker})" if sagemaker else ""
    print(
        f"voicedesk serve: listening on {scheme}://{settings.host}:{settings.port} "
        f"(token {'required, from ' + str(token.origin) if settings.token else 'off'}{behind}); the model loads "
        "in the background, GET /ping answers 200 once it is ready.",
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
    from voicedesk.endpoint.model_dir import configure_hub_cache
    from voicedesk.engine.errors import VoicedeskError

    # Must run before huggingface_hub is imported: it reads its cache location once, at import.
    configure_hub_cache()
    try:
        return run_serve(args, prepare_model=True)
    except VoicedeskError as exc:
        print(f"serve: {exc.message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
