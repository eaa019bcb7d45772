"""``voicedesk bench server``: time to first audio under concurrent sessions, connection accept time, and the
wire cost of binary vs SSE audio, against a real server with real websockets clients.

By default it starts the endpoint in-process (uvicorn on 127.0.0.1, whatever model the Hugging Face cache
holds); ``--url`` measures a server that is already running (a lab box, a container). Time to first audio
(TTFA) is from sending a request to its first binary frame. Level 1 measures one session alone; at level N,
N sessions each send a request per round, arriving either *spread* (at random moments within the time one
request takes alone, like independent callers) or *together* (the same instant, the worst case: with one
model per device, N simultaneous first sentences are synthesized one after another).

The goal guards against Kokoro-FastAPI's issue #115, where a second stream waited for the whole of the first:
p95 at 4 sessions ≤ 2× p50 at 1 session, for spread arrivals. The scheduler makes that possible by putting
every utterance's first sentence ahead of other sessions' later sentences.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

DEFAULT_TEXT = (
    "Sure, I can help with that. Let me look at your calendar for tomorrow. "
    "You have two meetings in the morning and the afternoon is free."
)
TTFA_GOAL_RATIO = 2.0
ACCEPT_GOAL_S = 0.250
ARRIVALS = ("spread", "together")
SEED = 115


@dataclass
class LevelResult:
    sessions: int
    arrival: str
    ttfa_s: list[float] = field(default_factory=list)
    connect_s: list[float] = field(default_factory=list)
    request_s: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class ServerBenchReport:
    target: str
    text: str
    rounds: int
    window_s: float = 0.0
    """Spread arrivals start at random moments within this window: one request's length at 1 session."""
    levels: list[LevelResult] = field(default_factory=list)
    binary_bytes_per_audio_s: float | None = None
    sse_bytes_per_audio_s: float | None = None

    def to_json(self) -> dict[str, object]:
        from engine.metrics import summarize

        body = asdict(self)
        body["summary"] = [
            {
                "sessions": level.sessions,
                "arrival": level.arrival,
                "ttfa": summarize(level.ttfa_s),
                "connect": summarize(level.connect_s),
                "ratio_p95_to_p50_at_1": self.ratio(level),
            }
            for level in self.levels
        ]
        return body

    def p50_at_one(self) -> float | None:
        from engine.metrics import percentile

        base = next((level for level in self.levels if level.sessions == 1), None)
        return percentile(base.ttfa_s, 50) if base else None

    def ratio(self, level: LevelResult) -> float | None:
        from engine.metrics import percentile

        p95, base = percentile(level.ttfa_s, 95), self.p50_at_one()
        return p95 / base if p95 is not None and base else None


def register_bench(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "server",
        help="time to first audio at 1, 2, 4 concurrent sessions; accept time; binary vs SSE bytes per audio second",
    )
    parser.add_argument("--sessions", default="1,2,4", help="concurrency levels, comma-separated (default 1,2,4)")
    parser.add_argument("--rounds", type=int, default=5, help="requests per session per level (default 5)")
    parser.add_argument(
        "--arrivals",
        default="spread,together",
        help="how sessions' requests arrive: 'spread' (random moments within one request's length, like "
        "independent callers: the goal's setting) and/or 'together' (the same instant: the worst case)",
    )
    parser.add_argument("--text", default=DEFAULT_TEXT, help="what each request says")
    parser.add_argument("--voice", default="af_heart")
    parser.add_argument("--device", help="in-process server: cpu, cuda or cuda:N (default: CUDA when present)")
    parser.add_argument("--url", help="measure a running server instead, e.g. http://gpu-box:8080")
    parser.add_argument("--token", help="bearer token for --url (default: $VOICEDESK_TOKEN)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(handler=_run)


def _parse_levels(text: str) -> list[int]:
    from engine.errors import ErrorCode, VoicedeskError

    try:
        levels = sorted({int(part) for part in text.split(",") if part.strip()} | {1})
    except ValueError:
        levels = []
    if not levels or levels[0] < 1:
        raise VoicedeskError(ErrorCode.BAD_MESSAGE, f"--sessions takes positive integers like 1,2,4; got {text!r}.")
    return levels


def _parse_arrivals(text: str) -> list[str]:
    from engine.errors import ErrorCode, VoicedeskError

    arrivals = [part.strip() for part in text.split(",") if part.strip()]
    if not arrivals or any(a not in ARRIVALS for a in arrivals):
        raise VoicedeskError(ErrorCode.BAD_MESSAGE, f"--arrivals takes spread and/or together; got {text!r}.")
    return list(dict.fromkeys(arrivals))


def _run(args: argparse.Namespace) -> int:
    import os

    levels, arrivals = _parse_levels(args.sessions), _parse_arrivals(args.arrivals)
    progress: Callable[[str], None] = (
        (lambda _msg: None) if args.json else (lambda msg: print(msg, file=sys.stderr, flush=True))
    )
    token = args.token or os.environ.get("VOICEDESK_TOKEN")
    plan = BenchPlan(levels, arrivals, max(args.rounds, 1), args.text, args.voice)
    if args.url:
        report = asyncio.run(measure(args.url.rstrip("/"), plan, token, progress))
    else:
        report = bench_in_process(plan, args.device, progress)
    print(json.dumps(report.to_json(), indent=2) if args.json else format_report(report))
    return 0


@dataclass(frozen=True)
class BenchPlan:
    levels: list[int]
    arrivals: list[str]
    rounds: int
    text: str = DEFAULT_TEXT
    voice: str = "af_heart"


def bench_in_process(plan: BenchPlan, device: str | None, progress: Callable[[str], None]) -> ServerBenchReport:
    from endpoint.runner import ServerThread
    from endpoint.server import create_app
    from endpoint.settings import ServerSettings
    from engine.kokoro_synth import KokoroSynthesizer

    progress("bench server: loading the model…")
    synthesizer = KokoroSynthesizer.load(device)
    settings = ServerSettings(max_sessions=max(plan.levels) + 2)
    progress(f"bench server: starting the endpoint on 127.0.0.1 ({synthesizer.device})…")
    with ServerThread(create_app(synthesizer, settings)) as server:
        return asyncio.run(measure(server.http_url, plan, None, progress))


async def measure(
    http_url: str, plan: BenchPlan, token: str | None, progress: Callable[[str], None]
) -> ServerBenchReport:
    from engine.metrics import percentile

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    ws_url = "ws" + http_url.removeprefix("http") + "/invocations-bidirectional-stream"
    report = ServerBenchReport(http_url, plan.text, plan.rounds)
    rng = random.Random(SEED)
    for sessions in plan.levels:
        for arrival in plan.arrivals if sessions > 1 else ["alone"]:
            progress(f"bench server: {sessions} session(s), arrivals {arrival}, {plan.rounds} round(s)…")
            level = LevelResult(sessions, arrival)
            await _measure_level(ws_url, headers, level, plan, report.window_s, rng, progress)
            report.levels.append(level)
            if sessions == 1:
                report.window_s = percentile(level.request_s, 50) or 0.0
    progress("bench server: wire bytes per audio second, binary WebSocket vs SSE…")
    report.binary_bytes_per_audio_s = await binary_wire_cost(ws_url, headers, plan.text, plan.voice)
    report.sse_bytes_per_audio_s = await sse_wire_cost(http_url, headers, plan.text, plan.voice)
    return report


async def _measure_level(
    ws_url: str,
    headers: dict[str, str],
    level: LevelResult,
    plan: BenchPlan,
    window_s: float,
    rng: random.Random,
    progress: Callable[[str], None],
) -> None:
    from websockets.asyncio.client import connect

    connections = []
    try:
        for _ in range(level.sessions):
            started = time.perf_counter()
            connections.append(await connect(ws_url, additional_headers=headers, max_size=None))
            level.connect_s.append(time.perf_counter() - started)
        for round_no in range(plan.rounds):
            delays = [rng.uniform(0, window_s) if level.arrival == "spread" else 0.0 for _ in connections]
            outcomes = await asyncio.gather(
                *(
                    _one_request(ws, plan.text, plan.voice, f"r{round_no}-s{i}", delay)
                    for i, (ws, delay) in enumerate(zip(connections, delays, strict=True))
                )
            )
            for outcome in outcomes:
                if outcome.error:
                    level.errors.append(outcome.error)
                elif outcome.ttfa_s is not None:
                    level.ttfa_s.append(outcome.ttfa_s)
                    level.request_s.append(outcome.request_s)
            measured = ", ".join(f"{o.ttfa_s * 1000:.0f} ms" for o in outcomes if o.ttfa_s is not None)
            progress(f"  round {round_no + 1}/{plan.rounds}: TTFA {measured}")
    finally:
        for ws in connections:
            await ws.close()


@dataclass(frozen=True)
class Outcome:
    ttfa_s: float | None = None
    request_s: float = 0.0
    error: str | None = None


async def _one_request(ws, text: str, voice: str, request_id: str, delay_s: float) -> Outcome:  # type: ignore[no-untyped-def]
    await asyncio.sleep(delay_s)  # the arrival process: when this caller speaks up
    started = time.perf_counter()
    await ws.send(json.dumps({"text": text, "voice": voice, "request_id": request_id}))
    ttfa = None
    async with asyncio.timeout(300):
        while True:
            frame = await ws.recv()
            if isinstance(frame, bytes):
                if ttfa is None and frame:
                    ttfa = time.perf_counter() - started
                continue
            message = json.loads(frame)
            if message.get("type") == "error":
                return Outcome(error=f"{message.get('code')}: {message.get('message')}")
            if message.get("type") == "synthesis_complete":
                return Outcome(ttfa, time.perf_counter() - started)


async def binary_wire_cost(ws_url: str, headers: dict[str, str], text: str, voice: str) -> float | None:
    """Bytes on the WebSocket per second of audio for one whole request (binary PCM frames + JSON control)."""
    from websockets.asyncio.client import connect

    from engine.metrics import transport_cost

    wire = 0
    async with connect(ws_url, additional_headers=headers, max_size=None) as ws:
        await ws.send(json.dumps({"text": text, "voice": voice, "request_id": "wire"}))
        async with asyncio.timeout(300):
            while True:
                frame = await ws.recv()
                wire += len(frame) if isinstance(frame, bytes) else len(frame.encode())
                if isinstance(frame, str) and json.loads(frame).get("type") == "synthesis_complete":
                    audio_s = json.loads(frame)["total_duration_s"]
                    break
    return transport_cost(wire, audio_s).bytes_per_audio_s if audio_s > 0 else None


async def sse_wire_cost(http_url: str, headers: dict[str, str], text: str, voice: str) -> float | None:
    """Bytes of the SSE body per second of audio for the same request (base64 audio in events)."""
    import httpx

    from engine.metrics import transport_cost

    wire = 0
    audio_s = 0.0
    body = {"text": text, "voice": voice, "transport": "sse", "request_id": "wire"}
    buffered = b""
    async with (
        httpx.AsyncClient(timeout=300, headers=headers) as client,
        client.stream("POST", http_url + "/invocations", json=body) as response,
    ):
        response.raise_for_status()
        async for chunk in response.aiter_raw():
            wire += len(chunk)
            buffered += chunk
    for line in buffered.decode().splitlines():
        if line.startswith("data: ") and '"audio_stream_end"' in line:
            audio_s = json.loads(line.removeprefix("data: "))["duration_s"]
    return transport_cost(wire, audio_s).bytes_per_audio_s if audio_s > 0 else None


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value * 1000:.0f} ms"


def format_report(report: ServerBenchReport) -> str:
    from engine.events import BYTES_PER_SAMPLE, SAMPLE_RATE
    from engine.metrics import summarize

    lines = [
        f"bench server: {report.target}, {report.rounds} round(s) per level, text of {len(report.text)} characters; "
        f"spread arrivals within {report.window_s:.2f} s (one request at 1 session)",
        "",
        f"{'sessions':>8}  {'arrivals':>8}  {'n':>3}  {'TTFA p50':>9}  {'TTFA p95':>9}  {'p95 ÷ p50@1':>11}  "
        f"{'connect p95':>11}",
    ]
    for level in report.levels:
        ttfa, connect = summarize(level.ttfa_s), summarize(level.connect_s)
        ratio = report.ratio(level)
        lines.append(
            f"{level.sessions:>8}  {level.arrival:>8}  {ttfa['n']:>3}  {_ms(ttfa['p50']):>9}  {_ms(ttfa['p95']):>9}  "
            f"{'—' if ratio is None else f'{ratio:.2f}×':>11}  {_ms(connect['p95']):>11}"
            + (f"  ({len(level.errors)} errors: {level.errors[0]})" if level.errors else "")
        )
    top = max((level.sessions for level in report.levels), default=1)
    for level in report.levels:
        ratio = report.ratio(level)
        if level.sessions == top and top > 1 and ratio is not None:
            verdict = "met" if ratio <= TTFA_GOAL_RATIO else "NOT met"
            lines.append(
                f"goal: p95 at {top} sessions ({level.arrival}) ≤ {TTFA_GOAL_RATIO:g}× p50 at 1 → "
                f"{ratio:.2f}× ({verdict})"
            )
    connects = summarize([t for level in report.levels for t in level.connect_s])
    if connects["max"] is not None:
        verdict = "met" if connects["max"] < ACCEPT_GOAL_S else "NOT met"
        lines.append(
            f"connection accepted in: p50 {_ms(connects['p50'])}, max {_ms(connects['max'])} "
            f"(goal < {ACCEPT_GOAL_S * 1000:.0f} ms: {verdict})"
        )
    raw = SAMPLE_RATE * BYTES_PER_SAMPLE
    if report.binary_bytes_per_audio_s and report.sse_bytes_per_audio_s:
        binary, sse = report.binary_bytes_per_audio_s, report.sse_bytes_per_audio_s
        lines += [
            "",
            "wire bytes per second of audio:",
            f"  binary WebSocket  {binary:>9,.0f} B/s  ({binary / raw:.2f}× raw PCM16)",
            f"  SSE (base64)      {sse:>9,.0f} B/s  ({sse / raw:.2f}× raw PCM16, {sse / binary:.2f}× binary)",
        ]
    return "\n".join(lines)
