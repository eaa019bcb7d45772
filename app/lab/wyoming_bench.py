"""``python -m voicedesk.app.lab.wyoming_bench A:PORT B:PORT``: Wyoming TTS servers side by side on warm connections.

wyoming-bench (the third-party benchmark) opens a fresh connection for every measurement, which is what Home
Assistant does too, so a server's per-connection set-up counts in its figures. This complements it by measuring
what a server does once connected: each server gets one connection per mode and a warm-up request on it, then
every text in each mode, servers alternating text by text (A B A B …) so drift in machine load hits both alike.

- ``non_streaming``: one ``synthesize``; ends at ``audio-stop``.
- ``streaming``: ``synthesize-start``, the text in word pieces (``--word-delay`` seconds apart, like an LLM's
  tokens; 0 sends them at once), the whole text again (as Home Assistant does), ``synthesize-stop``; ends at
  ``synthesize-stopped``. The clock starts at ``synthesize-start``.

TTFA is the time to the first ``audio-chunk``; RTF is total time ÷ audio seconds (below 1 = faster than real time),
as wyoming-bench reports them. The last table gives the first server's median over the second's (below 1: the
first is ahead).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from wyoming.audio import AudioChunk
from wyoming.client import AsyncTcpClient
from wyoming.error import Error as WyomingError
from wyoming.info import Describe, Info
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop

MODES = ("non_streaming", "streaming")
DEFAULT_TEXTS = (
    "The weather today is sunny and warm with a light breeze.",
    "The kitchen lights are off and the front door is locked. Tomorrow looks clear and mild.",
    "Good evening, and welcome home. The heating is set to twenty one degrees. Your package arrived at noon.",
)


@dataclass
class Measurement:
    server: str
    mode: str
    text: str
    ttfa_s: float
    total_s: float
    audio_s: float

    @property
    def rtf(self) -> float:
        return self.total_s / self.audio_s if self.audio_s else float("inf")


@dataclass
class ServerRun:
    address: str
    program: str = "?"
    measurements: list[Measurement] = field(default_factory=list)

    def median(self, mode: str, metric: str) -> float | None:
        values = [getattr(m, metric) for m in self.measurements if m.mode == mode]
        return statistics.median(values) if values else None


def word_pieces(text: str) -> list[str]:
    """Words with their trailing space, the way an LLM's tokens arrive."""
    return re.findall(r"\S+\s*", text)


async def _read_audio(client: AsyncTcpClient, end: str, started: float, timeout_s: float) -> tuple[float, float]:
    first: float | None = None
    audio_s = 0.0
    while True:
        async with asyncio.timeout(timeout_s):
            event = await client.read_event()
        if event is None:
            raise ConnectionError("the server closed the connection mid-request")
        if WyomingError.is_type(event.type):
            raise RuntimeError(f"server error: {WyomingError.from_event(event).text}")
        if AudioChunk.is_type(event.type):
            chunk = AudioChunk.from_event(event)
            first = first if first is not None else time.perf_counter() - started
            audio_s += chunk.seconds
        elif event.type == end:
            if first is None:
                raise RuntimeError("no audio came back")
            return first, audio_s


async def measure(
    client: AsyncTcpClient, address: str, mode: str, text: str, word_delay_s: float, timeout_s: float
) -> Measurement:
    started = time.perf_counter()
    if mode == "non_streaming":
        await client.write_event(Synthesize(text=text).event())
        ttfa, audio_s = await _read_audio(client, "audio-stop", started, timeout_s)
    else:
        reader = asyncio.create_task(_read_audio(client, "synthesize-stopped", started, timeout_s))
        await client.write_event(SynthesizeStart().event())
        for piece in word_pieces(text):
            await client.write_event(SynthesizeChunk(piece).event())
            if word_delay_s:
                await asyncio.sleep(word_delay_s)
        await client.write_event(Synthesize(text=text).event())
        await client.write_event(SynthesizeStop().event())
        ttfa, audio_s = await reader
    return Measurement(address, mode, text, ttfa, time.perf_counter() - started, audio_s)


async def _connect(address: str, mode: str, args: argparse.Namespace) -> tuple[AsyncTcpClient, str]:
    """A connection for one mode of one server, described and warmed up; returns it and the program's name."""
    host, _, port = address.rpartition(":")
    client = AsyncTcpClient(host, int(port))
    await client.connect()
    await client.write_event(Describe().event())
    async with asyncio.timeout(args.timeout):
        info = await client.read_event()
    if info is None:
        raise ConnectionError(f"{address} closed the connection on describe")
    program = Info.from_event(info).tts[0].name
    print(f"{address} ({program}): warming up {mode}", file=sys.stderr, flush=True)
    await measure(client, address, mode, args.texts[0], args.word_delay, args.timeout)
    return client, program


async def run_bench(args: argparse.Namespace) -> list[ServerRun]:
    runs = [ServerRun(address) for address in args.servers]
    # One connection per server and mode: wyoming-kokoro-torch 3.2.0 ignores every synthesize on a connection
    # that has streamed once (its streaming flag is never reset).
    clients: dict[tuple[str, str], AsyncTcpClient] = {}
    try:
        for run in runs:
            for mode in args.modes:
                clients[run.address, mode], run.program = await _connect(run.address, mode, args)
        for round_no in range(args.rounds):
            for text in args.texts:
                for mode in args.modes:
                    for run in runs:
                        client = clients[run.address, mode]
                        m = await measure(client, run.address, mode, text, args.word_delay, args.timeout)
                        run.measurements.append(m)
                        print(
                            f"r{round_no} {mode:<13} {run.program:<20} ttfa {m.ttfa_s * 1000:7.0f} ms  "
                            f"total {m.total_s * 1000:7.0f} ms  audio {m.audio_s:5.2f} s  rtf {m.rtf:5.2f}",
                            file=sys.stderr,
                            flush=True,
                        )
    finally:
        for client in clients.values():
            await client.disconnect()
    return runs


def report(runs: list[ServerRun], modes: tuple[str, ...]) -> str:
    lines = [
        "| mode | server | TTFA median (ms) | total median (ms) | audio median (s) | RTF median |",
        "|---" * 6 + "|",
    ]
    for mode in modes:
        for run in runs:
            ttfa, total = run.median(mode, "ttfa_s"), run.median(mode, "total_s")
            audio, rtf = run.median(mode, "audio_s"), run.median(mode, "rtf")
            if ttfa is None or total is None or audio is None or rtf is None:
                continue
            lines.append(
                f"| {mode} | {run.program} ({run.address}) | {ttfa * 1000:.0f} | {total * 1000:.0f} | "
                f"{audio:.2f} | {rtf:.2f} |"
            )
    if len(runs) == 2:
        a, b = runs
        lines += ["", f"| mode | TTFA {a.program} ÷ {b.program} | RTF {a.program} ÷ {b.program} |", "|---|---|---|"]
        for mode in modes:
            ta, tb = a.median(mode, "ttfa_s"), b.median(mode, "ttfa_s")
            ra, rb = a.median(mode, "rtf"), b.median(mode, "rtf")
            if ta and tb and ra and rb:
                lines.append(f"| {mode} | {ta / tb:.2f} | {ra / rb:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m voicedesk.app.lab.wyoming_bench", description=__doc__.split("\n")[0]
    )
    parser.add_argument("servers", nargs="+", metavar="HOST:PORT")
    parser.add_argument("--texts", nargs="+", default=list(DEFAULT_TEXTS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mode", choices=(*MODES, "both"), default="both")
    parser.add_argument("--word-delay", type=float, default=0.0, help="seconds between streamed words (default 0)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds any one event may take (default 120)")
    parser.add_argument("--json", type=Path, help="also write every measurement here")
    args = parser.parse_args(argv)
    args.modes = MODES if args.mode == "both" else (args.mode,)
    runs = asyncio.run(run_bench(args))
    print(report(runs, args.modes))
    if args.json:
        data = [
            {"address": r.address, "program": r.program, "measurements": [asdict(m) for m in r.measurements]}
            for r in runs
        ]
        args.json.write_text(json.dumps(data, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
