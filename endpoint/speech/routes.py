"""HTTP speech routes: ``POST /invocations`` (the AWS sample's) and OpenAI's speech and voices routes, each request run
through a ``LocalSession`` like every other path."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from voicedesk.endpoint.http_errors import BUG_MESSAGE, Refusal
from voicedesk.endpoint.log_safety import escape
from voicedesk.endpoint.runtime import EndpointRuntime, Lease
from voicedesk.endpoint.speech.body import (
    SSE_HEADERS,
    AudioTally,
    audio_headers,
    binary_body,
    media_type,
    openai_sse_body,
    voicedesk_sse_body,
    whole_response,
)
from voicedesk.endpoint.speech.request import (
    OPENAI_VOICES,
    SpeechRequest,
    check_budget,
    parse_invocation,
    parse_openai_speech,
    request_id_of,
)
from voicedesk.engine.connection import DECODE_OFF_LOOP_BYTES
from voicedesk.engine.errors import ErrorCode, VoicedeskError, VoiceError
from voicedesk.engine.events import Error, Event, SessionConfig
from voicedesk.engine.limits import SessionLimits
from voicedesk.engine.model.languages import LanguageStatus, languages_status
from voicedesk.engine.request_fields import check_fresh

log = logging.getLogger(__name__)


class SessionStreamResponse(StreamingResponse):
    """A streaming response that always releases its session, even when it never got to stream."""

    def __init__(self, content: AsyncIterator[bytes | str], on_close: Callable[[], Awaitable[None]], **kwargs) -> None:
        super().__init__(content, **kwargs)
        self._on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self._on_close()


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refusing more than ``limit`` bytes without buffering them."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise VoicedeskError(
                ErrorCode.FRAME_TOO_LARGE,
                f"The request body is over the limit of {limit:,} bytes; send less text per request.",
            )
        chunks.append(chunk)
    return b"".join(chunks)


async def resolve_voice(runtime: EndpointRuntime, voice: str, openai_names: bool) -> str:
    try:
        return await runtime.check_voice(voice)
    except VoiceError as exc:
        mapped = OPENAI_VOICES.get(voice.lower()) if openai_names else None
        if mapped is None:
            raise
        try:
            return await runtime.check_voice(mapped)
        except VoiceError:
            raise VoiceError(
                f"The OpenAI voice {voice!r} maps to Kokoro's {mapped}, which this server does not have. {exc.message}"
            ) from None


def _log_request(route: str, request: SpeechRequest) -> None:
    # request_id and voice come from the client: escaped, so they cannot write lines of their own.
    log.info(
        "%s %s: %d chars, voice %s, speed %.2f, %s/%s",
        route,
        escape(request.request_id or "-"),
        len(request.text),
        escape(request.voice),
        request.speed,
        request.audio_format,
        request.transport,
    )
    if log.isEnabledFor(logging.DEBUG):
        log.debug("%s %s text: %s", route, escape(request.request_id or "-"), escape(request.text, limit=2_000))


async def session_events(runtime: EndpointRuntime, lease: Lease, request: SpeechRequest) -> AsyncIterator[Event]:
    """The request's events up to ``Closed``, taken as the body is sent: a stalled reader stops synthesis."""
    try:
        text = request.text_change.applied_to(runtime.settings.text_settings, runtime.settings.lexicon)
    except VoicedeskError as exc:  # options are checked when parsed; this is a second line of defence
        yield Error(exc.code, exc.message, request_id=request.request_id)
        return
    session = runtime.open_session(lease, SessionConfig(voice=request.voice, speed=request.speed, text=text))
    ended = asyncio.Event()

    async def drain() -> None:
        # Shutdown waits for the stream itself, not only for the wind-down to begin: otherwise uvicorn's own 4 s
        # grace, not ``shutdown_grace_s``, would bound the sentence being made.
        await session.wind_down()
        await ended.wait()

    lease.drain = drain
    lease.is_speaking = lambda: session.core.has_work  # a stream exists to speak; an idle session goes first
    lease.evict = lambda message: session.evict(Error(ErrorCode.TOO_MANY_SESSIONS, message, fatal=True))
    try:
        await session.synthesize(request.text, request_id=request.request_id)
        await session.close()
        async for event in session.events():
            lease.last_active = time.monotonic()
            yield event
    finally:
        ended.set()


async def stream_speech(request: Request, speech: SpeechRequest) -> Response:
    """Admits the request, then streams its audio in the transport it asked for."""
    runtime: EndpointRuntime = request.app.state.runtime
    lease = runtime.admit("http", request.client.host if request.client else None)
    try:
        events = session_events(runtime, lease, speech)
        if speech.transport == "sse":
            body = (
                openai_sse_body(events, speech)
                if speech.sse_dialect == "openai"
                else voicedesk_sse_body(events, speech)
            )
            content_type, headers = "text/event-stream", SSE_HEADERS
        else:
            tally = AudioTally()
            body = binary_body(events, speech, tally)
            content_type, headers = media_type(speech), audio_headers(speech)
    except BaseException:
        runtime.release(lease)
        raise

    async def finish() -> None:
        if lease.stop is not None:
            lease.stop()
        runtime.release(lease)

    if speech.transport == "binary" and not speech.stream:
        return await whole_response(body, speech, tally, finish)
    return SessionStreamResponse(body, finish, media_type=content_type, headers=headers)


async def _speech_route(
    request: Request, parse: Callable[[bytes, SessionLimits], SpeechRequest], route: str, openai: bool
) -> Response:
    runtime: EndpointRuntime = request.app.state.runtime
    body = b""
    try:
        runtime.check_available()
        async with asyncio.timeout(runtime.settings.header_timeout_s):
            body = await read_body(request, runtime.settings.connection.max_frame_bytes)
        if len(body) > DECODE_OFF_LOOP_BYTES:  # a pronunciation list: paced per address, parsed on a thread
            if runtime.large_bodies is not None and request.client:
                await asyncio.sleep(runtime.large_bodies.spend_s(request.client.host, time.monotonic(), len(body)))
            speech = await asyncio.to_thread(parse, body, runtime.settings.limits)
        else:
            speech = parse(body, runtime.settings.limits)
        check_budget(speech, runtime.settings.limits)
        voice = await resolve_voice(runtime, speech.voice, openai_names=openai)
        speech = replace(speech, voice=voice)
        # Staleness first: a stale request is refused whatever the load (the AWS sample's 408 request_stale).
        check_fresh(speech.request_timestamp, time.time(), runtime.settings.max_request_age_s)
        runtime.check_not_saturated()
        _log_request(route, speech)
        return await stream_speech(request, speech)
    except VoicedeskError as exc:
        raise Refusal(exc, request_id_of(body), openai) from None
    except ClientDisconnect:
        return Response(status_code=499)
    except TimeoutError:
        seconds = runtime.settings.header_timeout_s
        message = f"The request body did not arrive within {seconds:g} s; send it at once."
        raise Refusal(VoicedeskError(ErrorCode.IDLE_TIMEOUT, message), None, openai) from None
    except Exception as exc:  # a bug: answered like any other error (in the route's shape), not a bare 500
        log.exception("%s failed", route)
        raise Refusal(VoicedeskError(ErrorCode.INTERNAL, BUG_MESSAGE), request_id_of(body), openai) from exc


async def invocations(request: Request) -> Response:
    return await _speech_route(request, parse_invocation, "invocation", openai=False)


async def openai_speech(request: Request) -> Response:
    return await _speech_route(request, parse_openai_speech, "openai speech", openai=True)


async def openai_voices(request: Request) -> Response:
    runtime: EndpointRuntime = request.app.state.runtime
    try:
        runtime.check_available()
    except VoicedeskError as exc:
        raise Refusal(exc, openai=True) from None
    statuses = await asyncio.to_thread(languages_status)
    return JSONResponse(
        {"voices": list(runtime.voices), "openai_voice_names": OPENAI_VOICES, "languages": language_entries(statuses)}
    )


def language_entries(statuses: list[LanguageStatus]) -> list[dict[str, object]]:
    """Each Kokoro language and whether this server speaks it (or what is missing and how to set it up)."""
    entries: list[dict[str, object]] = []
    for status in statuses:
        entry: dict[str, object] = {"tag": status.language.tag, "name": status.language.name, "ready": status.ready}
        if not status.ready:
            entry["missing"] = list(status.missing)
            entry["fix"] = status.fix.replace("`", "")
        entries.append(entry)
    return entries
