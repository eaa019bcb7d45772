"""``voicedesk wyoming --engine websocket URL``: a real ``voicedesk serve`` app (uvicorn, random-weight Kokoro) on
a background thread behind the Wyoming server, driven by the ``wyoming`` client; and its zeroconf announcement
seen by a real zeroconf browser on loopback."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
from wyoming.info import Describe, Info
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeVoice
from zeroconf import IPVersion, ServiceStateChange
from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

from tests.endpoint.wyoming.conftest import GUARD_S, client_of, kinds, read_until, running_wyoming, wait_for
from tests.support.net import free_port
from voicedesk.endpoint.runner import ServerThread
from voicedesk.endpoint.wyoming.cli import RunningService, plan_from_args, start_service
from voicedesk.endpoint.wyoming.discovery import SERVICE_TYPE
from voicedesk.endpoint.wyoming.server import WyomingTtsServer
from voicedesk.engine.clients.websocket import WebSocketEngine, WebSocketSettings, normalize_url
from voicedesk.engine.commands import build_parser
from voicedesk.engine.engine_spec import EngineSpec

pytestmark = pytest.mark.slow


@pytest.fixture
async def remote_engine(server: ServerThread) -> AsyncIterator[WebSocketEngine]:
    engine = WebSocketEngine(WebSocketSettings(url=normalize_url(server.ws_url)))
    yield engine
    await engine.aclose()


def endpoint_idle(server: ServerThread) -> bool:
    return server.runtime.active_sessions == 0 and server.runtime.scheduler.pending == 0


async def test_voices_are_found_through_the_remote_engine(server: ServerThread, remote_engine) -> None:
    async with running_wyoming(remote_engine, candidates=["af_heart", "am_adam", "bf_emma", "af_nicole"]) as wy:
        async with client_of(wy) as client:
            await client.write_event(Describe().event())
            [info_event] = await read_until(client, "info")
        names = [v.name for v in Info.from_event(info_event).tts[0].voices]
        assert names == ["af_heart", "am_adam", "bf_emma"]  # af_nicole is not on the endpoint: not offered
    await wait_for(lambda: endpoint_idle(server), "the voice probe left a session open on the endpoint")


async def test_both_paths_on_one_connection_through_a_voicedesk_serve_box(server: ServerThread, remote_engine) -> None:
    opened = server.runtime.sessions_opened
    async with running_wyoming(remote_engine) as wy, client_of(wy) as client:
        await client.write_event(Synthesize(text="Hello there.", voice=SynthesizeVoice(name="am_adam")).event())
        first = await read_until(client, "audio-stop")
        assert kinds(first)[0] == "audio-start" and "audio-chunk" in kinds(first)

        await client.write_event(SynthesizeStart().event())
        await client.write_event(SynthesizeChunk("Good morning to you. The sun").event())
        early = await read_until(client, "audio-chunk")  # spoken before the stream ends, through the remote too
        await client.write_event(SynthesizeChunk(" is up.").event())
        await client.write_event(SynthesizeStop().event())
        rest = await read_until(client, "synthesize-stopped")
        assert kinds(early + rest).count("audio-start") == 1
        assert kinds(rest)[-2:] == ["audio-stop", "synthesize-stopped"]
        assert wy.sessions_opened == 1
    # The probe's session and this connection's one: nothing else was opened on the endpoint.
    assert server.runtime.sessions_opened - opened == 2
    await wait_for(lambda: endpoint_idle(server), "the endpoint still holds the closed connection's session")


async def test_a_vanished_client_ends_the_remote_session_and_its_synthesis(server: ServerThread, remote_engine) -> None:
    async with running_wyoming(remote_engine) as wy:
        client = client_of(wy)
        await client.connect()
        await client.write_event(SynthesizeStart().event())
        for sentence in ("Good morning to you.", "The sun is up over the hill.", "We can go outside now."):
            await client.write_event(SynthesizeChunk(sentence + " ").event())
        await client.write_event(SynthesizeChunk("The cat sat on a mat all day. The dog ran off. ").event())
        await read_until(client, "audio-chunk")
        assert server.runtime.active_sessions >= 1
        await client.disconnect()
        await wait_for(lambda: not wy.connections, "the Wyoming server kept the vanished client's connection")
        await wait_for(lambda: endpoint_idle(server), "the endpoint kept synthesizing for a client that is gone")
        assert await server.runtime.scheduler.wait_idle(GUARD_S)


def wyoming_plan(*argv: str):  # type: ignore[no-untyped-def]
    return plan_from_args(build_parser().parse_args(["wyoming", *argv]))


async def browse_for(name: str, zeroconf: AsyncZeroconf) -> AsyncServiceInfo:
    """Waits until a browser on loopback has seen ``name`` announced, then resolves it."""
    seen = asyncio.Event()

    def on_change(zeroconf, service_type: str, name: str, state_change: ServiceStateChange) -> None:
        if name == wanted and state_change is ServiceStateChange.Added:
            seen.set()

    wanted = f"{name}.{SERVICE_TYPE}"
    browser = AsyncServiceBrowser(zeroconf.zeroconf, SERVICE_TYPE, handlers=[on_change])
    try:
        async with asyncio.timeout(GUARD_S):
            await seen.wait()
    finally:
        await browser.async_cancel()
    info = AsyncServiceInfo(SERVICE_TYPE, wanted)
    assert await info.async_request(zeroconf.zeroconf, 3000)
    return info


async def test_the_command_announces_itself_over_zeroconf_unless_told_not_to(server: ServerThread) -> None:
    spec = EngineSpec(kind="websocket", target=server.ws_url)
    tag = uuid.uuid4().hex[:8]
    loud_port, quiet_port = free_port(), free_port()
    quiet: RunningService = await start_service(
        wyoming_plan("--port", str(quiet_port), "--no-zeroconf", "--zeroconf-name", f"quiet-{tag}"), spec
    )
    try:
        loud: RunningService = await start_service(
            wyoming_plan("--port", str(loud_port), "--zeroconf-name", f"loud-{tag}"), spec
        )
        try:
            assert quiet.advertiser is None and loud.advertiser is not None
            browser = AsyncZeroconf(interfaces=["127.0.0.1"], ip_version=IPVersion.V4Only)
            try:
                found = await browse_for(f"loud-{tag}", browser)
                assert found.port == loud_port and found.parsed_addresses() == ["127.0.0.1"]
                # Announced at the same moment, the quiet one would resolve by now; it does not exist.
                absent = AsyncServiceInfo(SERVICE_TYPE, f"quiet-{tag}.{SERVICE_TYPE}")
                assert not await absent.async_request(browser.zeroconf, 1500)
                # What was announced is a working Wyoming server.
                wy_server = loud.server
                assert isinstance(wy_server, WyomingTtsServer)
                async with client_of(wy_server) as client:
                    await client.write_event(Describe().event())
                    await read_until(client, "info")
            finally:
                await browser.async_close()
        finally:
            await loud.aclose()
    finally:
        await quiet.aclose()
