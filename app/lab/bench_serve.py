"""``python -m voicedesk.app.lab.bench_serve``: the real endpoint (uvicorn, transport guards, SIGTERM budget) in its
own process, for benchmarks and tests that need the server's own process (its RSS, its exit on SIGTERM).

``--synth paced`` runs it around the paced stand-in synthesizer (``app.lab.paced_synth``: tones, not speech, at a
settable multiple of real time, GPU-like by default); ``--synth honest`` around the honest stand-in
(``app.lab.honest_synth``: real G2P per sentence, the forward faked at ``--s-per-phoneme``); ``--synth kokoro``
around Kokoro from the Hugging Face cache, as ``voicedesk serve`` does. Unlike ``voicedesk serve`` there is no
per-client session cap (every client of a local benchmark comes from 127.0.0.1) and the send timeout can be set.
``--prepare-workers`` is serve's (where the front-end and G2P run; default 0 here, in-process).

``GET /lab/stages`` (this lab server only) answers the CPU time per sentence of each stage so far — front-end and
G2P (from wherever they ran), the forward (the honest stand-in's faked wait), encode (shaping and PCM16, off the
model's thread) — as p50/p95 in ms, with the load average: ``bench capacity`` puts them in its table.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from voicedesk.app.lab.honest_synth import HonestSynthesizer

ENCODE_CPU_S: deque[float] = deque(maxlen=4096)
"""CPU seconds of each sentence's shaping and PCM16 conversion in this server (``time_encoding``)."""


def time_encoding() -> None:
    """Notes the CPU time of every ``finish_sentence`` the session driver runs (the serving path keeps no hook)."""
    from voicedesk.engine import session_driver

    finish = session_driver.finish_sentence

    def timed(*args: Any) -> Any:
        started = time.thread_time()
        try:
            return finish(*args)
        finally:
            ENCODE_CPU_S.append(time.thread_time() - started)

    session_driver.finish_sentence = timed


def build_parser() -> argparse.ArgumentParser:
    from voicedesk.endpoint.serve_options import prepare_workers_arg

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
    parser.add_argument(
        "--prepare-workers",
        type=prepare_workers_arg,
        default=0,
        help="serve's --prepare-workers: processes for the front-end and G2P (N, auto, or 0: in-process; default 0)",
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
    from voicedesk.engine.limits import ConnectionLimits

    settings = ServerSettings(
        port=args.port,
        device=args.device,
        max_sessions=args.max_sessions,
        max_sessions_per_client=None,
        **({} if args.max_queue_depth is None else {"max_queue_depth": args.max_queue_depth}),
        send_timeout_s=args.send_timeout,
        connection=ConnectionLimits(idle_timeout_s=args.idle_timeout),
        shutdown_grace_s=args.shutdown_grace,
        prepare_workers=args.prepare_workers,
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

    time_encoding()
    print(f"bench_serve: listening on http://127.0.0.1:{args.port} ({args.synth})", file=sys.stderr, flush=True)
    app = create_app(source, settings)  # type: ignore[arg-type]
    serve_forever(with_stage_route(app, source if args.synth == "honest" else None), settings)
    return 0


def stage_figures(honest: HonestSynthesizer | None) -> dict[str, Any]:
    """Per-sentence figures of each stage so far (ms p50/p95 and how many sentences), and the load average."""
    from voicedesk.engine.measure.metrics import percentile

    samples: dict[str, list[float]] = {"encode": list(ENCODE_CPU_S)}
    workers = 0
    if honest is not None:
        samples = {**honest.stage_samples.snapshot(), "forward": list(honest.forward_s), **samples}
        workers = honest.prepare_workers
    stages = {
        name: {"n": len(values), "p50_ms": _ms(percentile(values, 50)), "p95_ms": _ms(percentile(values, 95))}
        for name, values in samples.items()
    }
    return {"prepare_workers": workers, "load_average": list(os.getloadavg()), "stages": stages}


def with_stage_route(app: Any, honest: HonestSynthesizer | None) -> Any:
    """The endpoint's app with ``GET /lab/stages`` in front (everything else, lifespan included, goes through)."""
    from starlette.responses import JSONResponse

    async def routed(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/lab/stages":
            await JSONResponse(stage_figures(honest))(scope, receive, send)
            return
        await app(scope, receive, send)

    routed.state = app.state  # type: ignore[attr-defined] # the runner finds the runtime there
    return routed


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(1000 * seconds, 2)


if __name__ == "__main__":
    sys.exit(main())
