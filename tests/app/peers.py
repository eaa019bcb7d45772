"""Real servers on 127.0.0.1 for the app's tests: any ASGI app under uvicorn, in a background thread."""

from __future__ import annotations

import binascii
import json
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn


@contextmanager
def serve(app: object) -> Iterator[str]:
    """Runs ``app`` on an ephemeral port; yields its base URL (``http://127.0.0.1:PORT``)."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="test-peer", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def sse(payload: object) -> bytes:
    """One server-sent event carrying JSON (or the literal ``[DONE]``)."""
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return f"data: {data}\n\n".encode()


def event_stream_message(event_type: str, payload: dict[str, object]) -> bytes:
    """One AWS event-stream message (application/vnd.amazon.eventstream), as Bedrock's converse-stream sends.

    Layout: total length, headers length, prelude CRC32; headers (name, type 7 = string, value); JSON
    payload; CRC32 of everything before. The tests check it against botocore's own decoder first.
    """
    headers = b""
    for name, value in ((":event-type", event_type), (":content-type", "application/json"), (":message-type", "event")):
        encoded = value.encode()
        headers += bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(encoded)) + encoded
    body = json.dumps(payload).encode()
    total = 12 + len(headers) + len(body) + 4
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", binascii.crc32(prelude) & 0xFFFFFFFF)
    message = prelude + headers + body
    return message + struct.pack(">I", binascii.crc32(message) & 0xFFFFFFFF)
