"""What a running endpoint is allowed to do: where it listens, who may talk to it, and its limits."""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.protocol import DEFAULT_MAX_FRAME_BYTES
from engine.session import SessionLimits

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
    idle_timeout_s: float = 300.0
    """A WebSocket session that neither receives a frame nor speaks for this long is closed."""
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    """Largest request frame answered with a structured ``frame_too_large`` error (and otherwise decoded)."""
    ws_max_size: int = 16 * 1024 * 1024
    """Frames above this are refused by the WebSocket layer itself (close 1009), before they are buffered."""
    limits: SessionLimits = field(default_factory=SessionLimits)
    shutdown_grace_s: float = 25.0
    """On SIGTERM, how long sessions get to finish their current sentence (SageMaker kills after 30 s)."""
    ws_ping_interval_s: float | None = 20.0
    """Server-side keepalive pings; the server also answers the client's (and SageMaker's) pings."""
    max_request_age_s: float | None = 56.0
    """A request whose ``request_timestamp`` is older is refused with 408 ``request_stale`` (the AWS sample's
    ``MAX_REQUEST_AGE_S``); None turns the check off."""
    max_queue_depth: int | None = 8
    """While more sentences than this wait for the model, new HTTP requests are refused with 503
    ``queue_saturated`` (``Retry-After: 5``); None turns the check off."""
