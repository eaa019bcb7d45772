"""``python -m voicedesk.app.lab.bench_serve``: the real endpoint (uvicorn, transport guards, SIGTERM budget) in its
own
process, for benchmarks and tests that need the server's own process (its RSS, its exit on SIGTERM).

``--synth paced`` runs it around the paced stand-in synthesizer (``app.lab.paced_synth``: tones, not speech, at a
settable multiple of real time, GPU-like by default); ``--synth kokoro`` around Kokoro from the Hugging Face cache,
as ``voicedesk serve`` does. Unlike ``voicedesk serve`` there is no per-client session cap (every client of a
local benchmark comes from 127.0.0.1) and the send timeout can be set.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m voicedesk.app.lab.bench_serve",
        description="The endpoint for local benchmarks: Kokoro, or a stand-in synthesizer with a settable speed.",
    )
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--synth", choices=("paced", "kokoro"), default="paced")
    parser.add_argument("--realtime-factor", type=float, default=50.0, help="paced: audio seconds per second")
    parser.add_argument("--device", help="kokoro: cpu, cuda or cuda:N (default: CUDA when present)")
    parser.add_argument("--max-sessions", type=int, default=64)
    parser.add_argument(
        "--max-queue-depth", type=int, help="sentences waiting for the model before queue_saturated (default: serve's)"
    )
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
    from voicedesk.endpoint.runner import serve_forever
    from voicedesk.endpoint.server import create_app
    from voicedesk.endpoint.settings import ServerSettings

    settings = ServerSettings(
        port=args.port,
        device=args.device,
        max_sessions=args.max_sessions,
        max_sessions_per_client=None,
        **({} if args.max_queue_depth is None else {"max_queue_depth": args.max_queue_depth}),
        send_timeout_s=args.send_timeout,
        idle_timeout_s=args.idle_timeout,
        shutdown_grace_s=args.shutdown_grace,
    )
    if args.synth == "paced":
        from voicedesk.app.lab.paced_synth import PacedSynthesizer

        source = PacedSynthesizer(args.realtime_factor)
    else:

        def source():  # type: ignore[no-untyped-def]
            from voicedesk.engine.model.kokoro_synth import KokoroSynthesizer

            return KokoroSynthesizer.load(args.device, warm_up=False)  # warmed on the scheduler's thread

    print(f"bench_serve: listening on http://127.0.0.1:{args.port} ({args.synth})", file=sys.stderr, flush=True)
    serve_forever(create_app(source, settings), settings)  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main())
