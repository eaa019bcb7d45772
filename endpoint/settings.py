"""What a running endpoint is allowed to do: where it listens, who may talk to it, and its limits."""

from __future__ import annotations

from dataclasses import dataclass, field

from voicedesk.engine.limits import ConnectionLimits, SessionLimits
from voicedesk.engine.protocol import DEFAULT_MAX_FRAME_BYTES
from voicedesk.engine.text.frontend.lexicon import EMPTY_LEXICON, Lexicon
from voicedesk.engine.text.frontend.settings import TextSettings

OPEN_PATHS = frozenset({"/ping"})
"""Routes answered without a token: SageMaker's health check and load balancers cannot send one."""


@dataclass(frozen=True, slots=True)
class ServerSettings:
    host: str = "127.0.0.1"
    port: int = 8080
    token: str | None = None
    """When set, every route but ``/ping`` requires ``Authorization: Bearer <token>``."""
    device: str | None = None
    """Torch device for the model; None picks CUDA when present."""
    max_sessions: int = 16
    """Concurrent WebSocket sessions plus HTTP streams; more are refused with ``too_many_sessions``."""
    max_sessions_per_client: int | None = 4
    """Sessions one address may hold (None: no cap, as behind SageMaker's sidecar); full servers follow the fair
    rule."""
    ws_max_size: int = 2 * DEFAULT_MAX_FRAME_BYTES
    """Frames above this are refused by the WebSocket layer itself (close 1009), before they are buffered."""
    connection: ConnectionLimits = field(default_factory=ConnectionLimits)
    """Each WebSocket connection's largest frame (also an HTTP body's), idle timeout, read rate and junk budget."""
    limits: SessionLimits = field(default_factory=SessionLimits)
    lexicon: Lexicon = EMPTY_LEXICON
    """The server's pronunciation lexicon (``--lexicon FILE``): every session's own entries are merged over it."""
    send_timeout_s: float = 20.0
    """A send stuck this long (the client stopped reading) aborts the connection, freeing its slot."""
    header_timeout_s: float = 10.0
    """A connection must finish sending its request headers within this long (slow-header attacks)."""
    keepalive_timeout_s: float = 5.0
    """An idle keep-alive HTTP connection is closed after this long."""
    max_header_bytes: int = 32 * 1024
    """Request line plus headers; larger requests get 400 before they are buffered."""
    max_connections: int = 256
    """Open TCP connections (any state); more are closed at once."""
    max_connections_per_client: int | None = 32
    """Open TCP connections from one address (None: no cap, as behind a sidecar or proxy)."""
    shutdown_grace_s: float = 20.0
    """On SIGTERM, how long sessions get to finish their sentence: the process exits within SageMaker's 30 s."""
    ws_ping_interval_s: float | None = 20.0
    """Server-side keepalive pings; the server also answers the client's (and SageMaker's) pings."""
    max_request_age_s: float | None = 56.0
    """Older ``request_timestamp`` is refused 408 ``request_stale`` (the AWS sample's); None: off."""
    first_audio_target_s: float | None = 2.0
    """A session's whole request is refused 503 ``queue_saturated`` while its own backlog would wait longer
    (``engine.limits``); None: off."""
    max_queue_depth: int | None = None
    """A backstop by count of sentences waiting, whatever the speed; None (the default): off."""
    batch: str = "auto"
    """Padded batches of several sessions' sentences (``engine.model.batch``): ``auto`` (CUDA, when measured faster),
    ``on``, ``off``."""
    prepare_workers: int | str = "auto"
    """Front-end and G2P processes (``engine.model.prepare_pool``): a count, 0 (in-process) or ``auto``
    (``auto_workers``)."""
    tls_cert: str | None = None
    tls_key: str | None = None

    @property
    def text_settings(self) -> TextSettings:
        """What a new session starts with: default text options and the server's lexicon."""
        return TextSettings(lexicon=self.lexicon)
