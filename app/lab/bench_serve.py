"""``python -m voicedesk.app.lab.bench_serve``: the real endpoint (uvicorn, transport guards, SIGTERM budget) in its
own process, for benchmarks and tests that need the server's own process (its RSS, its exit on SIGTERM).

``--synth paced`` runs it around the paced stand-in synthesizer (``app.lab.paced_synth``: tones, not speech, at a
settable multiple of real time, GPU-like by default); ``--synth honest`` around the honest stand-in
(``app.lab.honest_synth``: real G2P per sentence, the forward faked at ``--s-per-phoneme``); ``--synth kokoro``
around Kokoro from the Hugging Face cache, as ``voicedesk serve`` does. Unlike ``voicedesk serve`` there is no
per-client session cap (every client of a local benchmark comes from 127.0.0.1) and the send timeout can be set.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from voicedesk.app.lab.honest_synth import HonestSynthesizer


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m voicedesk.app.lab.bench_serve",
        description="The endpoint for local benchmarks: Kokoro, or a stand-in synthesizer with a settable speed.",
    )
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--synth", choices=("paced", "honest", "kokoro"), default="paced")
    parser.add_argument("--realtime-factor", type=float, default=50.0, help="paced: audio seconds per second")
    parser.add_argument(
        "--s-per-phoneme",
        type=float,
        default=None,
        help="honest: the faked forward's cost per phoneme (default: the A10G estimate, app/lab/honest_synth.py)",
    )
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
    from voicedesk.engine.session_limits import ConnectionLimits

    settings = ServerSettings(
        port=args.port,
        device=args.device,
        max_sessions=args.max_sessions,
        max_sessions_per_client=None,
        **({} if args.max_queue_depth is None else {"max_queue_depth": args.max_queue_depth}),
        send_timeout_s=args.send_timeout,
        connection=ConnectionLimits(idle_timeout_s=args.idle_timeout),
        shutdown_grace_s=args.shutdown_grace,
    )
    if args.synth == "honest":
        from voicedesk.app.lab.honest_synth import A10G_S_PER_PHONEME, HonestSynthesizer

        honest = HonestSynthesizer(A10G_S_PER_PHONEME if args.s_per_phoneme is None else args.s_per_phoneme)
        honest.warm_up()
        source = honest
    elif args.synth == "paced":
        from voicedesk.app.lab.paced_synth import PacedSynthesizer

        source = PacedSynthesizer(args.realtime_factor)
    else:

        def source():  # type: ignore[no-untyped-def]
            from voicedesk.engine.model.kokoro_synth import KokoroSynthesizer

            return KokoroSynthesizer.load(args.device, warm_up=False)  # warmed on the scheduler's thread

    print(f"bench_serve: listening on http://127.0.0.1:{args.port} ({args.synth})", file=sys.stderr, flush=True)
    if args.synth == "honest":
        # uvicorn ends the process by re-raising SIGTERM after shutdown, so the figures are printed as they change.
        threading.Thread(target=_report_stages, args=(honest,), name="stage-report", daemon=True).start()
    serve_forever(create_app(source, settings), settings)  # type: ignore[arg-type]
    return 0


def _report_stages(honest: HonestSynthesizer, every_s: float = 5.0) -> None:
    reported = 0
    while True:
        time.sleep(every_s)
        stages = honest.stages
        if stages.sentences != reported:
            reported = stages.sentences
            per = ", ".join(f"{name} {ms:.1f} ms" for name, ms in stages.per_sentence_ms().items())
            print(f"bench_serve: {stages.sentences} sentences; per sentence: {per}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
