"""Every HTTP refusal (but the OpenAI routes', which speak OpenAI's shape) has one JSON shape, from one handler:
a bad request, an unknown route, a wrong method, a missing token, a request uvicorn cannot parse."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import httpx

from voicedesk.endpoint.http_errors import answer
from voicedesk.endpoint.server import create_app
from voicedesk.engine.errors import ErrorCode

SHAPE = {"type", "code", "message", "request_id", "error"}


def _raw_request(port: int, request: bytes) -> tuple[int, dict]:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def test_every_refusal_has_the_same_shape(make_server):
    running = make_server(token="lab-token")
    auth = {"Authorization": "Bearer lab-token"}
    with httpx.Client(base_url=running.http_url, timeout=30) as client:
        answers = {
            ErrorCode.BAD_JSON: client.post("/invocations", content=b"{not json", headers=auth),
            ErrorCode.NOT_FOUND: client.get("/nowhere", headers=auth),
            ErrorCode.METHOD_NOT_ALLOWED: client.get("/invocations", headers=auth),
            ErrorCode.UNAUTHORIZED: client.post("/invocations", json={"text": "Hi."}),
        }
    assert answers[ErrorCode.UNAUTHORIZED].headers["WWW-Authenticate"] == 'Bearer realm="voicedesk"'
    assert answers[ErrorCode.METHOD_NOT_ALLOWED].status_code == 405
    assert "POST" in answers[ErrorCode.METHOD_NOT_ALLOWED].headers["Allow"]
    for code, response in answers.items():
        body = response.json()
        assert set(body) >= SHAPE, (code, body)
        assert body["type"] == "error" and body["code"] == body["error"] == code, body
    status, body = _raw_request(running.port, b"GET /ping HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n")
    assert status == 400
    assert set(body) >= SHAPE and body["code"] == ErrorCode.BAD_MESSAGE


def test_one_exception_handler_answers_every_http_error(synthesizer):
    """Routes raise ``Refusal``; it, Starlette's own refusals and bugs all reach the one handler."""
    assert set(create_app(synthesizer).exception_handlers.values()) == {answer}


def test_error_bodies_are_built_in_one_module():
    """``error_body`` is called where error answers are built, and below Starlette (a request uvicorn cannot
    parse, answered by the transport guard); routes never build an error answer themselves."""
    endpoint = Path(__file__).resolve().parents[2] / "endpoint"
    callers = {p.name for p in endpoint.rglob("*.py") if "error_body(" in p.read_text(encoding="utf-8")}
    assert callers == {"http_errors.py", "transport_guards.py"}


def test_a_bug_in_a_route_is_answered_in_the_routes_shape(make_server, monkeypatch):
    running = make_server()

    def broken(*_args):
        raise RuntimeError("a bug")

    monkeypatch.setattr("voicedesk.endpoint.speech.routes.check_budget", broken)
    with httpx.Client(base_url=running.http_url, timeout=30) as client:
        ours = client.post("/invocations", json={"text": "Hi.", "request_id": "r1"})
        openai = client.post("/v1/audio/speech", json={"model": "kokoro", "input": "Hi.", "voice": "af_heart"})
    assert ours.status_code == openai.status_code == 500
    assert ours.json()["code"] == ErrorCode.INTERNAL and ours.json()["request_id"] == "r1"
    assert openai.json()["error"]["code"] == ErrorCode.INTERNAL
