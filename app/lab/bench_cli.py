"""``voicedesk bench``: measurements printed as ratios taken side by side in one run (see README, Benchmarks).

``BENCHMARKS`` lists them; each adds itself with ``register_bench(subparsers)`` from the module that implements it,
importing nothing heavy until it runs.
"""

from __future__ import annotations

import argparse
from types import ModuleType

from voicedesk.app.lab import announcer_soak, bench_abuse, bench_engine, bench_flow, bench_voice
from voicedesk.app.lab import cli as lab_cli
from voicedesk.app.lab import frontend as frontend_bench

BENCHMARKS: tuple[ModuleType, ...] = (
    bench_engine,  # bench engine
    lab_cli,  # bench lab|streaming|seed|ab|concurrency|transport|cold|capacity|server
    bench_flow,  # bench flow
    bench_abuse,  # bench abuse
    frontend_bench,  # bench frontend
    announcer_soak,  # bench announcer
    bench_voice,  # bench voice
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("bench", help="measure latency and throughput (ratios side by side)")
    bench = parser.add_subparsers(dest="bench", metavar="BENCHMARK", required=True)
    for benchmark in BENCHMARKS:
        benchmark.register_bench(bench)
