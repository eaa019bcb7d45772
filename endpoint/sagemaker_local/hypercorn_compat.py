"""Two small workarounds for hypercorn 0.18 that the stand-in needs; both are idempotent and scoped narrowly.

1. Responses that end before the request (hypercorn issue #329). SageMaker answers a bad bidirectional request
   (unknown endpoint, bad signature) with an HTTP error while the client is still sending, and ends a stream's
   response as soon as the container closes, whatever the client's input is doing; the SDK sees either only
   once that response has ended. hypercorn then looks up the finished stream for the client's late DATA frames,
   raises ``KeyError`` and drops the whole HTTP/2 connection (its END_STREAM handler already tolerates this; its
   DATA handler does not). A stream table that answers unknown ids with a sink makes late DATA harmless too.
2. Prompt shutdown. A client that keeps an idle TLS connection open without reading (boto3's pool) makes
   asyncio wait 30 s for a TLS close_notify per connection. ``abort_connections(config)`` drops the
   connections of one server at once, for use after its graceful period.
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any

from hypercorn.asyncio.tcp_server import TCPServer
from hypercorn.config import Config
from hypercorn.protocol.h2 import H2Protocol

_PATCHED = "_voicedesk_patched"
_connections: weakref.WeakKeyDictionary[Config, weakref.WeakSet[TCPServer]] = weakref.WeakKeyDictionary()


class _FinishedStream:
    """Stands in for a stream whose response has ended: late request data is dropped."""

    idle = True

    async def handle(self, event: object) -> None:
        return None


class _StreamTable(dict[int, Any]):
    def __missing__(self, stream_id: int) -> _FinishedStream:
        return _FinishedStream()


def install() -> None:
    """Patches hypercorn's classes once; affects connections created afterwards."""
    if getattr(H2Protocol, _PATCHED, False):
        return
    h2_init = H2Protocol.__init__
    tcp_init = TCPServer.__init__

    def h2_protocol_init(self: H2Protocol, *args: Any, **kwargs: Any) -> None:
        h2_init(self, *args, **kwargs)
        self.streams = _StreamTable(self.streams)

    def tcp_server_init(self: TCPServer, *args: Any, **kwargs: Any) -> None:
        tcp_init(self, *args, **kwargs)
        _connections.setdefault(self.config, weakref.WeakSet()).add(self)

    H2Protocol.__init__ = h2_protocol_init  # type: ignore[method-assign]
    TCPServer.__init__ = tcp_server_init  # type: ignore[method-assign]
    setattr(H2Protocol, _PATCHED, True)


def abort_connections(config: Config) -> int:
    """Drops every open connection of the server started with ``config``; returns how many there were."""
    servers = list(_connections.get(config, ()))
    for server in servers:
        with contextlib.suppress(Exception):
            server.writer.transport.abort()
    return len(servers)
