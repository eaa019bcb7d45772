"""One session contract, run against every engine: local (in process), websocket (the endpoint on loopback) and
sagemaker (the same endpoint behind the SageMaker stand-in, through the real HTTP/2 SDK).

What every ``engine.api.Session`` promises, whichever engine runs it: sentences in order with their audio, flush
answered after the last one, cancel answering what it drops and leaving no stale audio, close finishing what was
asked, a bad voice reported without ending the session, and finished text spoken without a flush (release on quiet).
Engine-specific behaviour (connection loss, credentials, renewal) is tested beside each engine.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator

import pytest

from tests.engine.clients.test_sagemaker_engine import spec_for
from tests.support.stand_in import collect_until, is_closed, is_flushed
from voicedesk.engine.api import Engine
from voicedesk.engine.engine_spec import EngineSpec
from voicedesk.engine.events import (
    BYTES_PER_SAMPLE,
    SAMPLE_RATE,
    Audio,
    Cancelled,
    Closed,
    Error,
    Flushed,
    SentenceFinished,
    SentenceStarted,
    SessionConfig,
)
from voicedesk.engine.factory import open_engine
from voicedesk.engine.local import LocalEngine

# Short (three engines speak them), yet each its own chunk: a first sentence of 3 words, the rest of 20 characters.
THREE = "The sun is up. Birds are singing now. We walk to the lake."
THREE_SENTENCES = ["The sun is up.", "Birds are singing now.", "We walk to the lake."]


@pytest.fixture(params=["local", "websocket", "sagemaker"])
async def engine(request: pytest.FixtureRequest, synthesizer, server) -> AsyncIterator[Engine]:  # type: ignore[no-untyped-def]
    if request.param == "local":
        opened: Engine = LocalEngine(synthesizer)
    elif request.param == "websocket":
        opened = await open_engine(EngineSpec(kind="websocket", target=server.ws_url))
    else:
        request.getfixturevalue("aws_env")
        opened = await open_engine(spec_for(request.getfixturevalue("stand_in")))
    assert opened.info.kind == request.param
    yield opened
    await opened.aclose()


async def test_sentences_come_in_order_with_their_audio_and_the_flush_after_the_last(engine: Engine) -> None:
    session = await engine.open_session(SessionConfig(voice="af_heart"))
    await session.send_text(THREE)
    await session.flush("turn-1")
    got = await collect_until(session.events(), is_flushed("turn-1"))
    started, finished = got.of(SentenceStarted), got.of(SentenceFinished)
    assert [s.text for s in started] == THREE_SENTENCES
    assert [f.seq for f in finished] == [s.seq for s in started]
    assert all(a.seq < b.seq for a, b in itertools.pairwise(started))
    for sentence in finished:
        pcm = got.audio_bytes(sentence.seq)
        assert pcm > 0
        assert sentence.duration_s == pytest.approx(pcm / (BYTES_PER_SAMPLE * SAMPLE_RATE), abs=1e-3)
    assert not got.of(Error)
    assert got.events[-1] == Flushed(started[-1].seq, "turn-1")
    await session.close()
    rest = await collect_until(session.events(), is_closed)
    assert isinstance(rest.events[-1], Closed)


async def test_cancel_answers_what_it_drops_and_no_stale_audio_follows(engine: Engine) -> None:
    session = await engine.open_session()
    await session.send_text("One two three. Four five six. Seven eight nine. Done now.")
    await session.flush("dropped")
    await collect_until(session.events(), lambda e: isinstance(e, Audio))
    await session.cancel()
    got = await collect_until(session.events(), lambda e: isinstance(e, Cancelled))
    cancelled = got.of(Cancelled)[0]
    answered = [e for e in got.of(Flushed) if e.request_id == "dropped"]
    assert answered and answered[0].cancelled, "the pending flush is answered, marked cancelled"

    await session.send_text("Fresh words.")
    await session.flush("after")
    after = await collect_until(session.events(), is_flushed("after"))
    stale = [e for e in after.events if isinstance(e, Audio | SentenceStarted) and e.seq <= cancelled.last_seq]
    assert stale == []
    assert [s.text for s in after.of(SentenceStarted)] == ["Fresh words."]
    assert after.audio_bytes() > 0
    await session.aclose()


async def test_close_finishes_what_was_asked_then_ends(engine: Engine) -> None:
    session = await engine.open_session()
    await session.send_text("Unfinished words without an end")
    await session.close()
    got = await collect_until(session.events(), is_closed)
    assert [s.text for s in got.of(SentenceStarted)] == ["Unfinished words without an end"]
    assert got.audio_bytes() > 0
    assert isinstance(got.events[-1], Closed)


async def test_a_voice_the_engine_lacks_is_an_error_and_the_session_goes_on(engine: Engine) -> None:
    session = await engine.open_session(SessionConfig(voice="bf_emma"))
    await session.configure(voice="zz_missing")
    await session.send_text("Still speaking.")
    await session.close()
    got = await collect_until(session.events(), is_closed)
    errors = got.of(Error)
    assert [e.code for e in errors] == ["unknown_voice"]
    assert [s.text for s in got.of(SentenceStarted)] == ["Still speaking."]


async def test_a_finished_sentence_is_spoken_when_the_agent_pauses_without_a_flush(engine: Engine) -> None:
    session = await engine.open_session()
    await session.send_text("Sure, I will turn off the lights.")  # then the agent calls a tool: no flush, no text
    got = await collect_until(session.events(), lambda e: isinstance(e, SentenceFinished))
    assert " ".join(s.text for s in got.of(SentenceStarted)).split() == "Sure, I will turn off the lights.".split()
    await session.aclose()
