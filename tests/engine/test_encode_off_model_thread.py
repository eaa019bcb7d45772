"""Where a sentence's PCM16 is made: not on the model's thread (free for the next forward meanwhile) and not on the
event loop; the lab's server times it from outside the serving path."""

from __future__ import annotations

import asyncio
import threading

from voicedesk.app.lab import bench_serve
from voicedesk.app.lab.paced_synth import PacedSynthesizer
from voicedesk.engine import session_driver
from voicedesk.engine.events import Audio, SentenceFinished
from voicedesk.engine.scheduler import SynthesisScheduler
from voicedesk.engine.session import SessionCore
from voicedesk.engine.session_driver import SessionDriver
from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker


class ThreadNoting(PacedSynthesizer):
    """The paced stand-in, noting the thread each synthesis ran on."""

    def __init__(self) -> None:
        super().__init__(realtime_factor=200.0)
        self.threads: list[str] = []

    def synthesize(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.threads.append(threading.current_thread().name)
        return super().synthesize(*args, **kwargs)


async def test_pcm16_is_made_off_the_loop_and_off_the_model_thread(monkeypatch):
    synthesizer = ThreadNoting()
    scheduler = SynthesisScheduler(name="model")
    encoded_on: list[str] = []
    real_finish = session_driver.finish_sentence

    def noting_finish(*args):  # type: ignore[no-untyped-def]
        encoded_on.append(threading.current_thread().name)
        return real_finish(*args)

    monkeypatch.setattr(session_driver, "finish_sentence", noting_finish)  # restored after the test, timer and all
    bench_serve.time_encoding()
    timed_before = len(bench_serve.ENCODE_CPU_S)
    core = SessionCore(IncrementalSentenceChunker())
    emitted: list[object] = []
    done = asyncio.Event()

    def emit(events: list[object]) -> None:
        emitted.extend(events)
        if (
            any(isinstance(e, SentenceFinished) for e in events)
            and sum(isinstance(e, SentenceFinished) for e in emitted) == 2
        ):
            done.set()

    driver = SessionDriver(core, synthesizer, scheduler, "s1", emit)
    driver.apply(core.send_text("Good morning to you. The kettle is on.", 0.0))
    driver.apply(core.flush(0.0))
    await asyncio.wait_for(done.wait(), 30)
    loop_thread = threading.current_thread().name
    assert synthesizer.threads and all(name.startswith("model") for name in synthesizer.threads)
    assert len(encoded_on) == 2
    assert not any(name.startswith("model") or name == loop_thread for name in encoded_on)
    assert len(bench_serve.ENCODE_CPU_S) == timed_before + 2
    assert b"".join(e.pcm for e in emitted if isinstance(e, Audio))
    driver.stop()
    await scheduler.aclose()
