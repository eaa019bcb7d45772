"""The Wyoming server's guards, attacked over real sockets (raw TCP for what the library's client cannot send, the
``wyoming`` client for the rest): sizes refused before buffering, time limits, connection caps, bad numbers, clear
errors without Python's exception text, and quiet logs.

The engine is a real ``LocalEngine`` over the test-only fast synthesizer (``app.lab.paced_synth``): these tests are
about reading events, not about the model.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest
from wyoming.error import Error as WyomingError
from wyoming.event import Event, async_read_event
from wyoming.info import Describe
from wyoming.tts import Synthesize

from tests.endpoint.wyoming.conftest import GUARD_S, client_of, read_until, running_wyoming, wait_for
from voicedesk.app.lab.paced_synth import PacedSynthesizer
from voicedesk.endpoint.wyoming.guarded_read import ReadLimits
from voicedesk.endpoint.wyoming.server import WyomingTtsServer
from voicedesk.engine.errors import ErrorCode, VoicedeskError
from voicedesk.engine.local import LocalEngine

LIMITS = ReadLimits(idle_timeout_s=30.0, event_timeout_s=0.5)


@pytest.fixture
async def fast_engine() -> AsyncIterator[LocalEngine]:
    engine = LocalEngine(PacedSynthesizer(1000.0))
    yield engine
    await engine.aclose()


async def _send_raw(server: WyomingTtsServer, data: bytes, source: str = "127.0.0.1") -> list[Event]:
    """Writes ``data`` on a fresh connection and reads the server's events until it closes the connection."""
    reader, writer = await asyncio.open_connection(server.settings.host, server.settings.port, local_addr=(source, 0))
    events: list[Event] = []
    try:
        writer.write(data)
        await writer.drain()
        async with asyncio.timeout(GUARD_S):
            while (event := await async_read_event(reader)) is not None:
                events.append(event)
    finally:
        writer.close()
    return events


def _error(events: list[Event]) -> WyomingError:
    assert [e.type for e in events] == ["error"], events
    return WyomingError.from_event(events[0])


async def test_a_2_gb_data_length_is_refused_before_a_byte_of_it_is_read(fast_engine: LocalEngine) -> None:
    async with running_wyoming(fast_engine, read_limits=LIMITS) as server:
        # Nothing after the header is ever sent: the answer comes from the header alone.
        error = _error(await _send_raw(server, b'{"type": "synthesize", "data_length": 2000000000}\n'))
        assert error.code == ErrorCode.FRAME_TOO_LARGE and "2,000,000,000" in error.text
        error = _error(await _send_raw(server, b'{"type": "synthesize", "payload_length": 900000000}\n'))
        assert error.code == ErrorCode.FRAME_TOO_LARGE
        error = _error(await _send_raw(server, b'{"type": "synthesize", "data_length": -5}\n'))
        assert error.code == ErrorCode.BAD_MESSAGE


async def test_a_header_that_never_ends_is_refused(fast_engine: LocalEngine) -> None:
    async with running_wyoming(fast_engine, read_limits=LIMITS) as server:
        error = _error(await _send_raw(server, b'{"type": "synthesize", "data": {"text": "' + b"a" * 100_000))
        assert error.code == ErrorCode.FRAME_TOO_LARGE


async def test_an_event_that_declares_data_and_sends_none_is_closed_after_the_event_timeout(
    fast_engine: LocalEngine,
) -> None:
    async with running_wyoming(fast_engine, read_limits=LIMITS) as server:
        error = _error(await _send_raw(server, b'{"type": "synthesize", "data_length": 500}\n{"text"'))
        assert error.code == ErrorCode.BAD_MESSAGE and "0.5 s" in error.text
        assert not server.connections


async def test_a_silent_connection_is_closed_after_the_idle_timeout(fast_engine: LocalEngine) -> None:
    limits = ReadLimits(idle_timeout_s=0.3)
    async with running_wyoming(fast_engine, read_limits=limits) as server:
        error = _error(await _send_raw(server, b""))
        assert error.code == ErrorCode.IDLE_TIMEOUT


@pytest.mark.parametrize(
    "header",
    [
        b'{"type": "synthesize", "data": {"text": "Hi.", "speed": 1e400}}\n',
        b'{"type": "synthesize", "data": {"text": "Hi.", "speed": NaN}}\n',
        b'{"type": "synthesize", "data": {"text": "Hi.", "speed": -Infinity}}\n',
        b'{"type": "synthesize", "data_length": 1e400}\n',
    ],
)
async def test_numbers_json_cannot_hold_are_refused(fast_engine: LocalEngine, header: bytes) -> None:
    async with running_wyoming(fast_engine, read_limits=LIMITS) as server:
        error = _error(await _send_raw(server, header))
        assert error.code in (ErrorCode.BAD_JSON, ErrorCode.BAD_MESSAGE)


async def test_malformed_events_get_errors_without_python_text_and_one_log_line(
    fast_engine: LocalEngine, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    junk = [
        b"not json at all\n",
        b"[1, 2, 3]\n",
        b'"a string"\n',
        b'{"no": "type"}\n',
        b'{"type": "synthesize", "data": "a string"}\n',
        b'{"type": "synthesize", "data": {"text": "Hi.", "voice": 5}}\n',  # the library raises TypeError
        b'{"type": "synthesize", "data_length": 5}\n"abc"',
        b"\xff\xfe\n",
    ]
    async with running_wyoming(fast_engine, read_limits=LIMITS) as server:
        for _ in range(10):
            for data in junk:
                error = _error(await _send_raw(server, data))
                assert error.code in (ErrorCode.BAD_JSON, ErrorCode.BAD_MESSAGE), data
                for python in ("Error:", "Traceback", "'str' object", "Exception"):
                    assert python not in (error.text or ""), (data, error.text)
        # Still serving.
        async with client_of(server) as client:
            await client.write_event(Describe().event())
            await read_until(client, "info")
    records = [r for r in caplog.records if r.name.startswith("voicedesk.endpoint.wyoming")]
    assert not [r for r in caplog.records if r.exc_info or "never retrieved" in r.getMessage()]
    warnings = [r for r in records if r.levelno >= logging.WARNING]
    assert 1 <= len(warnings) <= 4, [r.getMessage() for r in warnings]  # 80 bad connections, a line per kind


async def test_one_address_cannot_hold_more_than_its_connections(fast_engine: LocalEngine) -> None:
    async with running_wyoming(fast_engine, read_limits=LIMITS, max_connections_per_client=2) as server:
        held = [await asyncio.open_connection("127.0.0.1", server.settings.port, local_addr=("127.0.0.7", 0))]
        held.append(await asyncio.open_connection("127.0.0.1", server.settings.port, local_addr=("127.0.0.7", 0)))
        try:
            await wait_for(lambda: len(server.connections) == 2, "the two connections were not accepted")
            error = _error(await _send_raw(server, b"", source="127.0.0.7"))
            assert error.code == ErrorCode.TOO_MANY_CONNECTIONS
            async with client_of(server) as client:  # another address (127.0.0.1) is served
                await client.write_event(Describe().event())
                await read_until(client, "info")
        finally:
            for _, writer in held:
                writer.close()


def test_the_guards_are_set_from_the_command_line() -> None:
    from tests.endpoint.wyoming.test_catalog_info import wyoming_args
    from voicedesk.endpoint.wyoming.cli import plan_from_args

    default = plan_from_args(wyoming_args()).settings
    assert default.max_connections_per_client == 8 and default.read_limits.idle_timeout_s == 300  # type: ignore[attr-defined]
    asked = plan_from_args(wyoming_args("--max-connections-per-client", "0", "--idle-timeout", "30")).settings
    assert asked.max_connections_per_client is None and asked.read_limits.idle_timeout_s == 30  # type: ignore[attr-defined]
    with pytest.raises(VoicedeskError, match="--idle-timeout"):
        plan_from_args(wyoming_args("--idle-timeout", "0"))


async def test_a_full_server_evicts_an_idle_connection_of_the_busiest_address(fast_engine: LocalEngine) -> None:
    """``serve``'s fair rule: a newcomer from an address holding clearly less takes an idle connection's place
    (told ``too_many_connections``), and pings do not make a connection active."""
    async with running_wyoming(fast_engine, read_limits=LIMITS, max_connections=3) as server:
        port = server.settings.port
        held = [await asyncio.open_connection("127.0.0.1", port, local_addr=("127.0.0.8", 0)) for _ in range(3)]
        try:
            await wait_for(lambda: len(server.connections) == 3, "the three connections were not accepted")
            held[0][1].write(b'{"type": "ping", "data": {}}\n')  # the oldest pings: that is not activity
            assert (await asyncio.wait_for(async_read_event(held[0][0]), GUARD_S)).type == "pong"  # type: ignore[union-attr]
            async with client_of(server) as client:  # a newcomer from 127.0.0.1
                await client.write_event(Describe().event())
                await read_until(client, "info")
            told = await asyncio.wait_for(async_read_event(held[0][0]), GUARD_S)
            assert told is not None and WyomingError.is_type(told.type)
            error = WyomingError.from_event(told)
            assert error.code == ErrorCode.TOO_MANY_CONNECTIONS and error.text and "make room" in error.text
            assert await asyncio.wait_for(held[0][0].read(), GUARD_S) == b""  # then closed
            assert not held[1][0].at_eof() and not held[2][0].at_eof()
        finally:
            for _, writer in held:
                writer.close()


async def test_a_speaking_wyoming_connection_is_not_evicted_before_an_idle_one() -> None:
    engine = LocalEngine(PacedSynthesizer(1.0))  # real time: a request keeps speaking for seconds
    try:
        async with running_wyoming(engine, read_limits=LIMITS, max_connections=2) as server:
            port = server.settings.port
            async with client_of(server) as speaking:
                await speaking.write_event(Synthesize(text="One two three four five six seven eight nine.").event())
                await read_until(speaking, "audio-start")
                idle = await asyncio.open_connection("127.0.0.1", port, local_addr=("127.0.0.1", 0))
                await wait_for(lambda: len(server.connections) == 2, "the idle connection was not accepted")
                # A newcomer from another address: the idle connection makes room, though it is the newest.
                newcomer = await asyncio.open_connection("127.0.0.1", port, local_addr=("127.0.0.9", 0))
                evicted = await asyncio.wait_for(async_read_event(idle[0]), GUARD_S)
                assert evicted is not None and WyomingError.from_event(evicted).code == ErrorCode.TOO_MANY_CONNECTIONS
                await read_until(speaking, "audio-stop")  # the speaking one was left alone
                for _, writer in (idle, newcomer):
                    writer.close()
    finally:
        await engine.aclose()


async def test_a_refused_client_still_sending_reads_its_error_rather_than_a_reset(fast_engine: LocalEngine) -> None:
    async with running_wyoming(fast_engine, read_limits=LIMITS, max_connections_per_client=1) as server:
        port = server.settings.port
        held = await asyncio.open_connection("127.0.0.1", port, local_addr=("127.0.0.6", 0))
        try:
            await wait_for(lambda: len(server.connections) == 1, "the first connection was not accepted")
            reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=("127.0.0.6", 0))
            writer.write(b'{"type": "describe"}\n' * 2_000)  # still sending while the server refuses
            event = await asyncio.wait_for(async_read_event(reader), GUARD_S)
            assert event is not None and WyomingError.from_event(event).code == ErrorCode.TOO_MANY_CONNECTIONS
            writer.close()
        finally:
            held[1].close()
