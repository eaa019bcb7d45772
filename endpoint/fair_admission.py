"""Who gets a slot on a full server, and who makes room (pure), one rule for sessions, HTTP streams, TCP and Wyoming
connections.

An address over its cap is refused. On a full server a newcomer whose address holds clearly less takes the place of such
an address's holder (idle before speaking, then the address holding most, then the idlest), told why first; equal shares
stay as they are."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Protocol

from voicedesk.engine.errors import ErrorCode, VoicedeskError

LINGER_S = 1.0
"""How long a refused client may still send while it reads why (closing on unread bytes resets the answer away)."""


class Holder(Protocol):
    @property
    def client(self) -> object: ...

    @property
    def last_active(self) -> float: ...

    @property
    def speaking(self) -> bool: ...


def address_of(client: object) -> str | None:
    """A peer as a host: uvicorn keeps ``(host, port)``, leases keep the host."""
    if isinstance(client, tuple):
        return str(client[0]) if client else None
    return client if isinstance(client, str) else None


@dataclass(frozen=True, slots=True)
class Admission[H]:
    """``refused`` (``"per-client cap"`` or ``"cap"``) or admitted, after closing ``victim`` when there is one."""

    refused: str | None = None
    victim: H | None = None


def admit[H: Holder](
    holders: Collection[H],
    newcomer: str | None,
    cap: int,
    per_client: int | None,
    evictable: Callable[[H], bool] = lambda _: True,
) -> Admission[H]:
    """Whether ``newcomer`` gets a slot among ``holders``; without a per-client cap a full server refuses."""
    counts = Counter(address_of(holder.client) for holder in holders)
    counts.pop(None, None)
    held = counts.get(newcomer, 0) if newcomer is not None else 0
    if per_client is not None and newcomer is not None and held >= per_client:
        return Admission("per-client cap")
    if len(holders) < cap:
        return Admission()
    if per_client is None or newcomer is None:
        return Admission("cap")
    candidates = [h for h in holders if counts.get(address_of(h.client), 0) >= held + 2 and evictable(h)]  # type: ignore[arg-type]
    if not candidates:
        return Admission("cap")
    victim = min(candidates, key=lambda h: (h.speaking, -counts[address_of(h.client)], h.last_active))  # type: ignore[index]
    return Admission(victim=victim)


def evicted(kind: str, cap: int) -> VoicedeskError:
    """What the holder closed to make room is told (``kind``: sessions or connections)."""
    code = ErrorCode.TOO_MANY_SESSIONS if kind == "sessions" else ErrorCode.TOO_MANY_CONNECTIONS
    return VoicedeskError(
        code,
        f"This server is full ({cap} {kind}) and your address holds more of them than a newcomer's; this one, "
        f"the idlest, was closed to make room for another client. Reconnect later, or keep fewer {kind} open at once.",
    )
