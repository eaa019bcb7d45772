"""Where a server runs, as far as its exposure goes: behind SageMaker, on loopback, or open to a network.

Behind SageMaker (``VOICEDESK_PLATFORM=sagemaker`` or any ``SAGEMAKER_*``/``SM_*`` variable) IAM decides who calls and
every session comes from one address: no token warning, no per-client cap."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

PLATFORM_ENV = "VOICEDESK_PLATFORM"
PLATFORM_SAGEMAKER = "sagemaker"
SAGEMAKER_ENV_PREFIXES = ("SAGEMAKER_", "SM_")


def sagemaker_marker(environ: Mapping[str, str]) -> str | None:
    """The environment variable that says this process runs behind SageMaker, or None."""
    if environ.get(PLATFORM_ENV, "").strip().lower() == PLATFORM_SAGEMAKER:
        return PLATFORM_ENV
    return next((name for name in sorted(environ) if name.startswith(SAGEMAKER_ENV_PREFIXES)), None)


def is_loopback(host: str | None) -> bool:
    """True when ``host`` can only be this machine: a loopback address, ``localhost`` or a ``.localhost`` name
    (RFC 6761). ``0.0.0.0``/``::`` and other names are not, whatever they resolve to now."""
    host = (host or "").strip().strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
