"""The Wyoming server around the real random-weight Kokoro, driven by the ``wyoming`` library's own async client."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error as WyomingError
from wyoming.info import Describe, Info
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeVoice

from tests.endpoint.wyoming.conftest import (
    GUARD_S,
    client_of,
    kinds,
    read_to_close,
    read_until,
    running_wyoming,
    wait_for,
)
from voicedesk.endpoint.wyoming.server import TtsConnection, WyomingTtsServer
from voicedesk.engine.events import SAMPLE_RATE
from voicedesk.engine.local import LocalEngine, LocalSession
from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker

pytestmark = pytest.mark.slow


def only_connection(server: WyomingTtsServer) -> TtsConnection:
    [connection] = server.connections
    return connection


def check_audio_cycle(events: list, samples_per_chunk: int = 1024) -> int:
    """One audio-start … audio-stop cycle at 24 kHz / 16 bit / mono; returns its number of samples."""
    cycle = [e for e in events if e.type in ("audio-start", "audio-chunk", "audio-stop")]
    assert kinds(cycle)[0] == "audio-start" and kinds(cycle)[-1] == "audio-stop"
    assert kinds(cycle).count("audio-start") == kinds(cycle).count("audio-stop") == 1
    start = AudioStart.from_event(cycle[0])
    assert (start.rate, start.width, start.channels) == (SAMPLE_RATE, 2, 1)
    chunks = [AudioChunk.from_event(e) for e in cycle[1:-1]]
    assert chunks, "no audio"
    assert all(0 < c.samples <= samples_per_chunk for c in chunks)
    assert all((c.rate, c.width, c.channels) == (SAMPLE_RATE, 2, 1) for c in chunks)
    samples = sum(c.samples for c in chunks)
    assert AudioStop.from_event(cycle[-1]).timestamp == samples * 1000 // SAMPLE_RATE
    return samples


async def test_describe_lists_the_engines_voices_with_their_languages(local_engine: LocalEngine) -> None:
    async with running_wyoming(local_engine) as server, client_of(server) as client:
        await client.write_event(Describe().event())
        [info_event] = await read_until(client, "info")
        program = Info.from_event(info_event).tts[0]
        assert program.supports_synthesize_streaming
        assert {v.name: v.languages for v in program.voices} == {
            "af_heart": ["en_US"],
            "am_adam": ["en_US"],
            "bf_emma": ["en_GB"],
        }
        assert server.sessions_opened == 0  # describing costs no session


async def test_both_paths_and_several_requests_share_one_session(local_engine: LocalEngine) -> None:
    async with running_wyoming(local_engine) as server, client_of(server) as client:
        await client.write_event(Synthesize(text="Hello there.").event())
        first = await read_until(client, "audio-stop")
        assert check_audio_cycle(first) > 0

        # Home Assistant's streaming order: start, chunks, the whole text again (for old servers), stop.
        voice = SynthesizeVoice(name="bf_emma")
        await client.write_event(SynthesizeStart(voice=voice).event())
        for piece in ("Good morning", " to you, my", " friend."):
            await client.write_event(SynthesizeChunk(piece).event())
        await client.write_event(Synthesize(text="Good morning to you, my friend.", voice=voice).event())
        await client.write_event(SynthesizeStop().event())
        streamed = await read_until(client, "synthesize-stopped")
        assert kinds(streamed)[-2:] == ["audio-stop", "synthesize-stopped"]
        assert check_audio_cycle(streamed) > 0
        session = only_connection(server).session
        assert isinstance(session, LocalSession) and session.config.voice == "bf_emma"

        await client.write_event(Synthesize(text="Bye now.", voice=SynthesizeVoice(name="am_adam")).event())
        assert check_audio_cycle(await read_until(client, "audio-stop")) > 0
        assert session.config.voice == "am_adam"
        assert server.sessions_opened == 1


async def test_streamed_text_is_spoken_before_the_stream_ends(local_engine: LocalEngine) -> None:
    async with running_wyoming(local_engine) as server, client_of(server) as client:
        await client.write_event(SynthesizeStart().event())
        await client.write_event(SynthesizeChunk("Good morning to you. The sun is up").event())
        # No synthesize-stop yet: the first sentence is complete, so its audio must come anyway.
        early = await read_until(client, "audio-chunk")
        assert kinds(early) == ["audio-start", "audio-chunk"]
        await client.write_event(SynthesizeChunk(" today.").event())
        await client.write_event(SynthesizeStop().event())
        rest = await read_until(client, "synthesize-stopped")
        assert check_audio_cycle(early + rest) > 0


@pytest.mark.parametrize(
    ("request_event", "code"),
    [
        (Synthesize(text="Hi.", voice=SynthesizeVoice(name="af_nicole")).event(), "unknown_voice"),
        (Synthesize(text=" ").event(), "empty_text"),
        (Synthesize(text="This sentence is longer than forty characters.").event(), "text_too_long"),
        (SynthesizeChunk("Hi.").event(), "bad_message"),
    ],
)
async def test_bad_requests_get_an_error_and_a_closed_connection(
    local_engine: LocalEngine, request_event, code: str
) -> None:
    async with running_wyoming(local_engine, max_chars=40) as server, client_of(server) as client:
        await client.write_event(request_event)
        [error_event] = await read_to_close(client)
        error = WyomingError.from_event(error_event)
        assert error.code == code and error.text
        await wait_for(lambda: not server.connections, "the connection was not closed")
        assert local_engine.scheduler.pending == 0


async def test_a_client_that_vanishes_mid_stream_leaves_no_work_behind(local_engine: LocalEngine) -> None:
    text = (
        "Good morning to you. The sun is up over the hill. We can go outside now. "
        "The cat sat on a mat all day. The dog ran off into the woods. The bird flew up very high. "
    )
    chunker = IncrementalSentenceChunker()
    sentences = len([*chunker.feed(text), chunker.flush()])
    assert sentences >= 5
    scheduler = local_engine.scheduler
    async with running_wyoming(local_engine) as server:
        client = client_of(server)
        await client.connect()
        await client.write_event(SynthesizeStart().event())
        for word in text.split(" "):
            await client.write_event(SynthesizeChunk(word + " ").event())
        await read_until(client, "audio-chunk")
        session = only_connection(server).session
        assert isinstance(session, LocalSession)
        jobs_before = scheduler.jobs_run
        await client.disconnect()  # gone mid-stream, without synthesize-stop

        await wait_for(lambda: not server.connections, "the server kept the vanished client's connection")
        assert session.core.closed
        assert session.id not in scheduler.pending_sessions() or scheduler.busy  # at most the running sentence
        assert await scheduler.wait_idle(GUARD_S)
        assert session.id not in scheduler.pending_sessions()
        assert scheduler.pending == 0
        # The sentence being synthesized may finish; nothing queued behind it runs.
        assert scheduler.jobs_run - jobs_before <= 2 < sentences - 1


async def test_wyoming_bench_measures_both_paths(local_engine: LocalEngine) -> None:
    """The third-party benchmark, unchanged: its command line for the non-streaming path (and its reading of our
    ``info``), its own measuring client for the streaming one.

    The command's streaming mode first probes with an 8 s cap on the wait for audio, too little for the
    random-weight model on a busy 2-core machine, so the streaming measurement is called with a generous timeout."""
    from wyoming_bench.const import MODE_STREAMING
    from wyoming_bench.tts.client import measure_once

    bench = Path(sys.executable).with_name("wyoming-bench")
    async with running_wyoming(local_engine) as server:
        port = server.settings.port
        process = await asyncio.create_subprocess_exec(
            str(bench),
            "tts",
            f"127.0.0.1:{port}",
            "--texts",
            "Hello there.",
            "--rounds",
            "1",
            "--warmup",
            "0",
            "--mode",
            "non_streaming",
            "--timeout",
            str(int(GUARD_S)),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        async with asyncio.timeout(GUARD_S * 2):
            output, _ = await process.communicate()
        streamed = await measure_once(
            "127.0.0.1", port, MODE_STREAMING, "Good morning to you. The sun is up.", None, None, 10.0, GUARD_S
        )
    report = output.decode()
    assert process.returncode == 0, report
    assert "voicedesk - non-streaming, streaming" in report  # read from our info
    assert "[non_streaming] ok=1 fail=0" in report, report
    assert streamed.ok, streamed.error
    assert streamed.n_audio_cycles == 1 and streamed.audio_duration_s > 0
    assert (streamed.sample_rate, streamed.sample_width, streamed.channels) == (SAMPLE_RATE, 2, 1)
