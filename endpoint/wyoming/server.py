"""The Wyoming TCP server: the ``wyoming`` library's ``AsyncTcpServer`` and ``AsyncEventHandler`` around any engine.

Each ``TtsConnection`` drives a ``TtsConversation`` and one engine session: the read loop applies client events at once
(so a hang-up is noticed mid-speech) while a responder task turns session events into Wyoming events. A client that
leaves, or stops reading for ``write_timeout_s``, has its session cancelled and closed. Reads are guarded
(``guarded_read``), refusals are ``error`` events, connections follow the fair rule, and warnings are rate-limited."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field, replace

from wyoming.audio import AudioChunk
from wyoming.error import Error as WyomingError
from wyoming.event import Event as WyomingEvent
from wyoming.info import Info
from wyoming.ping import Ping
from wyoming.server import AsyncEventHandler, AsyncTcpServer

from voicedesk.endpoint.fair_admission import LINGER_S, admit, evicted
from voicedesk.endpoint.log_safety import escape, guard_server_logs
from voicedesk.endpoint.wyoming.catalog import VoiceCatalog
from voicedesk.endpoint.wyoming.conversation import (
    DEFAULT_MAX_CHARS,
    DEFAULT_SAMPLES_PER_CHUNK,
    PROGRAM_NAME,
    Action,
    Hangup,
    Reply,
    TtsConversation,
)
from voicedesk.endpoint.wyoming.guarded_read import ClientIdle, ReadLimits, WyomingInputError, read_event
from voicedesk.engine.api import Engine, Session
from voicedesk.engine.errors import ErrorCode, VoicedeskError
from voicedesk.engine.events import BYTES_PER_SAMPLE, DEFAULT_MAX_BUFFER_DELAY_MS, SAMPLE_RATE, SessionConfig
from voicedesk.engine.protocol import Configure, Flush, SendText
from voicedesk.engine.text.frontend.lexicon import EMPTY_LEXICON, Lexicon
from voicedesk.engine.text.frontend.settings import TextSettings

log = logging.getLogger(__name__)

DEFAULT_PORT = 10200
"""The port Wyoming TTS services listen on by convention (wyoming-piper, Home Assistant's add-ons)."""


@dataclass(frozen=True, slots=True)
class WyomingSettings:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    speed: float = 1.0
    """Speed of every request (Wyoming requests carry no speed)."""
    max_buffer_delay_ms: int = DEFAULT_MAX_BUFFER_DELAY_MS
    """Release on quiet: how long a streamed request's text without a sentence end waits for more."""
    samples_per_chunk: int = DEFAULT_SAMPLES_PER_CHUNK
    max_chars: int = DEFAULT_MAX_CHARS
    lexicon: Lexicon = EMPTY_LEXICON
    """The server's pronunciation lexicon (``--lexicon``), sent with every session (to a remote engine too)."""
    write_timeout_s: float = 30.0
    """A client that has not taken its audio for this long is dropped (its session is cancelled)."""
    stop_grace_s: float = 5.0
    read_limits: ReadLimits = field(default_factory=ReadLimits)
    """Event sizes, the idle timeout between events and the time limit on a started event."""
    max_connections: int = 64
    max_connections_per_client: int | None = 8
    """Connections one address may hold (None: no cap, e.g. behind a proxy)."""


class WyomingTtsServer:
    def __init__(self, engine: Engine, catalog: VoiceCatalog, info: Info, settings: WyomingSettings) -> None:
        self.engine = engine
        self.catalog = catalog
        self.info = info
        self.settings = settings
        self.session_config = SessionConfig(
            voice=catalog.default,
            speed=settings.speed,
            max_buffer_delay_ms=settings.max_buffer_delay_ms,
            text=TextSettings(lexicon=settings.lexicon),
        )
        self.connections: set[TtsConnection] = set()
        self.sessions_opened = 0
        self._tcp: AsyncTcpServer | None = None
        guard_server_logs((__name__, "phonemizer"))

    async def start(self) -> None:
        """Listens on the settings' host and port (raises ``OSError`` when the port is taken)."""
        self._tcp = AsyncTcpServer(self.settings.host, self.settings.port)
        await self._tcp.start(self._connect)

    async def stop(self) -> None:
        """Stops listening and ends every connection (their sessions are cancelled and closed)."""
        if self._tcp is None:
            return
        await self._tcp.stop()
        self._tcp = None
        waits = [asyncio.create_task(c.closed.wait()) for c in list(self.connections)]
        if waits:
            _done, pending = await asyncio.wait(waits, timeout=self.settings.stop_grace_s)
            for task in pending:
                task.cancel()

    def _connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> TtsConnection:
        """Admits by ``serve``'s fair rule (``endpoint.fair_admission``)."""
        connection = TtsConnection(self, reader, writer)
        settings = self.settings
        cap, per_client = settings.max_connections, settings.max_connections_per_client
        admission = admit(self.connections, connection.client, cap, per_client, lambda c: not (c.evicted or c.refusal))
        if admission.refused == "per-client cap":
            connection.refusal = f"Your address already holds {per_client} connections here; close one first."
        elif admission.refused is not None:
            connection.refusal = f"This server holds {cap} connections (its limit); retry later."
        elif admission.victim is not None:
            admission.victim.evict(evicted("connections", cap).message)
        self.connections.add(connection)
        return connection


class TtsConnection(AsyncEventHandler):
    """One client: its conversation, its session (opened at its first request) and the task that answers."""

    def __init__(self, server: WyomingTtsServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        super().__init__(reader, writer)
        self.server = server
        self.conversation = TtsConversation(
            server.info,
            server.catalog,
            PROGRAM_NAME,
            max_chars=server.settings.max_chars,
            samples_per_chunk=server.settings.samples_per_chunk,
            speed=server.settings.speed,
        )
        self.session: Session | None = None
        self.closed = asyncio.Event()
        self._responder: asyncio.Task[None] | None = None
        self.refusal: str | None = None
        """Set when a connection cap is reached: the client is told so, then closed."""
        self.evicted = False
        """Closed to make room for another client: what it still sends is not read."""
        self.last_active = time.monotonic()
        """When it last asked something (a ``ping`` is not activity) or took audio: the idlest makes room first."""
        self._played_until = 0.0
        self._closing: asyncio.Task[None] | None = None
        peer = writer.get_extra_info("peername")
        self.client: str | None = str(peer[0]) if isinstance(peer, tuple) else None
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else "a client"
        log.debug("%s connected", self.peer)

    # ---- AsyncEventHandler ----------------------------------------------------------------------------

    async def run(self) -> None:
        """The library's read loop, with ``guarded_read`` instead of its ``async_read_event``."""
        self._is_running = True
        try:
            if self.refusal is not None:
                log.warning("refused a connection: connection cap reached")
                await self._write(WyomingError(text=self.refusal, code=str(ErrorCode.TOO_MANY_CONNECTIONS)).event())
                await self._linger()
                return
            limits = self.server.settings.read_limits
            while self._is_running:
                try:
                    idle_s = self.last_active + limits.idle_timeout_s - time.monotonic()
                    event = await read_event(self.reader, limits, max(0.0, idle_s))
                except WyomingInputError as exc:
                    log.warning("closed a connection that sent an unreadable event (%s)", exc.code)
                    await self._write(WyomingError(text=exc.message, code=str(exc.code)).event())
                    return
                except ClientIdle:
                    if self.conversation.busy:  # waiting for its audio is not idleness
                        self.last_active = time.monotonic()
                        continue
                    log.info("%s sent nothing for %g s; closing it", self.peer, limits.idle_timeout_s)
                    seconds = f"{limits.idle_timeout_s:g}"
                    message = f"Nothing was sent for {seconds} s, so the connection was closed; connect again."
                    await self._write(WyomingError(text=message, code=str(ErrorCode.IDLE_TIMEOUT)).event())
                    return
                if event is None:
                    return
                if self.evicted:
                    continue
                if not Ping.is_type(event.type):  # pings alone do not keep a slot
                    self.last_active = time.monotonic()
                if not await self.handle_event(event):
                    return
        except ConnectionError as exc:  # a reset while reading: only a client leaving
            log.info("%s dropped the connection (%s)", self.peer, exc)
        finally:
            await self.disconnect()
            self.writer.close()

    async def handle_event(self, event: WyomingEvent) -> bool:
        try:
            return await self._perform(self.conversation.client_event(event))
        except VoicedeskError as exc:  # the engine refused a session (unreachable, busy, no credentials)
            log.warning("%s: %s", self.peer, exc)
            await self._write(WyomingError(text=str(exc), code=str(exc.code)).event())
            return False
        except Exception:  # a bug: answer it like any other error instead of dropping the client silently
            log.exception("%s: handling %s failed", self.peer, escape(event.type))
            message = f"The server failed on this {escape(event.type, 64)!r} event; its log says why."
            await self._write(WyomingError(text=message, code=str(ErrorCode.INTERNAL)).event())
            return False

    @property
    def speaking(self) -> bool:
        """A request is being answered, or its audio is still playing."""
        return self.conversation.busy or time.monotonic() < self._played_until

    def evict(self, message: str) -> None:
        """Closed to make room on a full server: its session stops, it is told why, then the connection ends."""
        self.evicted = True
        self.server.connections.discard(self)  # counted out now
        self._closing = asyncio.get_running_loop().create_task(self._close_evicted(message))

    async def _close_evicted(self, message: str) -> None:
        await self.disconnect()
        await self._write(WyomingError(text=message, code=str(ErrorCode.TOO_MANY_CONNECTIONS)).event())
        with contextlib.suppress(OSError, RuntimeError):
            self.writer.write_eof()
        await asyncio.sleep(LINGER_S)
        self.writer.transport.abort()

    async def _linger(self) -> None:
        """Closing on unread bytes would reset away the error event: read and drop what comes, for a moment."""
        with contextlib.suppress(OSError, RuntimeError, TimeoutError):
            self.writer.write_eof()
            async with asyncio.timeout(LINGER_S):
                while await self.reader.read(65_536):
                    pass

    async def disconnect(self) -> None:
        responder, session = self._responder, self.session
        self._responder = self.session = None
        try:
            if responder is not None and responder is not asyncio.current_task():
                responder.cancel()
                await asyncio.gather(responder, return_exceptions=True)
            if session is not None:
                if self.conversation.busy:
                    log.info("%s left before its speech was done; cancelling it", self.peer)
                    with contextlib.suppress(Exception):
                        await session.cancel()
                with contextlib.suppress(Exception):
                    await session.aclose()
        finally:
            self.server.connections.discard(self)
            self.closed.set()
            log.debug("%s disconnected", self.peer)

    # ---- internals ------------------------------------------------------------------------------------

    async def _perform(self, actions: list[Action]) -> bool:
        """Carries out the conversation's actions in order; False once the connection must end."""
        for action in actions:
            match action:
                case Reply(event=event):
                    if not await self._write(event):
                        return False
                    if AudioChunk.is_type(event.type):
                        now = self.last_active = time.monotonic()
                        seconds = len(event.payload or b"") / (BYTES_PER_SAMPLE * SAMPLE_RATE)
                        self._played_until = max(self._played_until, now) + seconds
                case Hangup(reason=reason):
                    # A warning, so at most one line per interval (a client can cause one per connection).
                    log.warning("closing a connection after an error (%s)", reason)
                    return False
                case Configure(voice=voice, speed=speed, markup=markup):
                    text = None if markup is None else replace(self.server.session_config.text, markup=markup)
                    await (await self._session()).configure(voice, speed, text=text)
                case SendText(text=text):
                    await (await self._session()).send_text(text)
                case Flush(request_id=request_id):
                    await (await self._session()).flush(request_id)
        return True

    async def _session(self) -> Session:
        if self.session is None:
            session = await self.server.engine.open_session(self.server.session_config)
            self.server.sessions_opened += 1
            self.session = session
            self._responder = asyncio.create_task(self._respond(session), name=f"wyoming-respond {self.peer}")
        return self.session

    async def _respond(self, session: Session) -> None:
        keep = True
        try:
            async for event in session.events():
                if not await self._perform(self.conversation.session_event(event)):
                    keep = False
                    break
        except Exception:  # a bug must end this connection, not leave its client waiting
            log.exception("%s: answering failed", self.peer)
            keep = False
        if keep and self.session is session:
            # The session ended while nothing was asked of it (e.g. a remote idle timeout): the next request
            # opens a new one. A request sent into it meanwhile gets an error rather than silence.
            self.session = None
            self.conversation.session_reset()
            keep = await self._perform(self.conversation.session_ended())
        if not keep:
            await self.stop()

    async def _write(self, event: WyomingEvent) -> bool:
        try:
            async with asyncio.timeout(self.server.settings.write_timeout_s):
                await self.write_event(event)
        except TimeoutError:
            log.warning(
                "%s has not taken its audio for %g s; dropping it", self.peer, self.server.settings.write_timeout_s
            )
            self.writer.transport.abort()  # close() would wait for the unread buffer to drain, i.e. forever
            return False
        except (ConnectionError, OSError) as exc:
            log.info("%s is gone (%s)", self.peer, exc)
            return False
        return True
