"""``python -m endpoint.paced_serve``: the real endpoint (uvicorn, transport guards, SIGTERM budget) around the
paced stand-in synthesizer (``engine.paced_synth``) instead of Kokoro, in its own process.

For flow benchmarks and tests that need the server's own process (its RSS, its exit on SIGTERM) with a GPU-like
synthesizer on a machine that has none. It serves no speech anyone should listen to: every sentence is a tone.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m endpoint.paced_serve",
        description="The endpoint around a stand-in synthesizer with a settable speed (tones, not speech).",
    )
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--realtime-factor", type=float, default=50.0, help="audio seconds per compute second")
    parser.add_argument("--max-sessions", type=int, default=64)
    parser.add_argument("--send-timeout", type=float, default=20.0)
    parser.add_argument("--idle-timeout", type=float, default=300.0)
    parser.add_argument("--shutdown-grace", type=float, default=20.0)
    parser.add_argument("-v", "--verbose", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from endpoint.runner import serve_forever
    from endpoint.server import create_app
    from endpoint.settings import ServerSettings
    from engine.paced_synth import PacedSynthesizer

    settings = ServerSettings(
        port=args.port,
        max_sessions=args.max_sessions,
        max_sessions_per_client=None,  # every client of a local benchmark comes from 127.0.0.1
        send_timeout_s=args.send_timeout,
        idle_timeout_s=args.idle_timeout,
        shutdown_grace_s=args.shutdown_grace,
    )
    print(f"paced_serve: listening on http://127.0.0.1:{args.port}", file=sys.stderr, flush=True)
    serve_forever(create_app(PacedSynthesizer(args.realtime_factor), settings), settings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
