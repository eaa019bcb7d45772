"""A console's alarm sentence is spoken whole, year included, on every path (issue 32): the local engine, `serve`
through the WebSocket engine's client, and Wyoming through the ``wyoming`` library's client, all around the real
random-weight Kokoro. The agent pauses after "March 15," so "2025." is released as a chunk of its own (markdown
alone read it as an empty ordered-list item: 0.0 s of speech)."""

from __future__ import annotations

import pytest
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeVoice

from tests.endpoint.test_text_paths import Recording
from tests.endpoint.wyoming.conftest import client_of, read_until, running_wyoming
from tests.support.endpoint import server_settings
from tests.support.stand_in import collect_until, is_flushed
from voicedesk.endpoint.runner import ServerThread
from voicedesk.engine.engine_spec import EngineSpec
from voicedesk.engine.events import SentenceFinished, SessionConfig
from voicedesk.engine.factory import open_engine
from voicedesk.engine.local import LocalEngine

pytestmark = pytest.mark.slow

HEAD, YEAR = "Your alarm is set for 6:45 AM on March 15,", " 2025."
# No buffer delay: what the agent sent is released at once, as after a pause, so the year is a chunk of its own.
CONFIG = SessionConfig(voice="af_heart", max_buffer_delay_ms=0, report_phonemes=True)


@pytest.fixture(scope="module")
def recording(synthesizer) -> Recording:
    return Recording(synthesizer)


@pytest.fixture(scope="module")
def year_phonemes(synthesizer) -> str:
    """The year written out by hand, as the model receives it."""
    return synthesizer.prepare("twenty twenty five.", "af_heart").phonemes


async def streamed(engine) -> list[SentenceFinished]:  # type: ignore[no-untyped-def]
    session = await engine.open_session(CONFIG)
    try:
        await session.send_text(HEAD)
        await session.send_text(YEAR)
        await session.flush("f")
        got = await collect_until(session.events(), is_flushed("f"))
    finally:
        await session.aclose()
    return got.of(SentenceFinished)


async def test_the_alarm_is_spoken_whole_locally_and_through_serve(synthesizer, recording, year_phonemes) -> None:
    local = LocalEngine(synthesizer)
    try:
        finished = await streamed(local)
    finally:
        await local.aclose()
    assert len(finished) == 2 and all(f.duration_s > 0 for f in finished)
    assert finished[1].phonemes == year_phonemes

    from voicedesk.endpoint.server import create_app

    with ServerThread(create_app(recording, server_settings(idle_timeout_s=120))) as server:  # type: ignore[arg-type]
        websocket = await open_engine(EngineSpec(kind="websocket", target=server.ws_url))
        try:
            remote = await streamed(websocket)
        finally:
            await websocket.aclose()
    # The server may get both fragments before it releases the first: one sentence or two, the same words.
    assert " ".join(f.phonemes for f in remote) == " ".join(f.phonemes for f in finished)
    assert all(f.duration_s > 0 for f in remote)


async def test_the_alarm_is_spoken_whole_through_wyoming(recording, year_phonemes) -> None:
    engine = LocalEngine(recording)  # type: ignore[arg-type]
    try:
        async with running_wyoming(engine) as server:
            recording.take()  # the voice probe's own sentences
            async with client_of(server) as client:
                await client.write_event(Synthesize(HEAD + YEAR, voice=SynthesizeVoice("af_heart")).event())
                await read_until(client, "audio-stop")
                whole = recording.take()
                await client.write_event(SynthesizeStart(voice=SynthesizeVoice("af_heart")).event())
                for text in (HEAD, YEAR):
                    await client.write_event(SynthesizeChunk(text).event())
                await client.write_event(SynthesizeStop().event())
                await read_until(client, "synthesize-stopped")
                streaming = recording.take()
    finally:
        await engine.aclose()
    for said in (whole, streaming):
        assert said and all(said), said
        assert " ".join(said).endswith(f", {year_phonemes}"), said
