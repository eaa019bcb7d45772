"""Works around hypercorn issue #329 for the stand-in's error replies.

SageMaker answers a bad bidirectional request (unknown endpoint, bad signature) with an HTTP error while the
client is still sending, and the SDK only raises once that error response has ended. hypercorn 0.18 then looks
up the finished stream for the client's late DATA frames, raises ``KeyError`` and drops the whole HTTP/2
connection (its END_STREAM handler already tolerates this; its DATA handler does not). Giving each connection a
stream table that answers unknown ids with a sink makes late DATA frames harmless, as the END_STREAM case is.
"""

from __future__ import annotations

from typing import Any

from hypercorn.protocol.h2 import H2Protocol

_PATCHED = "_voicedesk_tolerates_finished_streams"


class _FinishedStream:
    """Stands in for a stream whose response has ended: late request data is dropped."""

    idle = True

    async def handle(self, event: object) -> None:
        return None


class _StreamTable(dict[int, Any]):
    def __missing__(self, stream_id: int) -> _FinishedStream:
        return _FinishedStream()


def tolerate_finished_streams() -> None:
    """Idempotent; affects only hypercorn's HTTP/2 connections created afterwards."""
    if getattr(H2Protocol, _PATCHED, False):
        return
    original_init = H2Protocol.__init__

    def __init__(self: H2Protocol, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        self.streams = _StreamTable(self.streams)

    H2Protocol.__init__ = __init__  # type: ignore[method-assign]
    setattr(H2Protocol, _PATCHED, True)
