"""The attack clients of ``voicedesk bench abuse --only valid`` (issue 34): attacks made of **valid** input, which
no junk budget sees. Each runs in a process of its own until told to stop and reports what it did and was told
(``Counter`` of outcomes). Every attacker comes from its own loopback addresses (127.0.0.30 and up); the healthy
client is 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from voicedesk.engine.protocol import BIDI_PATH

Stop = Callable[[], bool]
LEXICON = [{"word": f"t{i}", "phonemes": "tˈɜm"} for i in range(6_000)]
"""6,000 valid entries (about 150 KB): a whole pronunciation list, under the frame limit."""
EXPANDING = "[a](" * 3_000
"""12 KB that read as one chunk of about 1,850 characters before issue 34 (misaki's link pattern is quadratic)."""
LONG_READS = ("๑๒๓ สวัสดีครับ ยินดีต้อนรับ " * 400)[:9_800], "🎉🎈🎂 " * 2_400, "9,876,543,210 " * 700
"""Texts that read 5-22 times longer than their length suggests: Thai, emoji read by name, digits."""
PLAYBACK_BYTES_PER_S = 48_000
"""PCM16 at 24 kHz: a client reading at playback speed."""
SPEAKING_TEXT = "The living room lights are on and the heating is set to twenty one degrees. " * 3


@dataclass(frozen=True, slots=True)
class AttackTarget:
    host: str
    port: int
    wyoming_port: int | None = None

    @property
    def ws_url(self) -> str:
        return f"ws://{self.host}:{self.port}{BIDI_PATH}"

    @property
    def http_url(self) -> str:
        return f"http://{self.host}:{self.port}"


def _session(target: AttackTarget, source: str) -> connect:
    return connect(target.ws_url, open_timeout=60, max_size=None, local_addr=(source, 0))


async def _count_replies(ws: ClientConnection, stats: Counter[str], done: asyncio.Event | None = None) -> None:
    """Counts error codes; sets ``done`` at each ``synthesis_complete`` or error."""
    with contextlib.suppress(ConnectionClosed):
        async for reply in ws:
            if isinstance(reply, bytes):
                continue
            message = json.loads(reply)
            kind = message.get("type")
            if kind == "error":
                stats[f"told {message.get('code')}"] += 1
            if done is not None and kind in ("synthesis_complete", "error"):
                done.set()


async def _held(target: AttackTarget, source: str, stop: Stop, stats: Counter[str], body) -> None:  # type: ignore[no-untyped-def]
    """A session from ``source`` running ``body(ws)``, reopened whenever the server closes or refuses it."""
    while not stop():
        try:
            async with _session(target, source) as ws:
                stats["sessions opened"] += 1
                await body(ws)
                stats[f"closed {ws.close_code}"] += 1
        except (ConnectionClosed, InvalidStatus, OSError, TimeoutError) as exc:
            stats[f"refused or dropped ({type(exc).__name__})"] += 1
            await asyncio.sleep(0.05)


async def _until(condition: Callable[[], bool]) -> None:
    """Polls: the stop flag is another process's (a multiprocessing event), with nothing to await."""
    while not condition():  # noqa: ASYNC110
        await asyncio.sleep(0.05)


async def _idle(ws: ClientConnection, stop: Stop, stats: Counter[str]) -> None:
    """Holds the session doing nothing until told to stop or closed by the server."""
    reader = asyncio.create_task(_count_replies(ws, stats))
    await _until(lambda: stop() or reader.done())
    reader.cancel()


# ---- 34.1: pronunciation lists --------------------------------------------------------------------------


async def lexicon_configs(target: AttackTarget, stop: Stop, stats: Counter[str]) -> None:
    """Four sessions, each sending a 6,000-entry lexicon ``config`` six times a second."""
    frame = json.dumps({"type": "config", "lexicon": LEXICON}, ensure_ascii=False)

    async def body(ws: ClientConnection) -> None:
        reader = asyncio.create_task(_count_replies(ws, stats))
        while not stop() and not reader.done():
            await ws.send(frame)
            stats["lexicon configs sent"] += 1
            await asyncio.sleep(1 / 6)
        reader.cancel()

    await asyncio.gather(*(_held(target, f"127.0.0.{30 + i}", stop, stats, body) for i in range(4)))


async def lexicon_http(target: AttackTarget, stop: Stop, stats: Counter[str]) -> None:
    """Two connections posting ``/invocations`` with a 6,000-entry lexicon, back to back."""
    body = {"text": "Hi.", "lexicon": LEXICON, "format": "pcm"}

    async def poster(source: str) -> None:
        transport = httpx.AsyncHTTPTransport(local_address=source)
        async with httpx.AsyncClient(transport=transport, timeout=120) as client:
            while not stop():
                with contextlib.suppress(httpx.HTTPError):
                    response = await client.post(target.http_url + "/invocations", json=body)
                    stats[f"status {response.status_code}"] += 1

    await asyncio.gather(poster("127.0.0.34"), poster("127.0.0.35"))


# ---- 34.2-34.4: spoken floods, expanding text, long reads ------------------------------------------------


async def spoken_flood(target: AttackTarget, stop: Stop, stats: Counter[str]) -> None:
    """One session sending 1,000 one-word ``text`` frames a second, reading its audio as fast as it comes."""

    async def body(ws: ClientConnection) -> None:
        reader = asyncio.create_task(_count_replies(ws, stats))
        began, sent = time.monotonic(), 0
        while not stop() and not reader.done():
            ahead = began + sent / 1_000 - time.monotonic()
            if ahead > 0:
                await asyncio.sleep(ahead)
            await ws.send(json.dumps({"type": "text", "text": f"token{sent} "}))
            sent += 1
        stats["text frames sent"] += sent
        reader.cancel()

    await _held(target, "127.0.0.36", stop, stats, body)


async def _requests(target: AttackTarget, source: str, texts: tuple[str, ...], stop: Stop, stats: Counter[str]) -> None:
    """Whole requests one after another on one session, each sent once the last is answered."""

    async def body(ws: ClientConnection) -> None:
        done = asyncio.Event()
        reader = asyncio.create_task(_count_replies(ws, stats, done))
        n = 0
        while not stop() and not reader.done():
            done.clear()
            await ws.send(json.dumps({"text": texts[n % len(texts)], "request_id": f"attack-{n}"}))
            stats["requests sent"] += 1
            n += 1
            await _until(lambda: done.is_set() or stop() or reader.done())
        reader.cancel()

    await _held(target, source, stop, stats, body)


async def expanding_request(target: AttackTarget, stop: Stop, stats: Counter[str]) -> None:
    """One session sending 12 KB of ``[a](`` as whole requests, one after another."""
    await _requests(target, "127.0.0.37", (EXPANDING,), stop, stats)


async def long_reads(target: AttackTarget, stop: Stop, stats: Counter[str]) -> None:
    """One session sending 9,800 characters of Thai, emoji or digits as whole requests, one after another."""
    await _requests(target, "127.0.0.38", LONG_READS, stop, stats)


# ---- 34.5-34.7: holding slots ---------------------------------------------------------------------------


async def http_streams(target: AttackTarget, stop: Stop, stats: Counter[str]) -> None:
    """Four addresses × four ``POST /invocations`` streams read at playback speed, reopened when they end."""

    async def stream(source: str) -> None:
        transport = httpx.AsyncHTTPTransport(local_address=source)
        async with httpx.AsyncClient(transport=transport, timeout=120) as client:
            while not stop():
                try:
                    body = {"text": SPEAKING_TEXT, "format": "pcm"}
                    async with client.stream("POST", target.http_url + "/invocations", json=body) as response:
                        stats[f"status {response.status_code}"] += 1
                        began, taken = time.monotonic(), 0
                        async for chunk in response.aiter_bytes(4_800):
                            taken += len(chunk)
                            await asyncio.sleep(max(0.0, began + taken / PLAYBACK_BYTES_PER_S - time.monotonic()))
                            if stop():
                                break
                except httpx.HTTPError as exc:
                    stats[f"stream broken ({type(exc).__name__})"] += 1
                await asyncio.sleep(0.05)

    await asyncio.gather(*(stream(f"127.0.0.{50 + a}") for a in range(4) for _ in range(4)))


async def speaking_and_idle(target: AttackTarget, stop: Stop, stats: Counter[str]) -> None:
    """127.0.0.40 holds four sessions that speak without pause; 127.0.0.41-43 hold four idle sessions each."""
    speaking = Counter[str]()

    async def speak(ws: ClientConnection) -> None:
        done = asyncio.Event()
        reader = asyncio.create_task(_count_replies(ws, speaking, done))
        while not stop() and not reader.done():
            done.clear()
            await ws.send(json.dumps({"text": SPEAKING_TEXT}))
            await _until(lambda: done.is_set() or stop() or reader.done())
        reader.cancel()

    async def idle(ws: ClientConnection) -> None:
        await _idle(ws, stop, stats)

    tasks = [_held(target, "127.0.0.40", stop, speaking, speak) for _ in range(4)]
    tasks += [_held(target, f"127.0.0.{41 + a}", stop, stats, idle) for a in range(3) for _ in range(4)]
    await asyncio.gather(*tasks)
    stats.update({f"speaking: {key}": n for key, n in speaking.items()})


async def wyoming_slots(target: AttackTarget, stop: Stop, stats: Counter[str]) -> None:
    """Eight addresses × eight Wyoming connections that only ``ping`` every two seconds, reopened when closed."""

    async def hold(source: str) -> None:
        while not stop():
            try:
                reader, writer = await asyncio.open_connection(target.host, target.wyoming_port, local_addr=(source, 0))
                stats["connections opened"] += 1
                while not stop() and not reader.at_eof():
                    writer.write(b'{"type": "ping", "data": {}}\n')
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(2.0):
                            while line := await reader.readline():
                                if b'"type": "error"' in line:
                                    stats["told an error (evicted or refused)"] += 1
                writer.close()
            except (OSError, ValueError) as exc:
                stats[f"refused or dropped ({type(exc).__name__})"] += 1
            await asyncio.sleep(0.05)

    await asyncio.gather(*(hold(f"127.0.0.{60 + a}") for a in range(8) for _ in range(8)))


# ---- 34.8-34.9: unknown voices, pings, reconnecting into the cap -----------------------------------------


async def unknown_voices(target: AttackTarget, stop: Stop, stats: Counter[str]) -> None:
    """Four sessions each asking for a new unknown voice in every frame, as fast as they are read."""
    counter = iter(range(10**9))

    async def body(ws: ClientConnection) -> None:
        reader = asyncio.create_task(_count_replies(ws, stats))
        while not stop() and not reader.done():
            n = next(counter)
            await ws.send(json.dumps({"type": "config", "voice": f"af_zz{n}"}))
            if n % 64 == 0:
                await asyncio.sleep(0)  # let the reader see the answers (and a close)
        reader.cancel()

    await asyncio.gather(*(_held(target, f"127.0.0.{70 + i}", stop, stats, body) for i in range(4)))


async def ping_flood(target: AttackTarget, stop: Stop, stats: Counter[str]) -> None:
    """One WebSocket sending ping frames as fast as the socket takes them."""

    async def body(ws: ClientConnection) -> None:
        sent = 0
        while not stop() and ws.close_code is None:
            await ws.ping(sent.to_bytes(8, "big"))
            sent += 1
            if sent % 256 == 0:
                await asyncio.sleep(0)
        stats["pings sent"] += sent

    await _held(target, "127.0.0.80", stop, stats, body)


async def reconnect_into_cap(target: AttackTarget, stop: Stop, stats: Counter[str]) -> None:
    """127.0.0.90 holds its four sessions and reconnects for a fifth as fast as it is refused."""

    async def hold(ws: ClientConnection) -> None:
        await _idle(ws, stop, Counter())

    holders = [asyncio.create_task(_held(target, "127.0.0.90", stop, Counter(), hold)) for _ in range(4)]
    await asyncio.sleep(1.0)
    while not stop():
        try:
            async with _session(target, "127.0.0.90") as ws:
                await _count_replies(ws, stats)
        except (ConnectionClosed, InvalidStatus, OSError, TimeoutError):
            stats["refused"] += 1
        stats["attempts"] += 1
    await asyncio.gather(*holders)


Attack = Callable[[AttackTarget, Stop, Counter[str]], Awaitable[None]]
ATTACKS: dict[str, tuple[str, Attack]] = {
    "lexicon": ("34.1: 4 sessions × 6,000-entry lexicon config, 6/s each", lexicon_configs),
    "lexicon over HTTP": ("34.1: 2 connections posting a 6,000-entry lexicon back to back", lexicon_http),
    "spoken flood": ("34.2: a session sending 1,000 text frames/s", spoken_flood),
    "expanding text": ("34.2/34.4: 12 KB of [a]( as whole requests", expanding_request),
    "long reads": ("34.3: 9,800 chars of Thai / emoji / digits as whole requests", long_reads),
    "HTTP streams": ("34.5: 4 addresses × 4 streams read at playback speed", http_streams),
    "speaking vs idle": ("34.6: 4 speaking sessions, 12 idle ones of 3 addresses", speaking_and_idle),
    "Wyoming slots": ("34.7: 8 addresses × 8 Wyoming connections, pinging", wyoming_slots),
    "unknown voices": ("34.8: 4 sessions asking for new unknown voices", unknown_voices),
    "ping flood": ("34.9: WebSocket pings as fast as the socket takes them", ping_flood),
    "reconnect into cap": ("34.9: a fifth session reconnecting into the per-address cap", reconnect_into_cap),
}


def run_attack(name: str, target: AttackTarget, started, stop, results) -> None:  # type: ignore[no-untyped-def]
    """The attack process: runs ``ATTACKS[name]`` until ``stop`` is set, then reports its counts and CPU."""
    stats: Counter[str] = Counter()
    began = time.monotonic()
    started.set()
    try:
        asyncio.run(ATTACKS[name][1](target, stop.is_set, stats))
    except Exception as exc:  # reported, not hidden: a broken attack measures nothing
        stats[f"attack failed: {type(exc).__name__}: {exc}"[:200]] += 1
    stats["cpu ms"] = round(time.process_time() * 1000)
    stats["seconds"] = round(time.monotonic() - began)
    results.put(dict(stats))
