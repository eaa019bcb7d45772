"""The endpoint's shared state: one model, one scheduler, and the sessions using them. Every session and HTTP stream
holds a ``Lease``, which enforces the caps and lets shutdown find it."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from voicedesk.endpoint.fair_admission import admit, evicted
from voicedesk.endpoint.log_safety import bad_frame_log, escape
from voicedesk.endpoint.settings import ServerSettings
from voicedesk.engine.errors import ErrorCode, VoicedeskError, VoiceError
from voicedesk.engine.events import SessionConfig
from voicedesk.engine.limits import BucketsByAddress, JunkByAddress, QueueLoad, judge, refusal_message
from voicedesk.engine.local import LocalSession
from voicedesk.engine.model.synthesis import Synthesizer
from voicedesk.engine.model.voices import KNOWN_VOICES, is_path_spec, parse_voice_spec
from voicedesk.engine.scheduler import SynthesisScheduler
from voicedesk.engine.tasks import cancel_and_wait

if TYPE_CHECKING:
    from voicedesk.engine.model.prepare_pool import PreparePool

log = logging.getLogger(__name__)

MAX_VOICE_REFUSALS = 256
LARGE_BODY_BYTES_PER_S = 64 * 1024
LARGE_BODY_BURST_BYTES = 512 * 1024

SynthesizerSource = Synthesizer | Callable[[], Synthesizer]
"""A loaded, warmed synthesizer (tests), or a blocking loader run off the loop (``serve``)."""


class AdmissionRefused(VoicedeskError):
    """A refusal that carries extra body fields and response headers (``queue_saturated``'s depth, Retry-After)."""

    def __init__(self, code: ErrorCode, message: str, details: dict[str, object], headers: dict[str, str]) -> None:
        super().__init__(code, message)
        self.details, self.headers = details, headers


class RuntimeState(StrEnum):
    LOADING = "loading"
    READY = "ready"
    FAILED = "failed"
    DRAINING = "draining"
    STOPPED = "stopped"


@dataclass(eq=False, slots=True)
class Lease:
    """A slot held by one WebSocket connection or HTTP stream for as long as it runs."""

    kind: str
    client: str | None = None
    """The peer's address, for the per-client cap (None: not counted, e.g. unknown)."""
    drain: Callable[[], Awaitable[None]] | None = None
    """Winds the session down on shutdown (finish the current sentence, say goodbye, close)."""
    stop: Callable[[], None] | None = None
    """Drops the session's work at once (the server is stopping for good)."""
    evict: Callable[[str], None] | None = None
    """Closes the session, telling its client why, to make room on a full server (None: it cannot be evicted)."""
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    last_active: float = field(default_factory=time.monotonic)
    """When the client last gave text to speak or took audio (the adapter keeps it): the idlest is evicted first."""
    is_speaking: Callable[[], bool] | None = None
    """Whether its audio is being made or played (the adapter's): an idle session is evicted before it."""

    @property
    def speaking(self) -> bool:
        return self.is_speaking is not None and self.is_speaking()


class EndpointRuntime:
    def __init__(self, source: SynthesizerSource, settings: ServerSettings) -> None:
        self.settings = settings
        self._source = source
        self.synthesizer: Synthesizer | None = None
        self.scheduler = SynthesisScheduler(name="endpoint-synth")
        self.state = RuntimeState.LOADING
        self.load_error: VoicedeskError | None = None
        self.voices: tuple[str, ...] = ()
        self._voice_refusals: dict[str, VoiceError] = {}
        self._ready = threading.Event()
        self._leases: dict[str, Lease] = {}
        self._loader: asyncio.Task[None] | None = None
        self._prepare_pool: PreparePool | None = None
        self.sessions_opened = 0
        self.sessions_evicted = 0
        self.bad_frame_log = bad_frame_log(logging.getLogger("voicedesk.endpoint.bidi"))
        """Every WebSocket session's unreadable frames and slowed reads, one summary line per interval."""
        limits, per_address = settings.connection, settings.max_connections_per_client is not None
        self.junk_by_address = JunkByAddress(limits.junk_per_s, limits.junk_burst) if per_address else None
        self.large_bodies = BucketsByAddress(LARGE_BODY_BYTES_PER_S, LARGE_BODY_BURST_BYTES) if per_address else None
        """Bytes of large HTTP bodies (lexicons) per address: parsing costs CPU, so back-to-back posts are slowed, never
        refused (None when every client shares one address)."""
        """Junk budgets per client address, shared by its connections; the transport refuses an address whose
        budget is empty before the WebSocket handshake. None without per-client caps (behind a proxy or SageMaker
        every client has the same address): then each connection has its own budget."""

    # ---- lifecycle ----------------------------------------------------------------------------------

    def start(self) -> None:
        """Starts loading and warming the model in the background (called from the app's lifespan)."""
        self._loader = asyncio.get_running_loop().create_task(self._load(), name="load-model")

    async def _load(self) -> None:
        started = time.perf_counter()
        try:
            source = self._source
            if hasattr(source, "synthesize"):
                synthesizer = source  # loaded and warmed by whoever passed it in
            else:
                synthesizer = await asyncio.to_thread(source)  # type: ignore[operator]
                # Warm on the scheduler's worker: the thread that will run every request afterwards.
                await asyncio.to_thread(self.scheduler.run_sync, synthesizer.warm_up)
            await self._start_prepare_pool(synthesizer)
            await self._choose_batching(synthesizer)
            voices = await asyncio.to_thread(synthesizer.list_voices)
        except VoicedeskError as exc:
            self._fail(exc)
        except Exception as exc:
            log.exception("loading the model failed")
            self._fail(VoicedeskError(ErrorCode.INTERNAL, f"Loading the model failed: {type(exc).__name__}: {exc}"))
        else:
            self.synthesizer = synthesizer
            self.voices = tuple(voices)
            if self.state is RuntimeState.LOADING:
                self.state = RuntimeState.READY
            self._ready.set()
            log.info(
                "model ready on %s in %.1f s (%d voices)",
                synthesizer.device,
                time.perf_counter() - started,
                len(self.voices),
            )

    async def _start_prepare_pool(self, synthesizer: Synthesizer) -> None:
        """Starts the preparation workers (every one loaded) before the server reports ready."""
        if not hasattr(synthesizer, "use_prepare_pool"):
            return
        from voicedesk.engine.model.prepare_pool import PreparePool, auto_workers

        wanted = self.settings.prepare_workers
        workers = auto_workers(synthesizer.device) if wanted == "auto" else int(wanted)
        if workers <= 0:
            log.info("text front-end and G2P in this process (--prepare-workers %s)", wanted)
            return
        self._prepare_pool = PreparePool(workers, synthesizer.worker_setup())  # type: ignore[attr-defined]
        await asyncio.to_thread(self._prepare_pool.start)
        synthesizer.use_prepare_pool(self._prepare_pool)  # type: ignore[attr-defined]
        log.info("text front-end and G2P in %d worker process(es)", workers)

    async def _choose_batching(self, synthesizer: Synthesizer) -> None:
        """Batching across sessions (``engine.model.batch``): only for the Kokoro model, measured on CUDA."""
        if self.settings.batch == "off" or not hasattr(synthesizer, "model"):
            return
        from voicedesk.engine.model.batch import choose_batch_runner
        from voicedesk.engine.model.batch_policy import BatchMode

        mode = BatchMode(self.settings.batch)
        voice = SessionConfig().voice
        runner, speedup = await asyncio.to_thread(
            self.scheduler.run_sync,
            lambda: choose_batch_runner(synthesizer, mode, voice),  # type: ignore[arg-type]
        )
        self.scheduler.batch_runner = runner
        measured = "not measured" if speedup is None else f"{speedup:.2f}x one by one"
        log.info("batching across sessions %s (%s)", "on" if runner else "off", measured)

    def _fail(self, error: VoicedeskError) -> None:
        self.load_error = error
        self.state = RuntimeState.FAILED
        log.error("the endpoint cannot serve: %s", error.message)
        self._ready.set()

    def wait_ready(self, timeout_s: float | None = None) -> bool:
        """Blocks until loading ended (ready or failed); for other threads (tests, benchmarks)."""
        return self._ready.wait(timeout_s) and self.state is RuntimeState.READY

    @property
    def ready(self) -> bool:
        return self.state is RuntimeState.READY

    async def drain(self) -> None:
        """SIGTERM: stops admitting and winds the sessions down; what runs past ``shutdown_grace_s`` is stopped."""
        if self.state in (RuntimeState.DRAINING, RuntimeState.STOPPED):
            return
        self.state = RuntimeState.DRAINING
        leases = [lease for lease in self._leases.values() if lease.drain is not None]
        if not leases:
            return
        log.info("shutting down: winding down %d session(s)", len(leases))
        try:
            async with asyncio.timeout(self.settings.shutdown_grace_s):
                await asyncio.gather(*(lease.drain() for lease in leases), return_exceptions=True)  # type: ignore[misc]
        except TimeoutError:
            log.warning("sessions did not finish within %.0f s; stopping them", self.settings.shutdown_grace_s)
            self.stop_all()

    def stop_all(self) -> None:
        """Drops every session's work at once."""
        for lease in list(self._leases.values()):
            if lease.stop is not None:
                lease.stop()

    async def aclose(self) -> None:
        self.state = RuntimeState.STOPPED
        if self._loader is not None and not self._loader.done():  # a load that failed already said so
            await cancel_and_wait(self._loader)
        self.stop_all()
        await self.scheduler.aclose()
        if self._prepare_pool is not None:
            if self.synthesizer is not None and hasattr(self.synthesizer, "use_prepare_pool"):
                self.synthesizer.use_prepare_pool(None)  # a synthesizer passed in may outlive this server
            await asyncio.to_thread(self._prepare_pool.close)

    # ---- admission ----------------------------------------------------------------------------------

    def check_available(self) -> None:
        """Raises a ``VoicedeskError`` saying why no session can start now (loading, failed, shutting down)."""
        if self.state is RuntimeState.READY:
            return
        if self.state is RuntimeState.LOADING:
            message = "The server is still loading its model; retry when GET /ping answers 200."
            raise VoicedeskError(ErrorCode.NOT_READY, message)
        if self.state is RuntimeState.FAILED and self.load_error is not None:
            raise self.load_error
        raise VoicedeskError(ErrorCode.SESSION_CLOSING, "The server is shutting down; connect again in a moment.")

    def check_not_saturated(self, own_phonemes: int = 0, in_hand_s: float = 0.0) -> None:
        """Refuses a request its session's own backlog would keep waiting too long (``engine.limits``), or, as a
        backstop, while more than ``max_queue_depth`` sentences wait: 503 with ``Retry-After``. The message starts with
        the code, which the AWS sample's client matches (aws-samples/sample-kokoro-tts-for-ai-agents)."""
        settings = self.settings
        saturated = judge(
            self.queue_load(own_phonemes, in_hand_s), settings.first_audio_target_s, settings.max_queue_depth
        )
        if saturated is None:
            return
        wait = saturated.expected_wait_s
        raise AdmissionRefused(
            ErrorCode.QUEUE_SATURATED,
            refusal_message(saturated),
            {
                "queue_depth": saturated.queue_depth,
                "max_queue_depth": saturated.max_queue_depth,
                "expected_wait_s": None if wait is None else round(wait, 3),
                "first_audio_target_s": saturated.target_s,
                "retry_after_s": saturated.retry_after_s,
            },
            {"Retry-After": str(saturated.retry_after_s)},
        )

    def admit(self, kind: str, client: str | None = None) -> Lease:
        """A slot for a session or HTTP stream by the fair rule (``endpoint.fair_admission``)."""
        self.check_available()
        settings = self.settings
        admission = admit(
            list(self._leases.values()),
            client,
            settings.max_sessions,
            settings.max_sessions_per_client,
            lambda lease: lease.evict is not None,  # one still being set up cannot be closed yet
        )
        if admission.refused == "per-client cap":
            if self.junk_by_address is not None and client is not None:
                # Reconnecting into its cap costs a handshake each time: the address's junk budget pays for it, and
                # once it is spent the transport refuses the address before the handshake.
                self.junk_by_address.bucket(client, time.monotonic()).take(time.monotonic())
            held = sum(1 for lease in self._leases.values() if lease.client == client)
            raise VoicedeskError(
                ErrorCode.TOO_MANY_SESSIONS,
                f"Your address already holds {held} sessions here (limit {settings.max_sessions_per_client} per "
                "client); close one first, or start the server with a higher --max-sessions-per-client.",
            )
        if admission.refused is not None:
            raise VoicedeskError(
                ErrorCode.TOO_MANY_SESSIONS,
                f"This server already runs {len(self._leases)} sessions (limit {settings.max_sessions}); "
                "retry later, or start the server with a higher --max-sessions.",
            )
        if (victim := admission.victim) is not None:
            del self._leases[victim.id]
            self.sessions_evicted += 1
            log.info("server full: %s session %s closed to make room", victim.kind, victim.id[:8])
            victim.evict(evicted("sessions", settings.max_sessions).message)  # type: ignore[misc]
        lease = Lease(kind, client)
        self._leases[lease.id] = lease
        self.sessions_opened += 1
        return lease

    def release(self, lease: Lease) -> None:
        self._leases.pop(lease.id, None)

    def open_session(self, lease: Lease, config: SessionConfig | None = None) -> LocalSession:
        """A session on the shared model and scheduler: the same session code the local engine runs."""
        assert self.synthesizer is not None, "open_session before the model is ready"
        share = lambda: self.held_by(lease.client)  # noqa: E731
        session = LocalSession(
            self.synthesizer, self.scheduler, config or SessionConfig(), self.settings.limits, share=share
        )
        session.id = lease.id

        def stop() -> None:
            asyncio.get_running_loop().create_task(session.aclose())

        lease.stop = stop
        return session

    def held_by(self, client: str | None) -> int:
        """Sessions ``client``'s address holds (0 without per-client caps: behind a proxy all share one)."""
        if client is None or self.settings.max_sessions_per_client is None:
            return 0
        return sum(1 for lease in self._leases.values() if lease.client == client)

    # ---- introspection (tests, benchmarks, /ping) ---------------------------------------------------

    @property
    def active_sessions(self) -> int:
        return len(self._leases)

    @property
    def queue_depth(self) -> int:
        """Sentences waiting for the model, the one it is on not counted: the ``queue_saturated`` backstop's load."""
        return self.scheduler.pending

    def queue_load(self, own_phonemes: int = 0, in_hand_s: float = 0.0) -> QueueLoad:
        """What a new request waits behind: its session's own backlog (``engine.limits``); none for a newcomer."""
        return QueueLoad(self.scheduler.s_per_phoneme, own_phonemes, in_hand_s, self.scheduler.pending)

    def session_ids(self) -> set[str]:
        """The ids under which the open sessions' jobs run on the scheduler."""
        return set(self._leases)

    async def check_voice(self, voice: str) -> str:
        """Normalises a voice spec off the loop, or raises ``VoiceError``; file paths are refused (no disk reads for
        clients)."""
        assert self.synthesizer is not None
        # Before parsing: parsing resolves file paths (``~user/x.pt`` reads the password database, a NUL fails).
        raw_parts = [part.strip() for part in voice.split(",")]
        if any(is_path_spec(part) or is_path_spec(part.rpartition(":")[0]) for part in raw_parts):
            raise VoiceError(
                f"Voice {escape(voice, 60)!r} names a file; over the network only voice names (or blends of them) "
                f"are accepted. Voices here: {', '.join(self.voices) or 'none'}."
            )
        parts = parse_voice_spec(voice)
        if any(part.is_path for part in parts):
            raise VoiceError(
                f"Voice {escape(voice, 60)!r} names a file; over the network only voice names are accepted."
            )
        # Answered from the voice list read at start: a name no Kokoro voice has costs no file-system scan.
        unknown = [p.source for p in parts if p.source not in self.voices and p.source not in KNOWN_VOICES]
        if unknown and self.voices:
            raise VoiceError(
                f"There is no voice {escape(unknown[0], 60)!r} here. Voices here: {', '.join(self.voices)}."
            )
        if (refused := self._voice_refusals.get(voice)) is not None:
            raise refused
        try:
            return await asyncio.to_thread(self.synthesizer.check_voice, voice)
        except VoiceError as exc:  # a Kokoro voice not here: the next ask for it costs no look-up either
            if len(self._voice_refusals) < MAX_VOICE_REFUSALS:
                self._voice_refusals[voice] = exc
            raise
