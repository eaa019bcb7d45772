"""``voicedesk sagemaker-local``: run the SageMaker runtime stand-in in front of a local container; the server's modules
load only when the command runs."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from voicedesk.engine.errors import ConnectionFailed, UsageError

DEFAULT_CONTAINER = "http://127.0.0.1:8080"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sagemaker-local",
        help="a local stand-in for a SageMaker endpoint, in front of `voicedesk serve`",
        description="Serve SageMaker's InvokeEndpointWithBidirectionalStream, InvokeEndpoint and "
        "InvokeEndpointWithResponseStream on https://127.0.0.1:PORT (HTTP/2 + TLS with a local CA) and bridge "
        "them to a container the way SageMaker does. Point the SDKs at it with the environment it prints, then "
        "use --engine sagemaker NAME as if the endpoint were deployed.",
    )
    parser.add_argument(
        "--container", default=DEFAULT_CONTAINER, help=f"the container's URL (default {DEFAULT_CONTAINER})"
    )
    parser.add_argument("--port", type=int, default=8443, help="port on 127.0.0.1 (default 8443, like the service)")
    parser.add_argument(
        "--endpoint-name",
        action="append",
        default=[],
        metavar="NAME",
        help="endpoint name(s) to answer to; others get SageMaker's ValidationError (default: any name)",
    )
    parser.add_argument("--region", default=None, help="region to put in the printed environment (default: yours)")
    parser.add_argument(
        "--credentials",
        action="append",
        default=[],
        metavar="KEY_ID:SECRET",
        help="verify SigV4 signatures against these keys (default: any key; the date, service and region "
        "of every signature are checked either way)",
    )
    parser.add_argument("--max-part-bytes", type=int, help="split container frames into PARTIAL parts of this size")
    parser.add_argument(
        "--max-stream-duration",
        type=float,
        default=1800.0,
        metavar="SECONDS",
        help="end a bidirectional stream after this long, as SageMaker does after 30 minutes (default 1800); "
        "the client sees a ModelStreamError with ErrorCode ModelInvocationTimeExceeded",
    )
    parser.add_argument("--state-dir", type=Path, help="where the local CA lives (default: the user cache folder)")
    parser.add_argument(
        "--print-env",
        action="store_true",
        help='print only the export lines and exit (for `eval "$(voicedesk sagemaker-local --print-env)"`)',
    )
    parser.set_defaults(handler=run)


def _credential_check(pairs: list[str]):  # -> CredentialCheck | None
    from voicedesk.app.lab.sagemaker_local.auth import CredentialCheck

    if not pairs:
        return None
    keys: dict[str, str] = {}
    for pair in pairs:
        key_id, sep, secret = pair.partition(":")
        if not sep or not key_id or not secret:
            raise UsageError(f"--credentials takes KEY_ID:SECRET; got {pair!r}.")
        keys[key_id] = secret
    return CredentialCheck(keys)


def _positive(value: float, flag: str) -> float:

    if not value > 0:
        raise UsageError(f"{flag} must be a positive number of seconds; got {value:g}.")
    return value


def _has_credentials() -> bool:
    import boto3
    from botocore.exceptions import BotoCoreError

    try:
        return boto3.Session().get_credentials() is not None
    except BotoCoreError:
        return False


def _default_region(explicit: str | None) -> str:
    if explicit:
        return explicit
    import boto3

    return boto3.Session().region_name or "us-east-1"


def environment_lines(env: dict[str, str], ca_file: Path) -> list[str]:
    lines = [f"export {name}={shlex.quote(value)}" for name, value in env.items()]
    # awscrt ignores AWS_CA_BUNDLE; plain SDK code (not voicedesk's engine) needs the CA in SSL_CERT_FILE.
    lines.append(f"# other code using aws-sdk-sagemaker-runtime-http2 directly: export SSL_CERT_FILE={ca_file}")
    return lines


def run(args: argparse.Namespace) -> int:
    import asyncio

    from voicedesk.app.lab.sagemaker_local.config import ContainerTarget, StandInConfig
    from voicedesk.app.lab.sagemaker_local.server import (
        StandInServer,
        default_state_dir,
        load_or_create_ca,
        sdk_environment,
    )

    try:
        target = ContainerTarget(args.container)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    config = StandInConfig(
        target,
        endpoint_names=frozenset(args.endpoint_name),
        credentials=_credential_check(args.credentials),
        max_part_bytes=args.max_part_bytes,
        region=_default_region(args.region),
        max_stream_duration_s=_positive(args.max_stream_duration, "--max-stream-duration"),
    )
    state_dir = args.state_dir or default_state_dir()
    server = StandInServer(config, port=args.port, state_dir=state_dir)
    dummy = not _has_credentials()

    if args.print_env:
        _, ca_file = load_or_create_ca(state_dir)
        env = sdk_environment(f"https://127.0.0.1:{args.port}", ca_file, config.region, dummy)
        print("\n".join(environment_lines(env, ca_file)))
        return 0

    async def main() -> None:
        await server.start()
        names = ", ".join(sorted(config.endpoint_names)) or "any name"
        print(f"voicedesk sagemaker-local: {server.url} → container {target.base_url} (endpoints: {names})")
        print("Point the SDKs and voicedesk at it (bash/zsh):")
        for line in environment_lines(server.environment(config.region, dummy), server.ca_file):
            print(f"  {line}")
        example = next(iter(sorted(config.endpoint_names)), "NAME")
        print(f'Then: voicedesk say --engine sagemaker {example} "Hello from a local endpoint."')
        print("Ctrl+C stops it.", flush=True)
        await _warn_if_container_down(target)
        try:
            await server.wait()
        finally:
            await server.stop()

    try:
        asyncio.run(main())
    except OSError as exc:
        raise ConnectionFailed(str(exc)) from None
    except KeyboardInterrupt:
        pass
    return 0


async def _warn_if_container_down(target) -> None:  # target: ContainerTarget
    import httpx

    try:
        async with httpx.AsyncClient(timeout=2.0) as client:
            reply = await client.get(target.base_url.rstrip("/") + "/ping")
    except httpx.HTTPError as exc:
        print(
            f"warning: the container at {target.base_url} does not answer /ping ({type(exc).__name__}); "
            "start it with `voicedesk serve` (requests fail with ModelError until it is up).",
            file=sys.stderr,
        )
        return
    if reply.status_code != 200:
        print(f"warning: the container's /ping says {reply.status_code} (still loading?)", file=sys.stderr)
