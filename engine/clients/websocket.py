"""The websocket engine: a container's ``/invocations-bidirectional-stream`` reached directly, one WebSocket per
session, resumed after a drop with ``reconnect`` (``engine.clients.resuming``)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import websockets
from websockets.exceptions import ConnectionClosed, ConnectionClosedOK, InvalidHandshake, InvalidStatus, InvalidURI

from voicedesk.engine.api import EngineInfo
from voicedesk.engine.clients.errors import untrusted_certificate
from voicedesk.engine.clients.outbox import Outbox
from voicedesk.engine.clients.remote import RemoteSession
from voicedesk.engine.clients.resuming import ResumingSession, StreamInterrupted, StreamPolicy
from voicedesk.engine.engine_spec import TOKEN_ENV, EngineSpec
from voicedesk.engine.errors import (
    ConnectionFailed,
    ErrorCode,
    LocalErrorCode,
    RemoteProtocolError,
    UsageError,
    VoicedeskError,
)
from voicedesk.engine.events import SessionConfig
from voicedesk.engine.model.languages import LANGUAGES as LANGUAGE_SETUP
from voicedesk.engine.model.voices import KNOWN_VOICES, LANGUAGES, VoiceInfo
from voicedesk.engine.protocol import BIDI_PATH, Frame

"""Read when no token is given, matching ``voicedesk serve --token``'s environment variable."""


def normalize_url(target: str) -> str:
    """``host:port``, ``http(s)://host:port`` or ``ws(s)://host:port[/path]`` → a full ``ws(s)://`` URL."""
    if "://" not in target:
        target = f"ws://{target}"
    try:
        parts = urlsplit(target)
        hostname = parts.hostname
    except ValueError:  # urllib's own words ("Invalid IPv6 URL") name no fix
        hostname = None
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme) if hostname else ""
    if scheme not in ("ws", "wss"):
        raise UsageError(
            f"{target!r} is not a WebSocket URL; use ws://HOST:PORT (or wss:// for TLS), e.g. ws://127.0.0.1:8080.",
        )
    path = parts.path if parts.path not in ("", "/") else BIDI_PATH
    return urlunsplit((scheme, parts.netloc, path, parts.query, ""))


@dataclass(frozen=True, slots=True)
class WebSocketSettings:
    url: str
    token: str | None = None
    open_timeout_s: float = 10.0
    ping_interval_s: float | None = 20.0
    ping_timeout_s: float | None = 20.0
    close_timeout_s: float = 2.0
    """How long a close (or a failed keep-alive) waits for the peer's close frame before dropping the socket."""
    ssl_context: ssl.SSLContext | None = None
    """For wss:// with a private CA; None uses the system's trust store."""
    reconnect: bool = False
    """Replace a connection that drops mid-session and re-send what was not spoken (off: the session ends)."""


def _connect_error(exc: BaseException, settings: WebSocketSettings) -> VoicedeskError:
    url = settings.url
    if isinstance(exc, InvalidStatus):
        status = exc.response.status_code
        said = _server_message(exc.response.body)
        if status == 401:  # the server's own words give the same advice: said once, here
            what = "refused the token it was given" if settings.token else "requires a token"
            advice = f"Give the token `voicedesk serve` was started with (--token, or the {TOKEN_ENV} variable)."
            return VoicedeskError(ErrorCode.UNAUTHORIZED, f"{url} {what}.", advice)
        if status in (403, 404):
            return ConnectionFailed(
                f"{url} has no WebSocket at {urlsplit(url).path} (HTTP {status}). A voicedesk endpoint serves "
                f"{BIDI_PATH}; is this the right host and port?",
            )
        return ConnectionFailed(
            f"{url} refused the WebSocket upgrade with HTTP {status}{f': {said}' if said else ''}.",
        )
    if isinstance(exc, ssl.SSLCertVerificationError):
        return untrusted_certificate(url, exc.verify_message or str(exc))
    if isinstance(exc, ConnectionRefusedError):
        return ConnectionFailed(f"Cannot reach {url} (connection refused). Is `voicedesk serve` running there?")
    if isinstance(exc, socket.gaierror):
        return ConnectionFailed(f"Cannot resolve the host of {url} ({exc.strerror}).")
    if isinstance(exc, TimeoutError):
        return ConnectionFailed(
            f"Timed out after {settings.open_timeout_s:g} s connecting to {url}. Check the address, the network "
            "and any firewall; is the server still loading its model?",
        )
    if isinstance(exc, InvalidURI):
        return UsageError(f"{url} is not a valid WebSocket URL: {exc}")
    if isinstance(exc, InvalidHandshake):
        return ConnectionFailed(f"{url} did not complete a WebSocket handshake: {exc}")
    return ConnectionFailed(f"Cannot reach {url}: {exc}")


def _server_message(body: bytes | None) -> str | None:
    """The ``message`` of a voicedesk JSON error body, if that is what the server sent."""
    try:
        message = json.loads(body or b"").get("message")
    except (ValueError, AttributeError):
        return None
    return message if isinstance(message, str) else None


def _dropped(exc: ConnectionClosed, url: str) -> StreamInterrupted:
    frame = exc.rcvd or exc.sent
    if frame is not None and frame.code == 1013 and frame.reason == ErrorCode.NOT_READY:
        return StreamInterrupted(ErrorCode.NOT_READY, f"The server at {url} is still loading its model.")
    detail = f"code {frame.code}" + (f": {frame.reason}" if frame.reason else "") if frame else "no close frame"
    return StreamInterrupted(LocalErrorCode.CONNECTION, f"The connection to {url} dropped mid-session ({detail}).")


class WebSocketChannel:
    """A ``FrameChannel`` on one ``websockets`` client connection."""

    def __init__(self, connection: websockets.ClientConnection, url: str) -> None:
        self._connection = connection
        self.description = url
        self.outbox = Outbox(self._send_now)
        """Fragments queued while a send is in flight go out as one frame."""

    @classmethod
    async def open(cls, settings: WebSocketSettings, first_frame: str) -> WebSocketChannel:
        # websockets writes header values as ISO-8859-1; the server compares the token's UTF-8 bytes.
        token = settings.token.encode("utf-8").decode("latin-1") if settings.token else None
        headers = {"Authorization": f"Bearer {token}"} if token else None
        try:
            connection = await websockets.connect(
                settings.url,
                additional_headers=headers,
                open_timeout=settings.open_timeout_s,
                ping_interval=settings.ping_interval_s,
                ping_timeout=settings.ping_timeout_s,
                close_timeout=settings.close_timeout_s,
                ssl=settings.ssl_context if settings.url.startswith("wss:") else None,
                max_size=None,  # audio frames are bounded by the server's sentence length
                compression=None,  # PCM does not compress; deflate would only add latency
            )
        except (OSError, TimeoutError, InvalidHandshake, InvalidURI) as exc:
            raise _connect_error(exc, settings) from exc
        channel = cls(connection, settings.url)
        await channel._send_now(first_frame)  # at once: a refusal is raised here, by open
        return channel

    async def send(self, frame: str) -> None:
        await self.outbox.send(frame)

    async def _send_now(self, frame: str) -> None:
        try:
            await self._connection.send(frame)
        except ConnectionClosed as exc:
            raise _dropped(exc, self.description) from exc

    async def receive(self) -> Frame | None:
        try:
            return await self._connection.recv()
        except ConnectionClosedOK:
            return None
        except ConnectionClosed as exc:
            raise _dropped(exc, self.description) from exc

    async def close(self) -> None:
        await self._connection.close()

    async def abort(self) -> None:
        self.outbox.abort()
        with contextlib.suppress(Exception):
            self._connection.transport.abort()


def http_url(ws_url: str, path: str) -> str:
    """``ws://host:port/…`` → ``http://host:port{path}`` (``wss`` → ``https``): the server's HTTP routes."""
    parts = urlsplit(ws_url)
    scheme = "https" if parts.scheme.lower() == "wss" else "http"
    return urlunsplit((scheme, parts.netloc, path, "", ""))


async def server_voices(ws_url: str, token: str | None, timeout_s: float) -> tuple[VoiceInfo, ...]:
    import httpx

    url = http_url(ws_url, "/v1/audio/voices")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        async with httpx.AsyncClient(timeout=timeout_s) as client:
            response = await client.get(url, headers=headers)
    except httpx.HTTPError as exc:
        raise ConnectionFailed(f"Could not ask {url} for its voices ({type(exc).__name__}).") from exc
    if response.status_code != 200:
        raise ConnectionFailed(
            f"{url} answered HTTP {response.status_code} when asked for its voices.",
            "Check the URL, and the token if the server was started with one.",
        )
    try:
        body = response.json()
        names = [str(name) for name in body["voices"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise RemoteProtocolError(f"{url} did not answer with a voice list.") from exc
    unready = _languages_not_set_up(body.get("languages"))
    served = tuple(
        VoiceInfo(name, LANGUAGES.get(name[:1], "unknown"), True, name in KNOWN_VOICES, name[:1] not in unready)
        for name in names
    )
    # Kokoro's voices of a language the server has not set up are listed as such (not merely absent), so a person
    # picking one learns why it cannot speak; setting the language up is the server operator's to do.
    not_set_up = tuple(
        VoiceInfo(name, LANGUAGES[name[0]], True, True, language_ready=False)
        for name in KNOWN_VOICES
        if name[0] in unready and name not in names
    )
    return served + not_set_up


def _languages_not_set_up(languages: object) -> frozenset[str]:
    """The Kokoro language codes the server's ``languages`` list says are not ready (none from an older server)."""
    if not isinstance(languages, list):
        return frozenset()
    tags = {entry.get("tag") for entry in languages if isinstance(entry, dict) and entry.get("ready") is False}
    return frozenset(lang.code for lang in LANGUAGE_SETUP.values() if lang.tag in tags)


class WebSocketEngine:
    """Sessions on a container reached over a WebSocket (``voicedesk serve`` on a lab box, or loopback)."""

    name = "websocket"

    def __init__(self, settings: WebSocketSettings) -> None:
        self.settings = settings

    @classmethod
    def from_spec(cls, spec: EngineSpec) -> WebSocketEngine:
        if not spec.target:
            raise UsageError("The websocket engine needs a URL: --engine websocket URL")
        options = spec.options
        return cls(
            WebSocketSettings(
                url=normalize_url(spec.target),
                token=spec.token or os.environ.get(TOKEN_ENV) or None,
                open_timeout_s=float(options.get("open_timeout_s", 10.0)),  # type: ignore[arg-type]
                ping_interval_s=float(options.get("ping_interval_s", 20.0)),  # type: ignore[arg-type]
                reconnect=str(options.get("reconnect", "")).lower() in ("1", "true", "yes", "on"),
            )
        )

    async def _open_channel(self, first_frame: str) -> WebSocketChannel:
        return await WebSocketChannel.open(self.settings, first_frame)

    async def open_session(self, config: SessionConfig | None = None) -> RemoteSession:
        if self.settings.reconnect:
            return await ResumingSession.open(self._open_channel, config, StreamPolicy())
        return await RemoteSession.open(self._open_channel, config)

    @property
    def info(self) -> EngineInfo:
        return EngineInfo("websocket", f"voicedesk serve at {self.settings.url}")

    async def voices(self) -> tuple[VoiceInfo, ...]:
        """The server's voices (``GET /v1/audio/voices``)."""
        return await server_voices(self.settings.url, self.settings.token, self.settings.open_timeout_s)

    async def aclose(self) -> None:
        """Sessions own their connections; there is nothing shared to release."""
