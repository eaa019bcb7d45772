"""Who makes room when the server is full (pure): the idlest holder of the address that holds the most.

Per-address caps keep one address from taking more than a small share, but a few addresses together can still fill
the server. When a newcomer finds it full, and its address holds clearly less than the busiest address (after the
swap, it would still hold fewer), the busiest address's idlest session or connection is closed to make room.
Nobody is evicted in favour of an address that already holds as much: a full server of equal shares stays as it is.
Used for sessions (``EndpointRuntime.admit``) and TCP connections (``endpoint.transport_guards``). Whoever is
closed is told why first: an evicted session gets ``too_many_sessions``, an evicted connection
``too_many_connections`` (``connection_evicted``), both with close code 1013 on a WebSocket.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Protocol

from voicedesk.engine.errors import ErrorCode, VoicedeskError


class Holder(Protocol):
    @property
    def client(self) -> object: ...

    @property
    def last_active(self) -> float: ...


def address_of(client: object) -> str | None:
    """A peer as a host: uvicorn keeps ``(host, port)``, leases keep the host."""
    if isinstance(client, tuple):
        return str(client[0]) if client else None
    return client if isinstance(client, str) else None


def idlest_of_busiest[H: Holder](holders: Iterable[H], newcomer: str | None) -> H | None:
    """The holder to close so ``newcomer`` can get in, or None when the newcomer's address is not worse off."""
    if newcomer is None:
        return None
    by_address: dict[str, list[H]] = {}
    for holder in holders:
        address = address_of(holder.client)
        if address is not None:
            by_address.setdefault(address, []).append(holder)
    if not by_address:
        return None
    counts = Counter({address: len(held) for address, held in by_address.items()})
    busiest, most = counts.most_common(1)[0]
    if counts.get(newcomer, 0) + 1 >= most:
        return None
    return min(by_address[busiest], key=lambda holder: holder.last_active)


def connection_evicted(max_connections: int) -> VoicedeskError:
    """What the connection closed to make room is told (as an ``error`` frame and close 1013 on a WebSocket, a 429
    answer on plain HTTP)."""
    return VoicedeskError(
        ErrorCode.TOO_MANY_CONNECTIONS,
        f"This server is full ({max_connections} connections) and your address holds more of them than anyone; "
        "this connection, the idlest, was closed to make room for another client. Reconnect later, or keep fewer "
        "connections open at once.",
    )
