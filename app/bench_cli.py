"""``voicedesk bench``: measurements printed as ratios taken side by side in one run (see README, Benchmarks).

Each benchmark registers itself here with ``register_bench(subparsers)`` from the module that implements it.
"""

from __future__ import annotations

import argparse
import importlib

BENCH_MODULES: list[str] = [
    "engine.bench_engine",  # bench engine
    "app.bench_lab.cli",  # bench lab|streaming|seed|ab|concurrency|transport|cold|capacity|server
    "endpoint.bench_flow",  # bench flow
    "endpoint.bench_abuse",  # bench abuse
]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("bench", help="measure latency and throughput (ratios side by side)")
    bench = parser.add_subparsers(dest="bench", metavar="BENCHMARK", required=True)
    for name in BENCH_MODULES:
        importlib.import_module(name).register_bench(bench)
