"""What the SageMaker stand-in serves: the container it forwards to and the endpoint it pretends to be."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from voicedesk.app.lab.sagemaker_local.auth import CredentialCheck
from voicedesk.app.lab.sagemaker_local.wire import MAX_MESSAGE_BYTES
from voicedesk.engine.protocol import BIDI_PATH

MAX_STREAM_DURATION_S = 1800.0
"""SageMaker's limit on one bidirectional stream: 30 minutes."""


@dataclass(frozen=True, slots=True)
class ContainerTarget:
    """Where the container listens, e.g. ``http://127.0.0.1:8080``."""

    base_url: str

    def __post_init__(self) -> None:
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"The container URL must look like http://127.0.0.1:8080; got {self.base_url!r}.")

    def websocket_url(self, invocation_path: str | None = None, query: str | None = None) -> str:
        parts = urlsplit(self.base_url)
        scheme = "wss" if parts.scheme == "https" else "ws"
        path = "/" + invocation_path.lstrip("/") if invocation_path else BIDI_PATH
        return urlunsplit((scheme, parts.netloc, path, query or "", ""))

    @property
    def invocations_url(self) -> str:
        return self.base_url.rstrip("/") + "/invocations"


@dataclass(slots=True)
class StandInConfig:
    container: ContainerTarget
    endpoint_names: frozenset[str] = frozenset()
    """Names the stand-in answers to; empty accepts any name."""
    credentials: CredentialCheck | None = None
    """Known keys to verify signatures against; None checks everything but the signature's value."""
    variant: str = "AllTraffic"
    region: str = "us-east-1"
    """The endpoint's region: requests must be signed for it (and it goes into ARNs of error messages)."""
    max_part_bytes: int | None = None
    """Split container frames into PARTIAL parts of at most this many bytes (None: one part per frame)."""
    max_stream_duration_s: float = MAX_STREAM_DURATION_S
    """A bidirectional stream is ended after this long, as SageMaker ends its streams after 30 minutes."""
    max_request_message_bytes: int = MAX_MESSAGE_BYTES
    """The largest request event-stream message accepted; a larger one ends the stream with an error."""
    expired_streams: int = 0
    """Streams ended by ``max_stream_duration_s`` (read by tests)."""
    calls: list[str] = field(default_factory=list)
    """Operation names served, in order (logged, and read by tests)."""
