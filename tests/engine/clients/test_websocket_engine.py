"""The websocket engine against the real endpoint container (uvicorn + random-weight Kokoro) on loopback."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.net import free_port
from tests.support.stand_in import (
    GUARD_S,
    FreezableProxy,
    abort_connections,
    collect_until,
    is_closed,
)
from voicedesk.endpoint.runner import ServerThread
from voicedesk.engine.clients.websocket import WebSocketEngine, WebSocketSettings, normalize_url
from voicedesk.engine.engine_spec import EngineSpec, parse_engine_args
from voicedesk.engine.errors import ErrorCode, LocalErrorCode, VoicedeskError
from voicedesk.engine.events import (
    Audio,
    Closed,
    Error,
    SentenceStarted,
)

THREE_SENTENCES = "The sun is up over the hill. Birds are singing now. We walk to the lake."


def engine_for(server: ServerThread, **settings: object) -> WebSocketEngine:
    return WebSocketEngine(WebSocketSettings(url=normalize_url(server.ws_url), **settings))  # type: ignore[arg-type]


def test_normalize_url_accepts_the_forms_people_type() -> None:
    assert normalize_url("127.0.0.1:8080") == "ws://127.0.0.1:8080/invocations-bidirectional-stream"
    assert normalize_url("http://box:8080/") == "ws://box:8080/invocations-bidirectional-stream"
    assert normalize_url("https://box") == "wss://box/invocations-bidirectional-stream"
    assert normalize_url("ws://box:1/custom?x=1") == "ws://box:1/custom?x=1"
    with pytest.raises(VoicedeskError, match="not a WebSocket URL"):
        normalize_url("ftp://box")
    with pytest.raises(VoicedeskError, match="not a WebSocket URL"):
        normalize_url("ws://[::1")  # urllib raises a bare ValueError for the unclosed bracket


async def test_token_is_required_and_checked(make_container) -> None:
    server = make_container(token="s3cret")
    with pytest.raises(VoicedeskError, match="requires a token") as missing:
        await engine_for(server).open_session()
    assert missing.value.code == ErrorCode.UNAUTHORIZED
    with pytest.raises(VoicedeskError, match="refused the token"):
        await engine_for(server, token="wrong").open_session()

    spec = parse_engine_args(["websocket", server.ws_url])
    engine = WebSocketEngine.from_spec(EngineSpec(kind=spec.kind, target=spec.target, token="s3cret"))
    session = await engine.open_session()
    await session.send_text("Token accepted.")
    await session.close()
    got = await collect_until(session.events(), is_closed)
    assert got.audio_bytes() > 0 and not got.of(Error)


async def test_token_comes_from_the_environment(make_container, monkeypatch: pytest.MonkeyPatch) -> None:
    server = make_container(token="from-env")
    monkeypatch.setenv("VOICEDESK_TOKEN", "from-env")
    engine = WebSocketEngine.from_spec(EngineSpec(kind="websocket", target=server.ws_url))
    session = await engine.open_session()
    await session.close()
    got = await collect_until(session.events(), is_closed)
    assert got.of(Closed)[0].reason != "connection lost"


async def test_server_down_says_what_to_start() -> None:
    engine = WebSocketEngine(WebSocketSettings(url=f"ws://127.0.0.1:{free_port()}/invocations-bidirectional-stream"))
    with pytest.raises(VoicedeskError, match=r"Cannot reach .* Is `voicedesk serve` running") as caught:
        await engine.open_session()
    assert caught.value.code == LocalErrorCode.CONNECTION


async def test_wrong_path_is_named(container: ServerThread) -> None:
    engine = WebSocketEngine(WebSocketSettings(url=f"{container.ws_url}/nope"))
    with pytest.raises(VoicedeskError, match=r"has no WebSocket at /nope \(HTTP 40[34]\)"):
        await engine.open_session()


@pytest.mark.slow
async def test_server_dropping_mid_utterance_ends_the_session_with_a_fatal_error(make_container) -> None:
    server = make_container()
    session = await engine_for(server).open_session()
    await session.send_text("This is spoken. This is cut off. Never heard.")
    await session.flush()
    await collect_until(session.events(), lambda e: isinstance(e, Audio))
    assert abort_connections(server) >= 1
    got = await collect_until(session.events(), is_closed)
    errors = got.of(Error)
    assert errors and errors[-1].fatal and errors[-1].code == LocalErrorCode.CONNECTION
    assert "dropped mid-session" in errors[-1].message
    assert got.events[-1] == Closed("connection lost")

    # On request, the same session object reconnects and speaks again.
    await session.reconnect()
    await session.send_text("Back again.")
    await session.close()
    again = await collect_until(session.events(), is_closed)
    assert [s.text for s in again.of(SentenceStarted)] == ["Back again."]


async def test_keepalive_notices_a_hung_server(container: ServerThread) -> None:
    proxy = await FreezableProxy(container.port).start()
    try:
        engine = WebSocketEngine(
            WebSocketSettings(url=normalize_url(proxy.ws_url), ping_interval_s=0.2, ping_timeout_s=0.5)
        )
        session = await engine.open_session()
        proxy.frozen.set()  # the connection stays up, but no pong comes back any more
        got = await collect_until(session.events(), is_closed)
    finally:
        await proxy.stop()
    errors = got.of(Error)
    assert errors and errors[-1].fatal and errors[-1].code == LocalErrorCode.CONNECTION
    assert "keepalive ping timeout" in errors[-1].message


async def test_aclose_ends_events_at_once(container: ServerThread) -> None:
    session = await engine_for(container).open_session()
    await session.send_text("A sentence that will not be waited for.")
    await session.flush()
    reader = asyncio.create_task(collect_until(session.events(), is_closed))
    await session.aclose()
    got = await asyncio.wait_for(reader, GUARD_S)
    assert got.events[-1] == Closed("aborted")
