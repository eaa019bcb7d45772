"""Event-loop lag from WebSocket resampling, side by side (``python -m voicedesk.app.lab.resample_lag``).

N sessions at another rate (16 kHz by default) each receive one sentence of audio (3 s, speech-like) at a random
moment of every 3-s window, as a server streaming in real time does. *on the loop* resamples each sentence where it
arrives (what ``ServerConnection`` did before resampling moved off the loop); *executor* hands it to the loop's
executor as the WebSocket adapter does now (``ResampleJob.run``). Meanwhile a ticker asks the loop to wake every
5 ms and records how late it woke: that lateness is what every other session's frames, reads and timers wait. On a
busy machine that lateness is mostly other processes holding the cores, so the loop thread's own CPU time per
second (``time.thread_time``: what the loop itself spent, whatever the load) is printed too. Both modes alternate,
round after round, in one run, and the load average is printed with them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import time

import numpy as np

from voicedesk.app.lab.audio_formats_bench import speech_like
from voicedesk.engine.audio_formats import resample
from voicedesk.engine.connection import ResampleJob

SENTENCE_S = 3.0
TICK_S = 0.005


async def _one_round(sessions: int, rate: int, seconds: float, off_loop: bool, seed: int) -> tuple[list[float], float]:
    """The loop's lateness at each tick, and the loop thread's CPU seconds per second of the round."""
    loop = asyncio.get_running_loop()
    cpu_started = time.thread_time()
    pcm = speech_like(SENTENCE_S)
    rng = random.Random(seed)
    lags: list[float] = []
    pending: list[asyncio.Future[bytes]] = []
    stop = loop.time() + seconds

    def arrive(seq: int) -> None:
        if off_loop:
            pending.append(loop.run_in_executor(None, ResampleJob(pcm, rate, seq).run))
        else:
            resample(pcm, rate)

    windows = int(seconds / SENTENCE_S)
    for window in range(windows):
        for session in range(sessions):
            at = (window + rng.random()) * SENTENCE_S
            loop.call_later(at, arrive, window * sessions + session)
    while (now := loop.time()) < stop:
        await asyncio.sleep(TICK_S)
        lags.append(max(0.0, loop.time() - now - TICK_S))
    cpu_per_s = (time.thread_time() - cpu_started) / seconds
    await asyncio.gather(*pending)
    return lags, cpu_per_s


def _summary(lags: list[float]) -> tuple[float, float]:
    values = np.array(lags) * 1000
    return float(np.percentile(values, 99)), float(values.max())


async def _main(sessions: list[int], rate: int, rounds: int, seconds: float) -> None:
    print(f"resampling 24 kHz → {rate} Hz, {SENTENCE_S:g}-s sentences, {rounds} rounds of {seconds:g} s per mode")
    print(
        "| sessions | loop CPU ms/s: on the loop / executor (ratio) | lag p99 ms: on the loop / executor | "
        "lag max ms: on the loop / executor |"
    )
    print("|---|---|---|---|")
    for count in sessions:
        lags: dict[bool, list[float]] = {False: [], True: []}
        cpu: dict[bool, list[float]] = {False: [], True: []}
        for round_ in range(rounds):  # alternating, so the machine's load falls on both alike
            order = (False, True) if round_ % 2 == 0 else (True, False)
            for off_loop in order:
                round_lags, cpu_per_s = await _one_round(count, rate, seconds, off_loop, seed=round_)
                lags[off_loop].extend(round_lags)
                cpu[off_loop].append(cpu_per_s * 1000)
        (b99, bmax), (a99, amax) = _summary(lags[False]), _summary(lags[True])
        bcpu, acpu = float(np.median(cpu[False])), float(np.median(cpu[True]))
        print(
            f"| {count} | {bcpu:.1f} / {acpu:.1f} ({bcpu / max(acpu, 1e-3):.1f}×) | {b99:.1f} / {a99:.1f} |"
            f" {bmax:.1f} / {amax:.1f} |"
        )
    print("load average: " + " / ".join(f"{x:.1f}" for x in os.getloadavg()), f"({time.strftime('%H:%M')})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[4, 16])
    parser.add_argument("--rate", type=int, default=16_000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=6.0, help="per round and mode (whole 3-s windows)")
    args = parser.parse_args()
    asyncio.run(_main(args.sessions, args.rate, args.rounds, args.seconds))


if __name__ == "__main__":
    main()
