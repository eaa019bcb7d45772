"""``voicedesk bench server``: time to first audio under concurrent sessions, connection accept time, and the
wire cost of binary vs SSE audio, against a real server with real websockets clients.

By default it starts the endpoint in-process (uvicorn on 127.0.0.1, whatever model the Hugging Face cache
holds); ``--url`` measures a server that is already running (a lab box, a container). At each concurrency
level N, N sessions send a request at the same moment, for several rounds; time to first audio (TTFA) is from
sending the request to the first binary frame. The goal (Kokoro-FastAPI's issue #115 is the failure it guards
against): p95 at 4 sessions ≤ 2× p50 at 1 session.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

DEFAULT_TEXT = "Sure, I can help with that. Let me look at your calendar for tomorrow."
TTFA_GOAL_RATIO = 2.0
ACCEPT_GOAL_S = 0.250


@dataclass
class LevelResult:
    sessions: int
    ttfa_s: list[float] = field(default_factory=list)
    connect_s: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class ServerBenchReport:
    target: str
    text: str
    rounds: int
    levels: list[LevelResult] = field(default_factory=list)
    binary_bytes_per_audio_s: float | None = None
    sse_bytes_per_audio_s: float | None = None

    def to_json(self) -> dict[str, object]:
        from engine.metrics import summarize

        body = asdict(self)
        body["summary"] = {
            str(level.sessions): {"ttfa": summarize(level.ttfa_s), "connect": summarize(level.connect_s)}
            for level in self.levels
        }
        body["ratio_p95_to_p50_at_1"] = {str(k): v for k, v in self.ratios().items()}
        return body

    def ratios(self) -> dict[int, float | None]:
        from engine.metrics import percentile

        base = next((level for level in self.levels if level.sessions == 1), None)
        p50_one = percentile(base.ttfa_s, 50) if base else None
        ratios: dict[int, float | None] = {}
        for level in self.levels:
            p95 = percentile(level.ttfa_s, 95)
            ratios[level.sessions] = p95 / p50_one if p95 is not None and p50_one else None
        return ratios


def register_bench(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "server",
        help="time to first audio at 1, 2, 4 concurrent sessions; accept time; binary vs SSE bytes per audio second",
    )
    parser.add_argument("--sessions", default="1,2,4", help="concurrency levels, comma-separated (default 1,2,4)")
    parser.add_argument("--rounds", type=int, default=5, help="simultaneous requests per session per level (default 5)")
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
        levels = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        levels = []
    if not levels or levels[0] < 1:
        raise VoicedeskError(ErrorCode.BAD_MESSAGE, f"--sessions takes positive integers like 1,2,4; got {text!r}.")
    return levels


def _run(args: argparse.Namespace) -> int:
    import os

    levels = _parse_levels(args.sessions)
    progress: Callable[[str], None] = (
        (lambda _msg: None) if args.json else (lambda msg: print(msg, file=sys.stderr, flush=True))
    )
    token = args.token or os.environ.get("VOICEDESK_TOKEN")
    rounds = max(args.rounds, 1)
    if args.url:
        report = asyncio.run(measure(args.url.rstrip("/"), levels, rounds, args.text, args.voice, token, progress))
    else:
        report = bench_in_process(levels, rounds, args.text, args.voice, args.device, progress)
    print(json.dumps(report.to_json(), indent=2) if args.json else format_report(report))
    return 0


def bench_in_process(
    levels: list[int], rounds: int, text: str, voice: str, device: str | None, progress: Callable[[str], None]
) -> ServerBenchReport:
    from endpoint.runner import ServerThread
    from endpoint.server import create_app
    from endpoint.settings import ServerSettings
    from engine.kokoro_synth import KokoroSynthesizer

    progress("bench server: loading the model…")
    synthesizer = KokoroSynthesizer.load(device)
    settings = ServerSettings(max_sessions=max(levels) + 2)
    progress(f"bench server: starting the endpoint on 127.0.0.1 ({synthesizer.device})…")
    with ServerThread(create_app(synthesizer, settings)) as server:
        return asyncio.run(measure(server.http_url, levels, rounds, text, voice, None, progress))


async def measure(
    http_url: str,
    levels: list[int],
    rounds: int,
    text: str,
    voice: str,
    token: str | None,
    progress: Callable[[str], None],
) -> ServerBenchReport:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    ws_url = "ws" + http_url.removeprefix("http") + "/invocations-bidirectional-stream"
    report = ServerBenchReport(http_url, text, rounds)
    for sessions in levels:
        progress(f"bench server: {sessions} concurrent session(s), {rounds} round(s)…")
        report.levels.append(await _measure_level(ws_url, headers, sessions, rounds, text, voice, progress))
    progress("bench server: wire bytes per audio second, binary WebSocket vs SSE…")
    report.binary_bytes_per_audio_s = await _binary_wire_cost(ws_url, headers, text, voice)
    report.sse_bytes_per_audio_s = await _sse_wire_cost(http_url, headers, text, voice)
    return report


async def _measure_level(
    ws_url: str,
    headers: dict[str, str],
    sessions: int,
    rounds: int,
    text: str,
    voice: str,
    progress: Callable[[str], None],
) -> LevelResult:
    from websockets.asyncio.client import connect

    result = LevelResult(sessions)
    connections = []
    try:
        for _ in range(sessions):
            started = time.perf_counter()
            connections.append(await connect(ws_url, additional_headers=headers, max_size=None))
            result.connect_s.append(time.perf_counter() - started)
        for round_no in range(rounds):
            outcomes = await asyncio.gather(
                *(_one_request(ws, text, voice, f"r{round_no}-s{i}") for i, ws in enumerate(connections))
            )
            for ttfa, error in outcomes:
                if error:
                    result.errors.append(error)
                elif ttfa is not None:
                    result.ttfa_s.append(ttfa)
            measured = ", ".join(f"{t * 1000:.0f} ms" for t, _ in outcomes if t is not None)
            progress(f"  round {round_no + 1}/{rounds}: TTFA {measured}")
    finally:
        for ws in connections:
            await ws.close()
    return result


async def _one_request(ws, text: str, voice: str, request_id: str) -> tuple[float | None, str | None]:  # type: ignore[no-untyped-def]
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
                return None, f"{message.get('code')}: {message.get('message')}"
            if message.get("type") == "synthesis_complete":
                return ttfa, None


async def _binary_wire_cost(ws_url: str, headers: dict[str, str], text: str, voice: str) -> float | None:
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


async def _sse_wire_cost(http_url: str, headers: dict[str, str], text: str, voice: str) -> float | None:
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
        f"bench server: {report.target}, {report.rounds} round(s) per level, text of {len(report.text)} characters",
        "",
        f"{'sessions':>8}  {'n':>3}  {'TTFA p50':>9}  {'TTFA p95':>9}  {'p95 ÷ p50@1':>11}  {'connect p95':>11}",
    ]
    ratios = report.ratios()
    for level in report.levels:
        ttfa, connect = summarize(level.ttfa_s), summarize(level.connect_s)
        ratio = ratios.get(level.sessions)
        lines.append(
            f"{level.sessions:>8}  {ttfa['n']:>3}  {_ms(ttfa['p50']):>9}  {_ms(ttfa['p95']):>9}  "
            f"{'—' if ratio is None else f'{ratio:.2f}×':>11}  {_ms(connect['p95']):>11}"
            + (f"  ({len(level.errors)} errors: {level.errors[0]})" if level.errors else "")
        )
    goal_level = 4 if 4 in ratios else max(ratios, default=None)
    if goal_level is not None and ratios.get(goal_level) is not None and 1 in ratios:
        ratio = ratios[goal_level]
        verdict = "met" if ratio <= TTFA_GOAL_RATIO else "NOT met"
        lines.append(f"goal: p95 at {goal_level} sessions ≤ {TTFA_GOAL_RATIO:g}× p50 at 1 → {ratio:.2f}× ({verdict})")
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
