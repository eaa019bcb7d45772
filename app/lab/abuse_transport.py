"""The abuse suite's attacks on the layers below the application, with raw sockets: slow headers (slowloris),
header bombs on plain HTTP and on the WebSocket upgrade, and frames over the WebSocket limit.

Attackers can come from other loopback addresses (``127.0.0.2`` …): on Linux all of ``127.0.0.0/8`` reaches a
server on ``127.0.0.1``, so one machine can play several clients and the per-client caps can be seen at work.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import time
from collections import Counter
from dataclasses import dataclass, field

from websockets.exceptions import ConnectionClosed

from voicedesk.app.lab.abuse_fuzz import Target
from voicedesk.engine.protocol import BIDI_PATH

REFUSED_AT_ONCE_S = 0.5
"""A connection the server closes this soon after connecting was refused by a cap, not timed out."""


# ---- slowloris --------------------------------------------------------------------------------------


@dataclass
class SlowlorisResult:
    connections: int
    sources: int
    outcomes: Counter[str] = field(default_factory=Counter)
    """``refused at once`` (a connection cap), ``closed by the server`` (the header timeout), ``still open``,
    ``could not connect``."""
    closed_after_s: list[float] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        closed = sorted(self.closed_after_s)
        return {
            "connections": self.connections,
            "sources": self.sources,
            "outcomes": dict(self.outcomes),
            "closed_after_s_max": round(closed[-1], 2) if closed else None,
        }


async def slowloris(
    target: Target,
    connections: int,
    sources: list[str],
    hold_s: float,
    dribble_s: float = 1.0,
    while_held: object = None,
    refused_within_s: float = REFUSED_AT_ONCE_S,
) -> tuple[SlowlorisResult, object]:
    """Opens ``connections`` (spread over ``sources``), each sending a request head one header line per
    ``dribble_s``, never finishing it; ``hold_s`` later, counts how each one ended. ``while_held``, an async
    callable, runs once all are open (a healthy client's request, say); its result is returned alongside.
    ``refused_within_s``: a connection closed sooner was refused by a cap (on a loaded machine, 500 refusals at once
    take more than ``REFUSED_AT_ONCE_S``; keep it well under the server's header timeout)."""
    result = SlowlorisResult(connections, len(sources))
    opened = asyncio.Event()
    started = 0

    async def one(source: str) -> None:
        nonlocal started
        began = time.monotonic()
        try:
            reader, writer = await asyncio.open_connection(target.host, target.port, local_addr=(source, 0))
        except OSError:
            result.outcomes["could not connect"] += 1
            return
        finally:
            started += 1
            if started == connections:
                opened.set()
        outcome = "still open"
        try:
            writer.write(b"GET /ping HTTP/1.1\r\nHost: victim\r\n")
            while time.monotonic() - began < hold_s:
                try:
                    data = await asyncio.wait_for(reader.read(4096), dribble_s)
                except TimeoutError:
                    if writer.is_closing():
                        break
                    writer.write(b"X-Slow: 1\r\n")
                    continue
                if not data:
                    outcome = "closed by the server"
                    break
        except (ConnectionResetError, BrokenPipeError):
            outcome = "closed by the server"
        finally:
            writer.transport.abort()
        if outcome != "still open":
            elapsed = time.monotonic() - began
            result.closed_after_s.append(elapsed)
            if elapsed < refused_within_s:
                outcome = "refused at once"
        result.outcomes[outcome] += 1

    tasks = [asyncio.create_task(one(sources[i % len(sources)])) for i in range(connections)]
    extra = None
    if while_held is not None:
        await opened.wait()
        await asyncio.sleep(REFUSED_AT_ONCE_S)
        extra = await while_held()  # type: ignore[operator]
    await asyncio.gather(*tasks)
    return result, extra


# ---- header bombs -----------------------------------------------------------------------------------


@dataclass
class HeaderBombResult:
    name: str
    planned_bytes: int
    sent_bytes: int = 0
    status: int | None = None
    code: str | None = None
    elapsed_s: float = 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "planned_bytes": self.planned_bytes,
            "sent_before_refusal": self.sent_bytes,
            "status": self.status,
            "code": self.code,
            "elapsed_s": round(self.elapsed_s, 2),
        }


def upgrade_head(target: Target) -> bytes:
    key = base64.b64encode(os.urandom(16)).decode()
    return (
        f"GET {BIDI_PATH} HTTP/1.1\r\nHost: {target.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
    ).encode()


async def header_bomb(target: Target, name: str, head: bytes, filler: bytes, total_bytes: int) -> HeaderBombResult:
    """Sends ``head`` then ``filler`` again and again, up to ``total_bytes``, never ending the head; reads what the
    server answers meanwhile."""
    result = HeaderBombResult(name, total_bytes)
    started = time.monotonic()
    reader, writer = await asyncio.open_connection(target.host, target.port)
    answer = asyncio.create_task(_read_answer(reader))
    chunk = filler * max(1, 64 * 1024 // len(filler))
    try:
        writer.write(head)
        result.sent_bytes = len(head)
        while result.sent_bytes < total_bytes and not answer.done():
            writer.write(chunk)
            await writer.drain()
            result.sent_bytes += len(chunk)
        if not answer.done():
            writer.write(b"\r\n")
            await writer.drain()
    except OSError:
        pass
    try:
        raw = await asyncio.wait_for(answer, 30)
    except TimeoutError:
        raw = b""
    writer.transport.abort()
    result.elapsed_s = time.monotonic() - started
    status_line, _, rest = raw.partition(b"\r\n")
    parts = status_line.split()
    if len(parts) >= 2 and parts[1].isdigit():
        result.status = int(parts[1])
        body = rest.partition(b"\r\n\r\n")[2]
        with contextlib.suppress(ValueError, AttributeError):
            result.code = json.loads(body).get("code")
    return result


async def _read_answer(reader: asyncio.StreamReader) -> bytes:
    data = b""
    with contextlib.suppress(OSError):  # a reset after the answer: what was read is the answer
        while chunk := await reader.read(65536):
            data += chunk
    return data


async def header_bombs(target: Target, total_bytes: int) -> list[HeaderBombResult]:
    line = b"X-Pad: " + b"a" * 1000 + b"\r\n"
    http_head = f"POST /invocations HTTP/1.1\r\nHost: {target.host}\r\n".encode()
    cases = [
        ("many headers, HTTP", http_head, line),
        ("one endless header, HTTP", http_head + b"X-Endless: ", b"a" * 4096),
        ("many headers, WebSocket upgrade", upgrade_head(target), line),
    ]
    return [await header_bomb(target, name, head, filler, total_bytes) for name, head, filler in cases]


# ---- frames over the WebSocket limit -------------------------------------------------------------------


@dataclass
class OversizedFramesResult:
    connections: int
    frame_bytes: int
    close_codes: Counter[int] = field(default_factory=Counter)
    elapsed_s: float = 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "connections": self.connections,
            "frame_bytes": self.frame_bytes,
            "close_codes": {str(k): v for k, v in self.close_codes.items()},
            "elapsed_s": round(self.elapsed_s, 2),
        }


async def oversized_frames(
    target: Target, connections: int, frame_bytes: int, sources: list[str] | None = None
) -> OversizedFramesResult:
    """``connections`` sessions at once (spread over ``sources``: the per-client session cap is not the subject),
    each sending one frame of ``frame_bytes`` (half text, half binary)."""
    result = OversizedFramesResult(connections, frame_bytes)
    started = time.monotonic()

    async def one(i: int) -> None:
        frame: str | bytes = "a" * frame_bytes if i % 2 else b"\0" * frame_bytes
        code = -1
        try:
            source = sources[i % len(sources)] if sources else None
            async with target.connect(source, close_timeout=5) as ws:
                with contextlib.suppress(ConnectionClosed, OSError):
                    await ws.send(frame)
                    async with asyncio.timeout(60):
                        while True:
                            await ws.recv()
                code = ws.close_code if ws.close_code is not None else -1
        except (ConnectionClosed, OSError, TimeoutError):
            pass
        result.close_codes[code] += 1

    await asyncio.gather(*(one(i) for i in range(connections)))
    result.elapsed_s = time.monotonic() - started
    return result
