"""The in-process engine beyond the shared session contract (tests/engine/test_session_contract.py): seams, voices."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from voicedesk.engine.errors import VoiceError
from voicedesk.engine.events import (
    BYTES_PER_SAMPLE,
    SAMPLE_RATE,
    Audio,
    Closed,
    Error,
    Event,
    Flushed,
    SentenceFinished,
    SentenceStarted,
    SessionConfig,
)
from voicedesk.engine.local import LocalEngine
from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker

EVENT_WAIT_S = 180.0
"""A guard against hanging forever on a busy 2-core machine, not a speed requirement."""


@pytest.fixture
async def engine(synthesizer) -> AsyncIterator[LocalEngine]:
    local = LocalEngine(synthesizer)
    yield local
    await local.aclose()


async def read_until(events: AsyncIterator[Event], done: Callable[[Event], bool]) -> list[Event]:
    seen: list[Event] = []
    while True:
        event = await asyncio.wait_for(anext(events), EVENT_WAIT_S)
        seen.append(event)
        if done(event):
            return seen


def expected_chunks(*fragments: str) -> list[str]:
    chunker = IncrementalSentenceChunker()
    chunks = [c for f in fragments for c in chunker.feed(f)]
    rest = chunker.flush()
    return [*chunks, rest] if rest else chunks


def check_sentence_order(events: list[Event]) -> list[int]:
    """Each sentence: Started, Audio..., Finished, with its audio adding up to its duration. Returns the seqs."""
    seqs: list[int] = []
    open_seq: int | None = None
    audio_bytes = 0
    for event in events:
        if isinstance(event, SentenceStarted):
            assert open_seq is None, f"sentence {event.seq} started while {open_seq} was still open"
            assert not seqs or event.seq > seqs[-1]
            open_seq, audio_bytes = event.seq, 0
            seqs.append(event.seq)
        elif isinstance(event, Audio):
            assert event.seq == open_seq
            audio_bytes += len(event.pcm)
        elif isinstance(event, SentenceFinished):
            assert event.seq == open_seq
            assert audio_bytes > 0
            assert event.duration_s == pytest.approx(audio_bytes / (BYTES_PER_SAMPLE * SAMPLE_RATE))
            assert event.words, "word timings are reported"
            for word in event.words:
                assert 0.0 <= word.start_s <= word.end_s <= event.duration_s + 1e-9
            assert event.synthesis_s > 0
            open_seq = None
    assert open_seq is None
    return seqs


async def test_two_sentences_and_flush_arrive_in_order(engine, synthesizer):
    first, second = "Hello there, my good friend. ", "How are you today?"
    chunks = expected_chunks(first, second)
    assert len(chunks) == 2
    session = await engine.open_session(SessionConfig(voice="af_heart"))
    events = session.events()
    await session.send_text(first)
    await session.send_text(second)
    await session.flush(request_id="r1")
    seen = await read_until(events, lambda e: isinstance(e, Flushed))
    assert not [e for e in seen if isinstance(e, Error)]
    seqs = check_sentence_order(seen)
    assert seqs == [0, 1]
    assert [e.text for e in seen if isinstance(e, SentenceStarted)] == chunks
    assert seen[-1] == Flushed(last_seq=1, request_id="r1")
    # Seams add the sentence pause to Kokoro's audio (random weights: noise, so nothing is trimmed).
    raw = synthesizer.synthesize(chunks[0], "af_heart", 1.0)
    finished = next(e for e in seen if isinstance(e, SentenceFinished) and e.seq == 0)
    assert finished.duration_s == pytest.approx(raw.duration_s + 0.3, abs=0.05)
    await session.close()
    rest = [e async for e in events]
    assert rest == [Closed()]


async def test_the_next_sentence_is_prepared_while_the_current_one_is_on_the_model(engine, synthesizer):
    before = synthesizer.prepared_ahead
    session = await engine.open_session(SessionConfig(voice="af_heart"))
    events = session.events()
    for sentence in ("The kitchen is at 21°C. ", "The hall is at 19°C. ", "The porch is at -2°C."):
        await session.send_text(sentence)
    await session.flush()
    seen = await read_until(events, lambda e: isinstance(e, Flushed))
    assert not [e for e in seen if isinstance(e, Error)]
    assert len(check_sentence_order(seen)) == 3
    # the later sentences' front-end and G2P ran beside the model and were taken, not done again
    assert synthesizer.prepared_ahead - before >= 1
    await session.close()


async def test_unknown_voice_is_refused_at_open_and_reported_on_configure(engine):
    with pytest.raises(VoiceError, match="af_heart"):
        await engine.open_session(SessionConfig(voice="nobody"))
    session = await engine.open_session(SessionConfig(voice="bf_emma"))
    events = session.events()
    await session.configure(voice="zz_missing")
    await session.close()
    seen = [e async for e in events]
    errors = [e for e in seen if isinstance(e, Error)]
    assert len(errors) == 1 and errors[0].code == "unknown_voice"
    assert "bf_emma" in errors[0].message
    assert session.config.voice == "bf_emma"
    assert isinstance(seen[-1], Closed)
