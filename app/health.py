"""A background check of the remote engine that reconnects it and says when it was last seen healthy.

WebSocket: ``GET /ping`` on the same host (no token needed). SageMaker has no call to ask an endpoint how it is
without invoking it, so its live stream is the check, reopened with back-off when lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from voicedesk.app.messages import error_text
from voicedesk.app.wakeup import Wakeup, loop_running

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 120.0
PROBE_TIMEOUT_S = 5.0
LOADING_RETRY_S = 5.0  # a server loading its model is coming, not down: no backing off
SERVER_LOADING = "the server is loading its model"


@dataclass
class HealthRecord:
    last_ok: float | None = None  # ``time.time()`` last seen healthy
    failures: int = 0  # in a row
    problem: str = ""

    def ok(self, now: float) -> None:
        self.last_ok = now
        self.failures = 0
        self.problem = ""

    def failed(self, now: float, problem: str) -> None:
        self.failures += 1
        self.problem = problem

    @property
    def loading(self) -> bool:
        return self.problem == SERVER_LOADING

    def next_delay(self, interval_s: float) -> float:
        """Every ``interval_s`` while healthy, then doubling per failure up to ``MAX_BACKOFF_S``."""
        if self.failures == 0:
            return interval_s
        if self.loading:
            return min(LOADING_RETRY_S, interval_s)
        return min(interval_s * 2 ** min(self.failures, 6), max(MAX_BACKOFF_S, interval_s))

    def summary(self, interval_s: float) -> str:
        seen = f"last seen healthy {_clock(self.last_ok)}" if self.last_ok is not None else "not seen healthy yet"
        if self.failures == 0:
            return f"Checked every {interval_s:g} s · {seen}"
        if self.loading:
            return f"The server is loading its model · retrying in {self.next_delay(interval_s):g} s"
        return f"{seen[0].upper()}{seen[1:]} · retrying every {self.next_delay(interval_s):g} s"


def _clock(at: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at))


def ping_url(websocket_url: str) -> str:
    """ws://host:8080/invocations-bidirectional-stream → http://host:8080/ping (wss → https)."""
    parts = urlsplit(websocket_url)
    scheme = "https" if parts.scheme.lower() == "wss" else "http"
    return urlunsplit((scheme, parts.netloc, "/ping", "", ""))


async def probe_websocket(websocket_url: str, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """None when the server's ``/ping`` says it is ready, else what is wrong."""
    import httpx

    url = ping_url(websocket_url)
    try:
        async with httpx.AsyncClient(timeout=timeout_s) as client:
            response = await client.get(url)
    except httpx.InvalidURL as exc:  # the card already says what is wrong with the address
        return f"{url} is not a usable address: {exc}"
    except httpx.HTTPError as exc:
        return f"{url} did not answer: {exc or type(exc).__name__}"
    if response.status_code == 200:
        return None
    detail = code = ""
    with contextlib.suppress(ValueError, AttributeError):
        detail, code = str(response.json().get("message") or ""), response.json().get("code")
    if response.status_code == 503 and code == "not_ready":
        return SERVER_LOADING
    return f"{url} answered {response.status_code}" + (f": {detail}" if detail else "")


class HealthMonitor:
    def __init__(
        self,
        kind: Callable[[], str],
        target: Callable[[], str],
        connected: Callable[[], bool],
        reconnect: Callable[[], Awaitable[bool]],
        on_change: Callable[[HealthRecord], None],
        interval_s: float = 15.0,
        probe: Callable[[str], Awaitable[str | None]] = probe_websocket,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._kind = kind
        self._target = target
        self._connected = connected
        self._reconnect = reconnect
        self._on_change = on_change
        self.interval_s = interval_s
        self._probe = probe
        self._clock = clock
        self.record = HealthRecord()
        self._wake = Wakeup()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())

    def reset(self) -> None:
        """Another engine was chosen: start its record afresh and check it now."""
        self.record = HealthRecord()
        self._wake.set()

    def check_now(self) -> None:
        self._wake.set()

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def check(self) -> HealthRecord:
        kind = self._kind()
        if kind == "local":
            return self.record
        problem: str | None
        if kind == "websocket":
            problem = await self._probe(self._target())
            if problem is None and not self._connected():
                await self._reconnect()  # the server is back: connect now, not on the next reply
        else:  # SageMaker: the stream itself is the check
            problem = None if self._connected() or await self._reconnect() else "the endpoint could not be reached"
        if problem is None:
            self.record.ok(self._clock())
        else:
            self.record.failed(self._clock(), problem if problem == SERVER_LOADING else error_text(problem))
        self._on_change(self.record)
        return self.record

    async def _run(self) -> None:
        while True:
            await self._wake.wait(self.record.next_delay(self.interval_s))
            if not loop_running():  # woken by Qt outside the loop's run: check on the next round
                continue
            try:
                await self.check()
            except asyncio.CancelledError:
                raise
            except Exception:  # a check that breaks must not end the checking
                log.exception("the engine health check failed")
