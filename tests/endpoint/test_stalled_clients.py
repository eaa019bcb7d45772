"""Clients that stop reading, over real sockets: the server's memory for them stays bounded, their slot is
freed by the send or idle timeout, their socket is not left open, and a healthy client beside sixteen of them
is served normally. WebSocket and HTTP streams alike.

A stalled client here is a real ``websockets`` client (or ``httpx`` stream) on a socket with a tiny receive
buffer, that never reads. The synthesizer is the fast stand-in (``app.lab.paced_synth``, 50× real time, GPU-like):
with the random-weight Kokoro on a shared CPU the server would never get far enough ahead of anyone to stall.
Timeouts are short (send 2 s, idle 3 s); every wait below is a generous guard, never a timing check.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect

from tests.support.endpoint import GUARD_S, pcm_seconds, receive_until, wait_for
from tests.support.fast_synth import (
    SessionState,
    open_connections,
    session_states,
    small_receive_buffer_socket,
    start_fast_server,
)
from voicedesk.app.lab.paced_synth import paced_duration_s
from voicedesk.endpoint.runner import ServerThread
from voicedesk.engine.protocol import BIDI_PATH, Flush, SendText, SynthesizeRequest, encode_command
from voicedesk.engine.session import SessionLimits

pytestmark = pytest.mark.alone  # times it side by side (tests/support/parallel.py)

SENTENCE = "This is one more sentence of a long reply that goes on and on."
LONG_REPLY = " ".join([SENTENCE] * 120)
"""About 8 minutes of audio: far more than the socket buffers between server and client can hold."""
SENTENCE_S = paced_duration_s(SENTENCE, 1.0)
AHEAD_LIMIT_S = SessionLimits().max_audio_ahead_s


@pytest.fixture
def fast_server() -> Iterator[ServerThread]:
    running = start_fast_server()
    yield running
    running.stop()


@contextlib.asynccontextmanager
async def stalled_client(server: ServerThread) -> AsyncIterator[ClientConnection]:
    """A websockets client that never reads: it takes one frame into its queue, then its socket fills up. It sends
    no keepalive pings either (a hung process does not), so only the server can end the connection."""
    sock = small_receive_buffer_socket(server.port)
    async with connect(server.ws_url + BIDI_PATH, sock=sock, max_queue=1, ping_interval=None, close_timeout=1) as ws:
        yield ws


async def watch_until_no_sessions(server: ServerThread) -> list[SessionState]:
    """Samples every open session's flow-control state until the server holds none."""
    seen: list[SessionState] = []
    async with asyncio.timeout(GUARD_S):
        while True:
            states = await asyncio.to_thread(session_states, server)
            seen.extend(states)
            if not states and server.runtime.active_sessions == 0:
                return seen
            await asyncio.sleep(0.05)


async def wait_for_no_connections(server: ServerThread, guard_s: float = 60.0) -> None:
    """Every TCP connection is gone (uvicorn closes a dead WebSocket's transport within its 10 s close timeout)."""
    async with asyncio.timeout(guard_s):
        while True:
            if not await asyncio.to_thread(open_connections, server):
                return
            await asyncio.sleep(0.05)


def server_write_buffer(server: ServerThread) -> int:
    """Bytes the server's transports hold that the kernel did not take (the client's socket is full)."""

    async def read() -> int:
        return sum(c.transport.get_write_buffer_size() for c in server.server.server_state.connections)

    return server.call(read)


async def test_a_websocket_client_that_stops_reading_is_dropped_with_bounded_memory(fast_server, caplog):
    caplog.set_level(logging.INFO, logger="voicedesk.endpoint.transport_guards")
    async with stalled_client(fast_server) as ws:
        await ws.send(encode_command(SendText(LONG_REPLY)))
        await ws.send(encode_command(Flush("all of it")))
        seen = await watch_until_no_sessions(fast_server)
        # The client is still connected (it never closed); the server gave up on it.
        await wait_for_no_connections(fast_server)
    assert seen, "the session was never observed"
    # Synthesis ran ahead of what the socket took by at most the limit plus the sentence that crossed it...
    assert max(s.audio_ahead_s for s in seen) <= AHEAD_LIMIT_S + SENTENCE_S + 0.5
    # ...and then stopped, waiting for the listener: a fraction of the reply was ever made.
    assert seen[-1].audio_ahead_s >= AHEAD_LIMIT_S
    assert max(s.produced_s for s in seen) < paced_duration_s(LONG_REPLY, 1.0) / 2
    assert "stopped reading" in caplog.text  # the send timeout freed it, not the client


async def test_a_stalled_client_whose_last_bytes_sit_in_the_server_is_closed_and_its_socket_released(
    fast_server, caplog
):
    """The reply ends while its last frames still wait in the server's transport (the client's socket is full
    but the transport is under its high-water mark, so no send blocks): the idle timeout closes the session;
    the close frame can never be delivered, and the TCP connection must not stay open behind the freed slot."""
    caplog.set_level(logging.INFO)
    async with stalled_client(fast_server) as ws:
        async with asyncio.timeout(GUARD_S):
            while await asyncio.to_thread(server_write_buffer, fast_server) == 0:
                # One short sentence at a time (its audio is under the transport's 64 KiB high-water mark)...
                before = (await asyncio.to_thread(session_states, fast_server))[0].produced_s
                await ws.send(encode_command(SendText("Okay, we go now.")))
                await ws.send(encode_command(Flush()))

                def handed_over(before: float = before) -> bool:
                    """...synthesized, and every frame of it handed to the transport."""
                    states = session_states(fast_server)
                    return all(s.produced_s > before and s.queued_frames == 0 for s in states)

                await wait_for(handed_over, "the sentence was handed to the transport")
        await watch_until_no_sessions(fast_server)
        await wait_for_no_connections(fast_server)
    # The idle timeout ended the session (no send ever blocked: the last frames fit under the high-water mark);
    # the transport was aborted when the closing handshake could not complete.
    assert "stopped reading for" not in caplog.text
    assert "stopped reading while closing" in caplog.text


async def test_sixteen_stalled_clients_beside_a_healthy_one(fast_server):
    text = " ".join([SENTENCE] * 40)
    async with contextlib.AsyncExitStack() as stack:
        stalled = [await stack.enter_async_context(stalled_client(fast_server)) for _ in range(16)]
        for ws in stalled:
            await ws.send(encode_command(SendText(text)))
            await ws.send(encode_command(Flush()))
        await wait_for(lambda: fast_server.runtime.active_sessions == 16, "the stalled sessions opened")
        # Stalled: each has run as far ahead as its socket lets it, and no longer asks the model for anything (before
        # that, they are 16 busy sessions, and a whole request would rightly get queue_saturated).
        seen: list[SessionState] = []

        def held_back() -> bool:
            seen.extend(session_states(fast_server))
            return fast_server.runtime.queue_depth == 0

        await wait_for(held_back, "the stalled sessions are held back")
        async with connect(fast_server.ws_url + BIDI_PATH) as healthy:
            request = "Good morning to you. The sun is up today. We can go outside now."
            await healthy.send(encode_command(SynthesizeRequest(request, request_id="healthy")))
            frames = await receive_until(healthy, "synthesis_complete")
            complete = frames.of_type("synthesis_complete")[0]
            assert complete["request_id"] == "healthy" and not complete.get("cancelled")
            assert not frames.of_type("error")
            assert complete["total_duration_s"] == pytest.approx(pcm_seconds(len(frames.audio)), abs=1e-5)
            assert [s["text"] for s in frames.of_type("sentence_start")] == [
                "Good morning to you.",
                "The sun is up today.",
                "We can go outside now.",
            ]
            # Its session is still fine after all that.
            await healthy.send(encode_command(SendText("Still here. ")))
            await healthy.send(encode_command(Flush("again")))
            again = await receive_until(healthy, "flushed")
            assert again.of_type("flushed")[0]["request_id"] == "again" and len(again.audio) > 0
        seen += await watch_until_no_sessions(fast_server)
        await wait_for_no_connections(fast_server)
        assert max(s.audio_ahead_s for s in seen) <= AHEAD_LIMIT_S + SENTENCE_S + 0.5
    assert fast_server.runtime.active_sessions == 0


async def test_an_http_stream_that_is_not_read_stops_synthesis_then_is_aborted(fast_server, caplog):
    caplog.set_level(logging.INFO, logger="voicedesk.endpoint.transport_guards")
    tiny_window = [(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)]
    transport = httpx.AsyncHTTPTransport(socket_options=tiny_window)
    async with httpx.AsyncClient(transport=transport, base_url=fast_server.http_url, timeout=GUARD_S) as client:
        body = {"text": LONG_REPLY, "format": "pcm", "request_id": "unread"}
        async with client.stream("POST", "/invocations", json=body) as response:
            assert response.status_code == 200
            # Read nothing more. Synthesis must stop while the response is still open...
            async with asyncio.timeout(GUARD_S):
                while True:
                    states = await asyncio.to_thread(session_states, fast_server)
                    if states and states[0].audio_ahead_s >= AHEAD_LIMIT_S:
                        break
                    await asyncio.sleep(0.05)
            # ...then the send timeout aborts the transport and the lease is released.
            seen = await watch_until_no_sessions(fast_server)
            await wait_for_no_connections(fast_server)
    assert max(s.audio_ahead_s for s in seen) <= AHEAD_LIMIT_S + SENTENCE_S + 0.5
    assert max(s.produced_s for s in seen) < paced_duration_s(LONG_REPLY, 1.0) / 2
    # When it was dropped, synthesis was waiting for the listener (not out of text): the last state that still held
    # audio (the abort's wind-down drops what was queued before the lease goes, so a last look may see none).
    assert [s for s in seen if s.audio_ahead_s > 0][-1].audio_ahead_s >= AHEAD_LIMIT_S
    assert "stopped reading" in caplog.text
