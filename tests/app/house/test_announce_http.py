"""The local HTTP announce endpoint with a real httpx client: against the real uvicorn server on 127.0.0.1, and
through httpx's ASGI transport where a request must come from another machine's address."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.app.house.helpers import outcomes, running_console, until
from voicedesk.app.house.http import check_bind, create_announce_app
from voicedesk.engine.errors import UsageError


async def test_announce_over_http_is_queued_said_and_reported_with_its_source():
    async with running_console(None, http_port=0) as house:
        url = f"http://127.0.0.1:{house.http.port}"
        async with httpx.AsyncClient(base_url=url) as client:
            reply = await client.post("/announce", json={"text": "Dinner is ready.", "priority": "low", "id": "d1"})
            assert reply.status_code == 202 and reply.json()["id"] == "d1"
            plain = await client.post("/announce", content="The mail is here.", headers={"content-type": "text/plain"})
            assert plain.status_code == 202
            await until(lambda: len(outcomes(house)) == 2)
            assert {(r.text, r.source.value, r.outcome.value) for r in outcomes(house)} == {
                ("Dinner is ready.", "http", "spoken"),
                ("The mail is here.", "http", "spoken"),
            }
            state = (await client.get("/state")).json()
            assert state["state"] == "idle" and state["engine"] == "local"


async def test_a_bad_body_gets_400_with_the_reason_and_queues_nothing():
    async with (
        running_console(None, http_port=0) as house,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{house.http.port}") as client,
    ):
        for body, reason in [
            (b'{"text": ', "not valid JSON"),
            (b'{"text": "x", "priority": "asap"}', "unknown priority 'asap'"),
            (b'{"text": "x", "ttl_s": "soon"}', "'ttl_s' must be a number"),
            (b"", "empty"),
            (b"x" * 20_000, "at most 16384"),
        ]:
            reply = await client.post("/announce", content=body)
            assert reply.status_code in (400, 413) and reason in reply.json()["error"], (body[:30], reply.text)
        assert len(house.runner.core) == 0 and house.runner.core.current is None and not outcomes(house)


async def test_a_token_is_checked_when_set():
    async with (
        running_console(None, http_port=0, http_token="s3cret") as house,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{house.http.port}") as client,
    ):
        refused = await client.post("/announce", json={"text": "No token."})
        assert refused.status_code == 401 and "Authorization: Bearer" in refused.json()["error"]
        wrong = await client.post("/announce", json={"text": "x"}, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        good = await client.post("/announce", json={"text": "Token."}, headers={"Authorization": "Bearer s3cret"})
        assert good.status_code == 202
        await until(lambda: outcomes(house))
        assert [r.text for r in outcomes(house)] == ["Token."]


async def test_requests_from_another_machine_need_a_token():
    async with running_console(None) as house:
        for token, status in [(None, 403), ("s3cret", 401)]:
            app = create_announce_app(house.runner, token)
            transport = httpx.ASGITransport(app=app, client=("192.168.1.40", 50000))
            async with httpx.AsyncClient(transport=transport, base_url="http://console.local") as client:
                reply = await client.post("/announce", json={"text": "From the LAN."})
                assert reply.status_code == status, reply.text
        app = create_announce_app(house.runner, "s3cret")
        transport = httpx.ASGITransport(app=app, client=("192.168.1.40", 50000))
        async with httpx.AsyncClient(transport=transport, base_url="http://console.local") as client:
            reply = await client.post(
                "/announce", json={"text": "From the LAN."}, headers={"Authorization": "Bearer s3cret"}
            )
            assert reply.status_code == 202


def test_the_endpoint_refuses_to_listen_beyond_loopback_without_a_token():
    with pytest.raises(UsageError, match="without a token"):
        check_bind("0.0.0.0", None)
    check_bind("0.0.0.0", "s3cret")
    check_bind("127.0.0.1", None)
    check_bind("::1", None)


async def test_post_stop_cuts_what_is_being_said():
    async with (
        running_console(None, realtime_factor=0.5, http_port=0) as house,  # slower than speech: still going
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{house.http.port}") as client,
    ):
        await client.post("/announce", content="One sentence here. And another one there. And a third.")
        await until(lambda: house.controller.run is not None and house.controller.run.turn.sentences)
        assert (await client.get("/state")).json()["state"] == "speaking"
        assert (await client.post("/stop")).json() == {"stopped": True}
        await until(lambda: outcomes(house))
        assert (outcomes(house)[0].outcome.value, outcomes(house)[0].reason) == ("interrupted", "stopped")


async def test_a_huge_body_is_refused_on_its_length_or_at_the_limit_never_read_whole():
    """Issue 33.7: a 300 MB body was read whole before the 413. Now a Content-Length over the limit is refused before
    any of the body is sent, and a chunked body as soon as the limit is passed, the rest never sent."""

    async def exchange(port: int, head: bytes, chunks: list[bytes]) -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(head)
            for chunk in chunks:
                writer.write(chunk)
                await writer.drain()
            return await asyncio.wait_for(reader.read(4096), 10)  # the sender never finishes its body
        finally:
            writer.close()

    async with running_console(None, http_port=0) as house:
        port = house.http.port
        announced = b"POST /announce HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
        reply = await exchange(port, announced + b"Content-Length: 300000000\r\n\r\n", [b"x" * 1000])
        assert reply.startswith(b"HTTP/1.1 413") and b"at most 16384 bytes" in reply, reply
        chunk = b"x" * 4096
        chunked = [b"%x\r\n%s\r\n" % (len(chunk), chunk)] * 5  # 20 KiB of a body that never ends
        reply = await exchange(port, announced + b"Transfer-Encoding: chunked\r\n\r\n", chunked)
        assert reply.startswith(b"HTTP/1.1 413"), reply
        assert len(house.runner.core) == 0 and not outcomes(house)


async def test_an_idle_connection_outlives_the_clients_own_keep_alive():
    """A script's next announcement reuses the connection its client kept; the server must not be closing it at that
    moment (uvicorn's 5 s equalled httpx's expiry, and CI lost a request with a ReadError). Checked on the served
    server's own setting against the expiry of httpx (read from httpx) and aiohttp (15 s, Home Assistant's client)."""
    async with running_console(None, http_port=0) as house:
        kept_s = house.http.config.timeout_keep_alive
    assert kept_s > max(httpx.Limits().keepalive_expiry or 0, 15)
