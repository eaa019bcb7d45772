"""Sessions that outlive their streams, for real: the sagemaker engine (the HTTP/2 SDK over awscrt) through the
stand-in to the real container; the websocket engine straight to it. Streams are renewed between utterances,
and a stream that ends mid-utterance (dropped, its container shutting down, past its time limit) is replaced
without losing or repeating a sentence."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from tests.support.stand_in import (
    ENDPOINT,
    GUARD_S,
    REGION,
    Collected,
    StandInThread,
    abort_connections,
    collect_until,
    is_closed,
    is_flushed,
)
from voicedesk.app.lab.sagemaker_local.config import ContainerTarget
from voicedesk.endpoint.runner import ServerThread
from voicedesk.engine.clients.resuming import ResumingSession
from voicedesk.engine.clients.sagemaker import SageMakerEngine
from voicedesk.engine.clients.websocket import WebSocketEngine, WebSocketSettings
from voicedesk.engine.engine_spec import EngineSpec
from voicedesk.engine.errors import LocalErrorCode
from voicedesk.engine.events import Audio, Closed, Error, Event, Flushed, SentenceFinished, SentenceStarted

TEXT = "The sun is up over the hill. Birds are singing in the trees. We walk down to the lake."
SHORT_TEXT = "The sun is up over the hill. Birds are singing in the trees."


def engine_for(stand_in: StandInThread, **options: object) -> SageMakerEngine:
    options = {"endpoint_url": stand_in.url, "ca_file": str(stand_in.ca_file), **options}
    return SageMakerEngine.from_spec(EngineSpec(kind="sagemaker", target=ENDPOINT, region=REGION, options=options))


async def until(condition: Callable[[], bool]) -> None:
    """Waits for a condition another task or thread makes true (bounded by GUARD_S)."""
    async with asyncio.timeout(GUARD_S):
        while not condition():  # noqa: ASYNC110 - set by other tasks and the stand-in's thread; polled, bounded
            await asyncio.sleep(0.01)


async def speak_and_interrupt(session: ResumingSession, interrupt: Callable[[], object], text: str = TEXT) -> Collected:
    """Speaks ``text``, runs ``interrupt`` once the first audio arrived (the next sentence is being made), and
    collects every event up to the utterance's ``Flushed``."""
    await session.send_text(text)
    await session.flush("turn-1")
    got = Collected()
    interrupted = False
    async with asyncio.timeout(GUARD_S):
        async for event in session.events():
            got.events.append(event)
            if isinstance(event, Audio) and not interrupted:
                interrupted = True
                await asyncio.to_thread(interrupt)
            if is_flushed("turn-1")(event) or isinstance(event, Closed):
                break
    assert interrupted
    return got


def assert_said_exactly_once(got: Collected, text: str) -> None:
    """Every word once, in order; every announced sentence heard and finished; numbering never goes back."""
    assert not got.of(Error), got.of(Error)
    started = got.of(SentenceStarted)
    assert " ".join(s.text for s in started).split() == text.split()
    seqs = [s.seq for s in started]
    assert seqs == sorted(set(seqs))
    for sentence in started:
        assert got.audio_bytes(sentence.seq) > 0
        assert [f.seq for f in got.of(SentenceFinished)].count(sentence.seq) == 1
    events: list[Event] = got.events
    assert events[-1] == Flushed(seqs[-1], "turn-1")


@pytest.mark.slow
async def test_a_dropped_stream_is_replaced_mid_utterance(stand_in: StandInThread) -> None:
    engine = engine_for(stand_in)
    session = await engine.open_session()
    assert isinstance(session, ResumingSession)
    got = await speak_and_interrupt(session, lambda: stand_in.drop_connections())
    assert_said_exactly_once(got, TEXT)
    assert session.stats.reconnects == 1 and session.stats.streams_opened == 2
    await session.close()
    assert (await collect_until(session.events(), is_closed)).events[-1] == Closed("closed")
    await engine.aclose()


@pytest.mark.slow
async def test_a_container_shutting_down_hands_the_rest_to_another(
    container: ServerThread, make_container, make_stand_in
) -> None:
    """Scale-in: the container finishes its sentence and says "server shutting down"; SageMaker routes the next
    stream to another instance (here: the stand-in's target is switched to a second container)."""
    leaving = make_container()
    stand_in = make_stand_in(leaving.http_url)
    engine = engine_for(stand_in)
    session = await engine.open_session()

    def scale_in() -> None:
        stand_in.config.container = ContainerTarget(container.http_url)
        leaving.stop()

    got = await speak_and_interrupt(session, scale_in)
    assert_said_exactly_once(got, TEXT)
    assert session.stats.reconnects == 1
    await session.close()
    assert (await collect_until(session.events(), is_closed)).events[-1] == Closed("closed")
    await engine.aclose()


async def test_an_idle_stream_past_its_time_limit_is_replaced_before_the_next_utterance(
    container: ServerThread, make_stand_in
) -> None:
    stand_in = make_stand_in(container.http_url, max_stream_duration_s=1.0)
    engine = engine_for(stand_in, renew_after_s=None)  # no renewal: the stand-in's limit ends the stream
    session = await engine.open_session()
    assert isinstance(session, ResumingSession)
    await until(lambda: session.stats.reconnects >= 3)  # an idle session never gives up on its streams
    assert stand_in.config.expired_streams >= 3
    # Long enough for a sentence from the next stream on (a stream keeps the limit it started with).
    stand_in.config.max_stream_duration_s = 1800
    replaced = session.stats.reconnects
    await until(lambda: session.stats.reconnects > replaced)
    await session.send_text("Still here.")
    await session.close()
    got = await collect_until(session.events(), is_closed)
    assert not got.of(Error)
    assert [s.text for s in got.of(SentenceStarted)] == ["Still here."] and got.audio_bytes() > 0
    assert got.events[-1] == Closed("closed")
    await engine.aclose()


async def test_streams_are_renewed_between_utterances_never_during_one(stand_in: StandInThread) -> None:
    calls_before = stand_in.config.calls.count("bidi")
    engine = engine_for(stand_in, renew_after_s=0.2)
    session = await engine.open_session()
    assert isinstance(session, ResumingSession)

    await session.send_text("First words")  # no sentence end yet: the server holds this text
    await asyncio.sleep(0.5)  # not a wait for a result: it makes the stream older than its renewal age
    assert session.stats.renewals == 0  # due, but text is in flight
    await session.send_text(" here.")
    await session.flush("turn-1")
    first = await collect_until(session.events(), is_flushed("turn-1"))
    await until(lambda: session.stats.renewals == 1)  # as soon as nothing was in flight

    await session.send_text("Second words here.")
    await session.close()
    second = await collect_until(session.events(), is_closed)
    assert not first.of(Error) and not second.of(Error)
    assert [s.text for s in first.of(SentenceStarted)] == ["First words here."]
    assert [s.text for s in second.of(SentenceStarted)] == ["Second words here."]
    assert second.of(SentenceStarted)[0].seq > first.of(SentenceStarted)[0].seq
    assert second.events[-1] == Closed("closed")
    # The first stream and one per renewal (more if the test paused long between the utterances); none expired.
    assert stand_in.config.calls.count("bidi") - calls_before == 1 + session.stats.renewals
    assert session.stats.reconnects == 0 and stand_in.config.expired_streams == 0
    await engine.aclose()


async def test_a_reconnect_that_cannot_reach_the_endpoint_ends_the_session_for_failover(make_container, make_stand_in):
    leaving = make_container()
    stand_in = make_stand_in(leaving.http_url)
    engine = engine_for(stand_in)
    session = await engine.open_session()
    await session.send_text("Hello there.")
    await asyncio.to_thread(leaving.stop)  # no container to go on with
    got = await collect_until(session.events(), is_closed)
    error = got.of(Error)[-1]
    assert error.fatal and error.code == LocalErrorCode.CONNECTION
    assert "shut down" in error.message and "Reconnecting failed: The model container" in error.message
    assert got.events[-1] == Closed("connection lost")
    await engine.aclose()


@pytest.mark.slow
async def test_the_websocket_engine_reconnects_when_asked(make_container) -> None:
    server = make_container()
    engine = WebSocketEngine(WebSocketSettings(url=f"{server.ws_url}/invocations-bidirectional-stream", reconnect=True))
    session = await engine.open_session()
    assert isinstance(session, ResumingSession)
    got = await speak_and_interrupt(session, lambda: abort_connections(server), SHORT_TEXT)
    assert_said_exactly_once(got, SHORT_TEXT)
    assert session.stats.reconnects == 1
    await session.close()
    assert (await collect_until(session.events(), is_closed)).events[-1] == Closed("closed")
