"""A real server's answers to what is not a normal request: TLS with a client trusting a test CA, a non-ASCII
token, ``/ping`` to strangers, JSON for every HTTP error, and a log that client values cannot write lines into."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import ssl

import httpx
import pytest
import trustme
from starlette.requests import Request
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.support.endpoint import bidi, receive_until
from voicedesk.endpoint.server import may_see_details
from voicedesk.endpoint.settings import ServerSettings
from voicedesk.engine.errors import ErrorCode
from voicedesk.engine.protocol import BIDI_PATH

# ---- TLS ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls(tmp_path_factory) -> tuple[ssl.SSLContext, str, str]:
    folder = tmp_path_factory.mktemp("tls")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert.cert_chain_pems[0].write_to_path(str(cert_path))
    cert.private_key_pem.write_to_path(str(key_path))
    client = ssl.create_default_context()
    ca.configure_trust(client)
    return client, str(cert_path), str(key_path)


async def test_tls_serves_https_and_wss_to_a_client_that_trusts_the_ca(make_server, tls):
    client_context, cert, key = tls
    running = make_server(tls_cert=cert, tls_key=key, token="lab-token")
    base = f"https://127.0.0.1:{running.port}"
    headers = {"Authorization": "Bearer lab-token"}
    async with httpx.AsyncClient(base_url=base, verify=client_context) as client:
        voices = await client.get("/v1/audio/voices", headers=headers)
        assert voices.status_code == 200 and "af_heart" in voices.json()["voices"]
        speech = await client.post("/invocations", json={"text": "Hi.", "format": "pcm"}, headers=headers)
        assert speech.status_code == 200 and len(speech.content) > 1000
    async with connect(
        f"wss://127.0.0.1:{running.port}{BIDI_PATH}", ssl=client_context, additional_headers=headers
    ) as ws:
        await ws.send(json.dumps({"text": "Hi.", "request_id": "tls"}))
        frames = await receive_until(ws, "synthesis_complete")
    assert len(frames.audio) > 0
    # Without the CA the certificate is not trusted; plain HTTP on the TLS port gets no answer.
    async with httpx.AsyncClient(base_url=base) as untrusting:
        with pytest.raises(httpx.ConnectError):
            await untrusting.get("/ping")
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{running.port}") as plain:
        with pytest.raises(httpx.TransportError):
            await plain.get("/ping")


# ---- the token ------------------------------------------------------------------------------------

NON_ASCII_TOKEN = "pässwörd-✓-令牌"


async def test_a_non_ascii_token_matches_as_utf8(make_server):
    running = make_server(token=NON_ASCII_TOKEN)
    utf8 = b"Bearer " + NON_ASCII_TOKEN.encode("utf-8")
    async with httpx.AsyncClient(base_url=running.http_url) as client:
        assert (await client.get("/v1/audio/voices", headers={"Authorization": utf8})).status_code == 200
        latin1 = b"Bearer " + "pässwörd".encode("latin-1")
        assert (await client.get("/v1/audio/voices", headers={"Authorization": latin1})).status_code == 401
    # websockets writes header values as ISO-8859-1: the project's client hands it the UTF-8 bytes that way.
    from voicedesk.engine.clients.websocket import WebSocketChannel, WebSocketSettings

    channel = await WebSocketChannel.open(
        WebSocketSettings(url=running.ws_url + BIDI_PATH, token=NON_ASCII_TOKEN),
        json.dumps({"text": "Hi.", "request_id": "utf8"}),
    )
    try:
        kinds = []
        async with asyncio.timeout(120):
            while "synthesis_complete" not in kinds:
                frame = await channel.receive()
                assert frame is not None, "the server closed the session"
                if isinstance(frame, str):
                    kinds.append(json.loads(frame)["type"])
    finally:
        await channel.close()
    assert "synthesis_start" in kinds and "error" not in kinds


# ---- /ping ----------------------------------------------------------------------------------------


async def test_ping_tells_strangers_only_healthy_and_details_to_the_token(make_server):
    running = make_server(token="lab-token")
    async with httpx.AsyncClient(base_url=running.http_url) as client:
        stranger = await client.get("/ping")
        wrong = await client.get("/ping", headers={"Authorization": "Bearer nope"})
        owner = await client.get("/ping", headers={"Authorization": "Bearer lab-token"})
    assert (stranger.status_code, stranger.json()) == (200, {"status": "healthy"})
    assert wrong.json() == {"status": "healthy"}
    assert owner.status_code == 200
    assert owner.json() == {"status": "healthy", "state": "ready", "sessions": 0}


async def test_ping_hides_why_loading_failed_from_strangers(make_server):
    def broken():
        raise RuntimeError("secret path /srv/models/kokoro.pth is unreadable")

    running = make_server(broken, wait_ready=False, token="lab-token")
    assert not await asyncio.to_thread(running.runtime.wait_ready, 60)
    async with httpx.AsyncClient(base_url=running.http_url) as client:
        stranger = await client.get("/ping")
        owner = await client.get("/ping", headers={"Authorization": "Bearer lab-token"})
    assert (stranger.status_code, stranger.json()) == (503, {"status": "unhealthy"})
    assert owner.status_code == 503
    assert owner.json()["state"] == "failed" and "/srv/models" in owner.json()["message"]


def _request(client: tuple[str, int], headers: list[tuple[bytes, bytes]] | None = None) -> Request:
    """An ASGI request scope as uvicorn builds it, from a given peer (the tests' servers are all on loopback)."""
    return Request({"type": "http", "method": "GET", "path": "/ping", "headers": headers or [], "client": client})


def test_without_a_token_only_this_machine_sees_the_details():
    open_server = ServerSettings()
    assert may_see_details(_request(("127.0.0.1", 5000)), open_server)
    assert not may_see_details(_request(("192.0.2.7", 5000)), open_server)
    guarded = ServerSettings(token="t")
    assert not may_see_details(_request(("127.0.0.1", 5000)), guarded)
    assert may_see_details(_request(("192.0.2.7", 5000), [(b"authorization", b"Bearer t")]), guarded)


# ---- every HTTP error is JSON -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "code"),
    [
        ("GET", "/nowhere", None, 404, ErrorCode.NOT_FOUND),
        ("GET", "/invocations", None, 405, ErrorCode.METHOD_NOT_ALLOWED),
        ("POST", "/invocations", b"[" * 100_000, 400, ErrorCode.BAD_JSON),
        ("POST", "/v1/audio/speech", b'{"input": ' * 20_000, 400, ErrorCode.BAD_JSON),
        ("POST", "/invocations", b'{"text": "Hi.", "speed": ' + b"9" * 5_000 + b"}", 400, ErrorCode.BAD_JSON),
        ("POST", "/invocations", b'{"text": "Hi.", "speed": ' + b"9" * 400 + b"}", 400, ErrorCode.BAD_SPEED),
        ("POST", "/invocations", b'{"text": "Hi.", "sample_rate": Infinity}', 400, ErrorCode.BAD_MESSAGE),
        ("POST", "/invocations", b'{"text": "Hi.", "request_timestamp": 1e400}', 400, ErrorCode.BAD_MESSAGE),
        ("POST", "/invocations", b'{"text": "Hi.", "request_id": "\\ud800"}', 400, ErrorCode.BAD_JSON),
        ("POST", "/invocations", b'{"text": "Hi.", "request_id": [1, 2]}', 400, ErrorCode.BAD_MESSAGE),
        ("POST", "/invocations", b'{"text": "Hi.", "voice": "' + b"v" * 5_000 + b'"}', 400, ErrorCode.BAD_MESSAGE),
        ("POST", "/invocations", b'{"text": "Hi.", "voice": "af_heart:1e308,am_adam:1e308"}', 400, "unknown_voice"),
        ("POST", "/invocations", b'{"text": "Hi.", "voice": "~nosuchuser/v.pt"}', 400, ErrorCode.UNKNOWN_VOICE),
    ],
)
async def test_http_errors_are_json_with_a_code(server, method, path, body, status, code):
    async with httpx.AsyncClient(base_url=server.http_url, timeout=60) as client:
        response = await client.request(method, path, content=body)
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    payload = response.json()
    assert (payload.get("code") or payload["error"]["code"]) == code
    message = payload.get("message") or payload["error"]["message"]
    assert 20 < len(message) < 400 and "Traceback" not in message


async def test_unparseable_http_and_unknown_routes_behind_a_token_are_json(make_server):
    running = make_server(token="lab-token")
    reader, writer = await asyncio.open_connection("127.0.0.1", running.port)
    writer.write(b"NOT HTTP AT ALL\r\n\r\n")
    raw = await asyncio.wait_for(reader.read(), 30)
    writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400") and b"application/json" in head
    assert json.loads(body)["code"] == ErrorCode.BAD_MESSAGE
    async with httpx.AsyncClient(base_url=running.http_url) as client:
        refused = await client.get("/nowhere")
        found = await client.get("/nowhere", headers={"Authorization": "Bearer lab-token"})
    assert (refused.status_code, refused.json()["code"]) == (401, ErrorCode.UNAUTHORIZED)
    assert (found.status_code, found.json()["code"]) == (404, ErrorCode.NOT_FOUND)


# ---- the log --------------------------------------------------------------------------------------


def _log_lines(caplog) -> list[str]:  # type: ignore[no-untyped-def]
    return [record.getMessage() for record in caplog.records]


async def test_client_values_cannot_write_their_own_log_lines(make_server, caplog, monkeypatch):
    caplog.set_level(logging.INFO)
    # uvicorn's own logging set-up (run in-process by other tests) may leave its loggers at WARNING and stop their
    # records at the "uvicorn" logger: this test reads uvicorn's INFO lines.
    monkeypatch.setattr(logging.getLogger("uvicorn"), "propagate", True)
    caplog.set_level(logging.INFO, logger="uvicorn.error")
    running = make_server(token="lab-token")
    forged = "x\nFORGED 1999-01-01 ERROR root: the server is on fire\x1b[2J"
    headers = {"Authorization": "Bearer lab-token"}
    async with httpx.AsyncClient(base_url=running.http_url, timeout=60) as client:
        body = {"text": "Hi.", "request_id": forged, "format": "pcm"}
        assert (await client.post("/invocations", json=body, headers=headers)).status_code == 200
        # The path is logged (percent-decoded) when the token is missing: no token is needed to choose it.
        assert (await client.get("/x%0AFORGED%201999-01-01%20ERROR%20root")).status_code == 401
    with pytest.raises(InvalidStatus):
        async with connect(running.ws_url + "/x%0AFORGED%201999-01-01%20ERROR%20root", additional_headers=headers):
            pass
    async with bidi(running, additional_headers=headers) as ws:
        await ws.send(json.dumps({"text": "Hi.", "voice": "zz\nFORGED", "request_id": forged}))
        await receive_until(ws, "error")
    lines = _log_lines(caplog)
    assert any("invocation x\\nFORGED" in line for line in lines), lines
    assert any("refused http /x\\nFORGED" in line for line in lines), lines
    assert any("WebSocket /x%0AFORGED" in line for line in lines), lines
    for line in lines:
        assert "\n" not in line and "\x1b" not in line, line


async def test_a_flood_of_bad_frames_is_logged_as_counts_without_tracebacks(make_server, caplog):
    server = make_server()  # its own: the bad-frame summary is per server, once per interval
    caplog.set_level(logging.INFO)
    async with bidi(server) as ws:
        for i in range(35):  # within the junk budget (bursts of 40): each is answered
            await ws.send(["{not json", b"\xff\xfe", '{"type": "dance"}', "[" * 10_000][i % 4])
        await ws.send(json.dumps({"type": "flush", "request_id": "end"}))
        await receive_until(ws, "flushed")
    assert not [r for r in caplog.records if r.exc_info]
    counts = [r.getMessage() for r in caplog.records if "could not be understood" in r.getMessage()]
    assert 1 <= len(counts) <= 3, counts


async def test_repeated_malformed_requests_are_answered_and_logged_once_per_interval(server, caplog):
    caplog.set_level(logging.WARNING)

    def send_junk() -> list[bytes]:
        answers = []
        for _ in range(30):
            with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
                sock.sendall(b"BROKEN\r\n\r\n")
                answers.append(sock.recv(4096))
        return answers

    answers = await asyncio.to_thread(send_junk)
    assert all(answer.startswith(b"HTTP/1.1 400") for answer in answers)
    # uvicorn says "Invalid HTTP request received." per request; the guard lets one through per interval.
    warnings = [line for line in _log_lines(caplog) if "Invalid HTTP request" in line]
    assert len(warnings) <= 2, warnings


def test_log_guard_escapes_arguments_and_counts_what_it_held_back():
    from voicedesk.endpoint.log_safety import ServerLogGuard

    guard = ServerLogGuard(interval_s=3600)
    first = logging.LogRecord("uvicorn.error", logging.WARNING, __file__, 1, "bad %s", ("a\nb",), None)
    assert guard.filter(first) and first.getMessage() == "bad a\\nb"
    held = [logging.LogRecord("uvicorn.error", logging.WARNING, __file__, 1, "bad %s", ("c",), None) for _ in range(5)]
    assert not any(guard.filter(record) for record in held)
    info = logging.LogRecord("uvicorn.error", logging.INFO, __file__, 1, "%s", ("d\re",), None)
    assert guard.filter(info) and info.getMessage() == "d\\re"
