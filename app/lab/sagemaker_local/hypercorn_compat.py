"""Two narrow, idempotent workarounds for hypercorn 0.18. Late DATA for a stream whose response already ended (SageMaker
ends it early on an error or when the container closes) makes hypercorn drop the whole connection (issue #329): a stream
table that sinks unknown ids makes it harmless. ``abort_connections`` drops one server's idle TLS connections at
shutdown, which asyncio would wait 30 s on each."""

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
