"""Zeroconf advertisement of the server as ``_wyoming._tcp`` (wyoming-piper's record), with the ``zeroconf`` library
directly so it is withdrawn when the server stops."""

from __future__ import annotations

import ipaddress
import logging
import socket
from dataclasses import dataclass

from zeroconf import InterfaceChoice, IPVersion
from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

from voicedesk.engine.errors import ConnectionFailed, UsageError

log = logging.getLogger(__name__)

SERVICE_TYPE = "_wyoming._tcp.local."
MDNS_GROUP = "224.0.0.251"
MAX_INSTANCE_BYTES = 63


@dataclass(frozen=True, slots=True)
class Advertisement:
    name: str
    """The instance name (``NAME`` in ``NAME._wyoming._tcp.local.``)."""
    address: str
    port: int
    interfaces: tuple[str, ...] | None
    """Addresses of the interfaces to announce on; None: all of them."""

    @property
    def service_name(self) -> str:
        return f"{self.name}.{SERVICE_TYPE}"

    def service_info(self) -> AsyncServiceInfo:
        return AsyncServiceInfo(
            SERVICE_TYPE,
            self.service_name,
            addresses=[socket.inet_aton(self.address)],
            port=self.port,
        )


def default_instance_name(port: int, default_port: int) -> str:
    """``voicedesk-HOST`` (plus ``-PORT`` off the standard port, so two servers on one machine differ)."""
    host = socket.gethostname().split(".")[0] or "host"
    name = f"voicedesk-{host}" + (f"-{port}" if port != default_port else "")
    return name.encode()[:MAX_INSTANCE_BYTES].decode(errors="ignore")


def lan_address() -> str:
    """The address this machine reaches the mDNS group from (no packet is sent: a UDP connect only routes)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect((MDNS_GROUP, 5353))
        return probe.getsockname()[0]


def plan_advertisement(bind_host: str, port: int, name: str) -> Advertisement:
    """What to announce for a server bound to ``bind_host``. Raises ``VoicedeskError`` when it cannot be."""
    if len(name.encode()) > MAX_INSTANCE_BYTES or not name.strip() or "." in name:
        raise UsageError(
            f"Zeroconf name {name!r} must be 1 to {MAX_INSTANCE_BYTES} bytes without dots.",
        )
    try:
        address = ipaddress.ip_address(socket.gethostbyname(bind_host or "0.0.0.0"))
    except OSError as exc:
        raise UsageError(f"Cannot resolve {bind_host!r} to advertise it: {exc}.") from None
    if address.is_loopback:
        return Advertisement(name, "127.0.0.1", port, ("127.0.0.1",))
    if address.is_unspecified:
        try:
            detected = lan_address()
        except OSError as exc:
            raise ConnectionFailed(
                f"This machine has no route to the mDNS group ({exc}); listen on a specific address with --host, "
                "or turn zeroconf off with --no-zeroconf and add the server in Home Assistant by host and port.",
            ) from None
        return Advertisement(name, detected, port, None)
    return Advertisement(name, str(address), port, (str(address),))


class ZeroconfAdvertiser:
    """Announces one ``Advertisement`` until ``stop``; the name is changed ("name (2)") if another host has it."""

    def __init__(self, advertisement: Advertisement) -> None:
        self.advertisement = advertisement
        self._zeroconf: AsyncZeroconf | None = None
        self._info: AsyncServiceInfo | None = None

    @property
    def registered_name(self) -> str | None:
        return self._info.name if self._info is not None else None

    async def start(self) -> None:
        interfaces = self.advertisement.interfaces
        zeroconf = AsyncZeroconf(
            interfaces=list(interfaces) if interfaces else InterfaceChoice.All, ip_version=IPVersion.V4Only
        )
        info = self.advertisement.service_info()
        try:
            await zeroconf.async_register_service(info, allow_name_change=True)
        except BaseException:
            await zeroconf.async_close()
            raise
        self._zeroconf, self._info = zeroconf, info
        log.info("zeroconf: announced %s at %s:%d", info.name, self.advertisement.address, self.advertisement.port)

    async def stop(self) -> None:
        zeroconf, info = self._zeroconf, self._info
        self._zeroconf = self._info = None
        if zeroconf is None or info is None:
            return
        try:
            await zeroconf.async_unregister_service(info)
        finally:
            await zeroconf.async_close()
