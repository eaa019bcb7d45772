"""``voicedesk bench engine``: what our engine path costs over a bare ``KPipeline``, measured side by side.

Both paths synthesize the same chunks (the ones our chunker makes from the text) with the same model and voice
pack, alternating A B B A … so drift in machine load hits both alike. The ratio is bare time ÷ our time
(throughput of our path relative to bare; 1.0 = no overhead, goal ≥ 0.97). Whole-text ``KPipeline`` (one call,
packing up to 510 phonemes per forward pass) is shown for context: it is what sentence streaming gives up in
raw throughput to start speaking early.

RTF here is audio seconds per compute second (above 1 = faster than real time), per chunk length in words.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from voicedesk.engine.model.voices import DEFAULT_VOICE

DEFAULT_TEXT = (
    "Good evening, and welcome back to the console. The kitchen lights are off and the front door is locked. "
    "Tomorrow looks clear, with a high of twenty one degrees. Your package from the pharmacy should arrive "
    "before noon. Would you like me to start the dishwasher now, or wait until the rates drop at ten?"
)
CHUNK_LENGTHS_WORDS = (4, 8, 16, 32)


@dataclass
class EngineBenchReport:
    device: str
    chunks: int
    repeats: int
    bare_s: list[float] = field(default_factory=list)
    ours_s: list[float] = field(default_factory=list)
    whole_text_s: list[float] = field(default_factory=list)
    audio_s: float = 0.0
    rtf_by_words: dict[int, float] = field(default_factory=dict)

    @property
    def throughput_ratio(self) -> float:
        """Median over pairs of bare ÷ ours: each pair ran back to back, so a load spike hits one pair only."""
        return statistics.median(b / o for b, o in zip(self.bare_s, self.ours_s, strict=True))

    @property
    def best_ratio(self) -> float:
        """Best bare ÷ best ours: the least disturbed run of each (the usual throughput convention)."""
        return min(self.bare_s) / min(self.ours_s)

    def to_json(self) -> dict[str, object]:
        body = asdict(self)
        body["throughput_ratio"] = self.throughput_ratio
        body["best_ratio"] = self.best_ratio
        body["goal"] = ">= 0.97"
        return body


def register_bench(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "engine", help="our engine path vs bare KPipeline on the same text (ratio), and RTF per chunk length"
    )
    parser.add_argument("--text-file", type=Path, help="text to synthesize (default: a short console reply)")
    parser.add_argument("--repeat", type=int, default=3, help="pairs of runs (default 3)")
    parser.add_argument("--voice", default=DEFAULT_VOICE)
    parser.add_argument("--device", help="cpu, cuda or cuda:N (default: CUDA when present)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from voicedesk.engine.model.kokoro_synth import KokoroSynthesizer

    text = args.text_file.read_text(encoding="utf-8") if args.text_file else DEFAULT_TEXT
    progress = (lambda msg: None) if args.json else (lambda msg: print(msg, file=sys.stderr, flush=True))
    progress("bench engine: loading the model…")
    synthesizer = KokoroSynthesizer.load(args.device)
    report = run_engine_bench(synthesizer, text, args.voice, max(args.repeat, 1), progress)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(format_report(report))
    return 0


def _chunks(text: str) -> list[str]:
    from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker

    chunker = IncrementalSentenceChunker()
    chunks = chunker.feed(text)
    rest = chunker.flush()
    return [*chunks, rest] if rest else chunks


def _bare(synthesizer, chunks: list[str], voice: str) -> tuple[float, float]:
    """Bare KPipeline over the chunks; returns (seconds, audio seconds)."""
    from voicedesk.engine.model.voices import language_of

    _, pack = synthesizer.resolve_voice(voice)
    pipeline = synthesizer.pipeline(language_of(voice))
    started = time.perf_counter()
    samples = 0
    for chunk in chunks:
        for result in pipeline(chunk, voice=pack, speed=1.0):
            if result.audio is not None:
                samples += len(result.audio)
    return time.perf_counter() - started, samples / 24_000


def _whole(synthesizer, text: str, voice: str) -> float:
    from voicedesk.engine.model.voices import language_of

    _, pack = synthesizer.resolve_voice(voice)
    pipeline = synthesizer.pipeline(language_of(voice))
    started = time.perf_counter()
    for _ in pipeline(text, voice=pack, speed=1.0):
        pass
    return time.perf_counter() - started


async def _ours(synthesizer, text: str, voice: str) -> float:
    """Our whole path: session, chunker, scheduler worker thread, seams, PCM16 — until the last sentence."""
    from voicedesk.engine.events import Closed, Error, SessionConfig
    from voicedesk.engine.local import LocalEngine

    engine = LocalEngine(synthesizer)
    try:
        started = time.perf_counter()
        session = await engine.open_session(SessionConfig(voice=voice))
        await session.send_text(text)
        await session.close()
        async for event in session.events():
            if isinstance(event, Error):
                raise RuntimeError(f"engine error during the benchmark: {event.message}")
            if isinstance(event, Closed):
                break
        return time.perf_counter() - started
    finally:
        await engine.aclose()


def run_engine_bench(synthesizer, text: str, voice: str, repeats: int, progress=print) -> EngineBenchReport:
    chunks = _chunks(text)
    report = EngineBenchReport(device=synthesizer.device, chunks=len(chunks), repeats=repeats)
    progress(f"bench engine: warming up ({len(chunks)} chunks, {len(text)} characters)…")
    _bare(synthesizer, chunks[:1], voice)
    asyncio.run(_ours(synthesizer, chunks[0], voice))
    for i in range(repeats):
        order = ("bare", "ours") if i % 2 == 0 else ("ours", "bare")
        for which in order:
            if which == "bare":
                seconds, report.audio_s = _bare(synthesizer, chunks, voice)
                report.bare_s.append(seconds)
            else:
                report.ours_s.append(asyncio.run(_ours(synthesizer, text, voice)))
        report.whole_text_s.append(_whole(synthesizer, text, voice))
        progress(
            f"bench engine: pair {i + 1}/{repeats}: bare {report.bare_s[-1]:.2f} s, ours {report.ours_s[-1]:.2f} s"
        )
    words = text.split()
    for length in CHUNK_LENGTHS_WORDS:
        chunk = " ".join(words[:length])
        if len(words) < length:
            break
        seconds, audio = _bare(synthesizer, [chunk], voice)
        report.rtf_by_words[length] = audio / seconds if seconds else float("inf")
        progress(f"bench engine: {length}-word chunk: {audio:.2f} s audio in {seconds:.2f} s")
    return report


def format_report(report: EngineBenchReport) -> str:
    med = statistics.median
    lines = [
        f"Engine throughput on {report.device}: {report.chunks} chunks, {report.audio_s:.2f} s of audio, "
        f"{report.repeats} alternating pairs (median times)",
        "",
        f"  bare KPipeline, same chunks   {med(report.bare_s):8.3f} s",
        f"  voicedesk engine path         {med(report.ours_s):8.3f} s",
        f"  throughput ratio (bare/ours)  {report.throughput_ratio:8.3f}   goal >= 0.97 (median of pair ratios)",
        f"  best bare / best ours         {report.best_ratio:8.3f}",
        f"  whole-text KPipeline (context){med(report.whole_text_s):8.3f} s   "
        f"(one call; sentence streaming trades this for early first audio)",
        "",
        "  RTF per chunk length (audio seconds per compute second; > 1 is faster than real time)",
    ]
    for words, rtf in report.rtf_by_words.items():
        lines.append(f"    {words:3d} words   {rtf:6.2f}x")
    return "\n".join(lines)
