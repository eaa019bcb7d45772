"""Every HTTP refusal (but the OpenAI route's, which speaks OpenAI's shape) has one JSON shape, built by one function:
a bad request, an unknown route, a wrong method, a missing token, a request uvicorn cannot parse."""

from __future__ import annotations

import json
import socket

import httpx

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
    for code, response in answers.items():
        body = response.json()
        assert set(body) >= SHAPE, (code, body)
        assert body["type"] == "error" and body["code"] == body["error"] == code, body
    status, body = _raw_request(running.port, b"GET /ping HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n")
    assert status == 400
    assert set(body) >= SHAPE and body["code"] == ErrorCode.BAD_MESSAGE
