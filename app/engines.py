"""The selected engine and the loaded local one (what a failing remote reply falls back to, so it stays loaded
after a switch), each state change reported as an ``EngineStatus``; the model loads on a worker thread.

SageMaker has no call to ask an endpoint how it is without invoking it, so its live stream is its health check,
reopened with back-off when lost; a WebSocket engine asks ``GET /ping``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum

from voicedesk.app.messages import error_text
from voicedesk.app.urls import ENGINE_SCHEMES, url_problem
from voicedesk.app.wakeup import Wakeup, loop_running
from voicedesk.engine.api import Engine, Session
from voicedesk.engine.clients.websocket import http_url
from voicedesk.engine.engine_spec import EngineSpec
from voicedesk.engine.errors import ConnectionFailed, ErrorCode, UsageError, VoicedeskError, WeightsMissingError
from voicedesk.engine.events import SessionConfig
from voicedesk.engine.factory import open_engine
from voicedesk.engine.tasks import cancel_and_wait

log = logging.getLogger(__name__)

EngineOpener = Callable[[EngineSpec], Awaitable[Engine]]

KIND_LABELS = {"local": "Local", "websocket": "WebSocket", "sagemaker": "SageMaker"}


class EngineState(StrEnum):
    IDLE = "idle"
    LOADING = "loading"  # local model loading / remote connecting
    READY = "ready"
    MISSING = "missing"  # local model files not on this machine: offer the download
    DOWNLOADING = "downloading"
    ERROR = "error"
    DISCONNECTED = "disconnected"  # was connected; reconnects on the next reply or the next health check


DOWN_STATES = (EngineState.ERROR, EngineState.DISCONNECTED)


@dataclass(frozen=True, slots=True)
class EngineStatus:
    kind: str
    state: EngineState
    title: str  # for the status pill: "Ready", "Connecting…"
    detail: str = ""  # where it runs: "Kokoro-82M on CPU", "ws://box:8080"
    message: str = ""  # what went wrong and what to do
    code: str = ""  # the error's code (``unauthorized``: the card points at the Token field)


def describe_target(spec: EngineSpec) -> str:
    if spec.kind == "websocket":
        return spec.target or ""
    if spec.kind == "sagemaker":
        where = f" in {spec.region}" if spec.region else ""
        return f"endpoint {spec.target}{where}" if spec.target else ""
    return ""


class EngineHub:
    def __init__(
        self,
        on_status: Callable[[EngineStatus], None],
        opener: EngineOpener = open_engine,
        local_spec: EngineSpec | None = None,
        fetcher: Callable[..., object] | None = None,
    ) -> None:
        self._on_status = on_status
        self._opener = opener
        self._fetcher = fetcher
        self.local_spec = local_spec or EngineSpec("local")
        self.spec: EngineSpec = self.local_spec
        self._engine: Engine | None = None
        self._local: Engine | None = None
        self._local_loading: asyncio.Future[Engine] | None = None
        self.blocked: str | None = None  # why the selected remote engine must not be opened (the person said no)
        self.status = EngineStatus("local", EngineState.IDLE, "Not started")

    async def select(self, spec: EngineSpec, blocked: str | None = None) -> Engine | None:
        """Opens ``spec`` for replies (None: status says why); ``blocked``: selected but not opened, saying why."""
        self.blocked = blocked
        if spec != self.spec:
            await self._drop_remote()
            self.spec = spec
        if spec.kind == "local" and spec != self.local_spec:
            self.local_spec = spec
            if self._local is not None:  # another device: load the model again there
                local, self._local = self._local, None
                await local.aclose()
        try:
            return await self.engine()
        except VoicedeskError:
            return None

    async def engine(self) -> Engine:
        """The selected engine, opening it if needed; raises ``VoicedeskError`` (and reports it)."""
        if self.spec.kind == "local":
            return await self.local()
        if self._engine is not None:
            return self._engine
        spec = self.spec
        if self.blocked is not None:
            self._report(EngineState.ERROR, "Not connected", describe_target(spec), self.blocked)
            raise ConnectionFailed(self.blocked)
        self._report(EngineState.LOADING, "Connecting…", describe_target(spec))
        try:
            self._check_remote_spec(spec)
            engine = await self._opener(spec)
        except VoicedeskError as exc:
            message = error_text(exc, spec.kind)
            self._report(EngineState.ERROR, "Not connected", describe_target(spec), message, str(exc.code))
            raise
        except Exception as exc:
            log.exception("opening %s failed", spec.describe())
            error = ConnectionFailed(f"Could not open the {spec.kind} engine: {exc!r}")
            self._report(EngineState.ERROR, "Not connected", describe_target(spec), error.message)
            raise error from exc
        if spec != self.spec:  # switched away while opening
            await engine.aclose()
            raise ConnectionFailed("The engine was switched while it was opening.")
        self._engine = engine
        return engine

    async def local(self, report: bool = True) -> Engine:
        """The local engine, loading the model on first use (once, even if asked for twice meanwhile)."""
        if self._local is not None:
            if report and self.spec.kind == "local" and self.status.kind != "local":
                self._report(EngineState.READY, "Ready", await asyncio.to_thread(lambda: self._local.info.description))
            return self._local
        if self._local_loading is None:
            self._local_loading = asyncio.ensure_future(self._load_local(report))
        try:
            return await asyncio.shield(self._local_loading)
        finally:
            if self._local_loading is not None and self._local_loading.done():
                self._local_loading = None

    async def _load_local(self, report: bool) -> Engine:
        spec = self.local_spec
        device = {"cuda": "CUDA", "cpu": "CPU"}.get(spec.device or "", "CUDA if present")
        if report and self.spec.kind == "local":
            self._report(EngineState.LOADING, "Loading the model…", f"Kokoro-82M on {device}")
        try:
            engine = await self._opener(spec)
        except WeightsMissingError as exc:
            if self.spec.kind == "local":
                self._report(EngineState.MISSING, "Model not downloaded", "Kokoro-82M", error_text(exc, "local"))
            raise
        except VoicedeskError as exc:
            if self.spec.kind == "local":
                self._report(EngineState.ERROR, "Could not load the model", "Kokoro-82M", error_text(exc, "local"))
            raise
        except Exception as exc:
            log.exception("loading the local engine failed")
            error = VoicedeskError(ErrorCode.INTERNAL, f"Loading the local model failed: {exc!r}")
            if self.spec.kind == "local":
                self._report(EngineState.ERROR, "Could not load the model", "Kokoro-82M", error.message)
            raise error from exc
        self._local = engine
        if self.spec.kind == "local":
            self._report(EngineState.READY, "Ready", await asyncio.to_thread(lambda: engine.info.description))
        return engine

    @property
    def local_loaded(self) -> bool:
        return self._local is not None

    @property
    def local_engine(self) -> Engine | None:
        return self._local

    async def open_session(self, engine: Engine, config: SessionConfig) -> Session:
        remote = engine is not self._local
        if remote:
            self._report(EngineState.LOADING, "Connecting…", describe_target(self.spec))
        try:
            session = await engine.open_session(config)
        except VoicedeskError as exc:
            if remote:
                message = error_text(exc, self.spec.kind)
                self._report(EngineState.ERROR, "Not connected", describe_target(self.spec), message, str(exc.code))
            raise
        if remote:
            self._report(EngineState.READY, "Connected", describe_target(self.spec))
        return session

    def session_lost(self, engine: Engine, reason: str) -> None:
        """A remote session ended without being asked: say so; the next reply reconnects."""
        if engine is self._engine:
            self._report(
                EngineState.DISCONNECTED,
                "Disconnected",
                describe_target(self.spec),
                f"The connection was lost: {error_text(reason).rstrip('.')}. It reconnects when the server "
                "answers again, or press Connect.",
            )

    async def fetch_voice(self, name: str, report: Callable[[str], None]) -> None:
        """Downloads one voice for the local engine (``voicedesk models fetch --voices NAME``)."""
        from voicedesk.engine.model import weights

        fetch = self._fetcher or weights.fetch
        await asyncio.to_thread(fetch, [name], report=report)

    async def forget_remote(self) -> None:
        """Drops the remote engine's client, so the next use opens a fresh one (Connect, a reconnect)."""
        await self._drop_remote()

    async def fetch_models(self, report: Callable[[str], None]) -> None:
        """Downloads the local model (``voicedesk models fetch``) on a worker thread, then loads it."""
        from voicedesk.engine.model import weights

        fetch = self._fetcher or weights.fetch
        self._report(EngineState.DOWNLOADING, "Downloading…", "Kokoro-82M from huggingface.co")
        try:
            await asyncio.to_thread(fetch, None, report=report)
        except VoicedeskError as exc:
            self._report(EngineState.MISSING, "Model not downloaded", "Kokoro-82M", error_text(exc, "local"))
            raise
        if self.spec.kind == "local":
            await self.local()

    async def aclose(self) -> None:
        await self._drop_remote()
        if self._local is not None:
            local, self._local = self._local, None
            await local.aclose()

    async def _drop_remote(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            try:
                await engine.aclose()
            except Exception:  # closing a broken connection must not stop a switch
                log.debug("closing %s failed", self.spec.describe(), exc_info=True)

    def _check_remote_spec(self, spec: EngineSpec) -> None:
        if not (spec.target or "").strip():
            what = "the container's WebSocket URL" if spec.kind == "websocket" else "the SageMaker endpoint name"
            raise UsageError(f"Fill in {what} to use the {KIND_LABELS[spec.kind]} engine.")
        problem = url_problem(spec.target or "", ENGINE_SCHEMES) if spec.kind == "websocket" else None
        if problem is not None:
            raise UsageError(
                f"The WebSocket URL {spec.target!r} is not usable: {problem}. Correct it and press Connect."
            )

    def _report(self, state: EngineState, title: str, detail: str = "", message: str = "", code: str = "") -> None:
        self.status = EngineStatus(self.spec.kind, state, title, detail, message, code)
        self._on_status(self.status)


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


async def probe_websocket(websocket_url: str, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """None when the server's ``/ping`` says it is ready, else what is wrong."""
    import httpx

    url = http_url(websocket_url, "/ping")
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
        await cancel_and_wait(self._task)
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
