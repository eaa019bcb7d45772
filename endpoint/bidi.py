"""``WS /invocations-bidirectional-stream``: one ``ServerConnection`` per WebSocket, moved by two small loops.

What the connection means is decided in ``engine.connection``; this only moves frames (text or binary), checks voices
and resamples off the loop, and closes when told. Sends time out in the transport (``endpoint.transport_guards``), so a
client that stops reading frees its slot."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from starlette.websockets import WebSocket, WebSocketDisconnect

from voicedesk.endpoint.log_safety import escape
from voicedesk.endpoint.runtime import EndpointRuntime, Lease
from voicedesk.engine.connection import (
    DECODE_OFF_LOOP_BYTES,
    ResampleJob,
    ServerConnection,
    VoiceCheck,
    decode,
)
from voicedesk.engine.errors import VoicedeskError, close_code_for
from voicedesk.engine.events import Error, Event, SessionConfig
from voicedesk.engine.protocol import SynthesizeRequest, encode_event
from voicedesk.engine.request_fields import check_fresh
from voicedesk.engine.session import SessionCore
from voicedesk.engine.session_driver import SessionDriver
from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker

log = logging.getLogger(__name__)


async def bidi_endpoint(websocket: WebSocket) -> None:
    runtime: EndpointRuntime = websocket.app.state.runtime
    client = websocket.client.host if websocket.client else None
    try:
        lease = runtime.admit("websocket", client)
    except VoicedeskError as exc:
        if (by_address := runtime.junk_by_address) is not None and client:  # reconnecting again and again: slowed
            await asyncio.sleep(by_address.hold_s(client, time.monotonic()))  # holding no slot
        await refuse(websocket, exc)
        return
    try:
        await websocket.accept()
    except BaseException:
        runtime.release(lease)
        raise
    await BidiConnection(websocket, runtime, lease).serve()


async def refuse(websocket: WebSocket, error: VoicedeskError) -> None:
    """Accepts only to say why the session cannot start, then closes with the code the error calls for."""
    with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
        await websocket.accept()
        for frame in encode_event(Error(error.code, error.message, fatal=True)):
            await websocket.send_text(frame)  # type: ignore[arg-type]
        await websocket.close(close_code_for(error.code), str(error.code))


class BidiConnection:
    def __init__(self, websocket: WebSocket, runtime: EndpointRuntime, lease: Lease) -> None:
        assert runtime.synthesizer is not None
        self.websocket = websocket
        self.runtime = runtime
        self.lease = lease
        settings = runtime.settings
        now = time.monotonic()
        core = SessionCore(IncrementalSentenceChunker(), SessionConfig(text=settings.text_settings), settings.limits)
        by_address = runtime.junk_by_address
        junk = by_address.budget(lease.client, now) if by_address is not None and lease.client else None
        self.connection = ServerConnection(
            core, settings.connection, now, self._admit_request, base_lexicon=settings.lexicon, junk=junk
        )
        self.driver = SessionDriver(
            self.connection.core,
            runtime.synthesizer,
            runtime.scheduler,
            lease.id,
            self._emit,
            timers=self.connection,
            in_hand=self.connection.in_hand_s,
            share=lambda: runtime.held_by(lease.client),
        )
        self._wake = asyncio.Event()
        self._finished = asyncio.Event()
        self._counted = (0, 0)
        """Bad frames and slowed reads already told to ``BAD_FRAMES``."""
        lease.stop = self.stop
        lease.drain = self.drain
        lease.evict = self.evict
        lease.is_speaking = lambda: self.connection.speaking(time.monotonic())

    def _admit_request(self, request: SynthesizeRequest) -> Error | None:
        """Staleness and saturation, as on the HTTP routes (the AWS sample's request_stale / queue_saturated)."""
        settings = self.runtime.settings
        try:
            check_fresh(request.request_timestamp, time.time(), settings.max_request_age_s)
            backlog, in_hand = self.connection.core.backlog_phonemes, self.connection.in_hand_s(time.monotonic())
            self.runtime.check_not_saturated(backlog, in_hand)
        except VoicedeskError as exc:
            retry_after_s = getattr(exc, "details", {}).get("retry_after_s")
            return Error(exc.code, exc.message, request_id=request.request_id, retry_after_s=retry_after_s)
        return None

    def _output_rate_from_query(self) -> None:
        """pipecat's SageMaker clients ask for their rate in the model query string (``sample_rate=16000``)."""
        raw = self.websocket.query_params.get("sample_rate")
        if raw is None:
            return
        if refusal := self.connection.open_at_rate(raw, time.monotonic()):
            self.driver.apply(refusal)

    async def serve(self) -> None:
        log.info("session %s opened (%d active)", self.lease.id[:8], self.runtime.active_sessions)
        self._output_rate_from_query()
        self.driver.pump()  # arms the idle timer
        tasks = {
            asyncio.create_task(self._receive_loop(), name="bidi-receive"),
            asyncio.create_task(self._send_loop(), name="bidi-send"),
        }
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            for outcome in await asyncio.gather(*tasks, return_exceptions=True):
                if isinstance(outcome, Exception):  # a bug: the session ends, and the log says why (once)
                    log.error("session %s failed", self.lease.id[:8], exc_info=outcome)
            self.stop()
            self.runtime.release(self.lease)
            self._finished.set()
            log.info("session %s ended", self.lease.id[:8])

    def stop(self) -> None:
        """Drops the session's work at once (the peer is gone, or the server is stopping)."""
        if not self.connection.core.closed:
            self.driver.apply(self.connection.peer_gone(time.monotonic()))
        self.driver.stop()

    def evict(self, message: str) -> None:
        """Makes room for a client of a quieter address (``too_many_sessions``, 1013): the error and ``closed`` go
        first."""
        self.driver.apply(self.connection.evict(message, time.monotonic()))

    async def drain(self) -> None:
        """Shutdown: the sentence being synthesized finishes, the rest is cancelled, then ``closed`` and 1001."""
        self.driver.apply(self.connection.shutdown(time.monotonic()))
        await self._finished.wait()

    def _emit(self, events: list[Event]) -> None:
        self.connection.session_events(events)
        self._resample_off_the_loop()
        self._wake.set()

    def _resample_off_the_loop(self) -> None:
        """Each sentence for another rate is resampled on an executor thread; its frame waits in order meanwhile."""
        jobs = self.connection.take_resampling()
        if not jobs:
            return
        loop = asyncio.get_running_loop()
        for job in jobs:
            loop.run_in_executor(None, job.run).add_done_callback(lambda f, job=job: self._resampled(job, f))

    def _resampled(self, job: ResampleJob, future: asyncio.Future[bytes]) -> None:
        # Cancelled only when the executor is shut down: the frame must not wait forever (a close waits for it).
        exc = None if future.cancelled() else future.exception()
        if exc is not None:
            log.error("session %s: resampling sentence %d failed", self.lease.id[:8], job.seq, exc_info=exc)
        failed = future.cancelled() or exc is not None
        self.connection.resampled(job, None if failed else future.result())
        self._wake.set()

    # ---- client → server ----------------------------------------------------------------------------

    async def _receive_loop(self) -> None:
        connection = self.connection
        while True:
            # Flow control, never loss: a client sending faster than its frame rate is read later. Its frames wait
            # in the kernel (uvicorn pauses reading until we take the next message) and TCP slows the sender.
            delay = connection.read_delay(time.monotonic())
            await asyncio.sleep(delay)  # also yields the loop after every frame: one flood cannot starve the rest
            message = await self.websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            frame = message.get("text")
            if frame is None:
                frame = message.get("bytes")
            if frame is None:
                continue
            if len(frame) > DECODE_OFF_LOOP_BYTES:  # a pronunciation list: parsed on a thread, the loop serves on
                decoded = await asyncio.to_thread(decode, connection.codec, frame)
                events, check = connection.receive_decoded(decoded, time.monotonic())
            else:
                events, check = connection.receive_frame(frame, time.monotonic())
            self.driver.apply(events)
            self._count_bad_frames()
            self.lease.last_active = connection.last_activity
            if check is not None:
                self.driver.apply(await self._execute_checked(check))

    def _count_bad_frames(self) -> None:
        bad, paced = self.connection.bad_frames, self.connection.pacing.paced_reads
        if (bad, paced) != self._counted:
            told_bad, told_paced = self._counted
            self.runtime.bad_frame_log.add({"bad": bad - told_bad, "paced": paced - told_paced}, self.lease.id[:8])
            self._counted = (bad, paced)

    async def _execute_checked(self, check: VoiceCheck) -> list[Event]:
        try:
            voice = await self.runtime.check_voice(check.voice)
        except VoicedeskError as exc:
            error = Error(exc.code, exc.message)
            return self.connection.execute(check.command, time.monotonic(), voice_error=error)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("session %s voice %s", self.lease.id[:8], escape(voice))
        return self.connection.execute(check.command, time.monotonic(), voice=voice)

    # ---- server → client ----------------------------------------------------------------------------

    async def _send_loop(self) -> None:
        connection = self.connection
        websocket = self.websocket
        try:
            while True:
                frame = connection.next_frame(time.monotonic())
                if frame is None:
                    instruction = connection.close_instruction
                    if instruction is not None:
                        with contextlib.suppress(RuntimeError, OSError):
                            await websocket.close(instruction[0], instruction[1][:120])
                        return
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                if isinstance(frame, bytes):
                    await websocket.send_bytes(frame)
                else:
                    await websocket.send_text(frame)
                # Taking a frame may have freed room for synthesis (backpressure) or moved the idle clock.
                self.lease.last_active = connection.last_activity
                self.driver.pump()
        except (WebSocketDisconnect, RuntimeError, OSError):
            return
