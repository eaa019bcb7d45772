"""Where a server runs, as far as its exposure goes: behind SageMaker, on loopback, or open to a network.

SageMaker sets no variable in every container, so the signal is ``VOICEDESK_PLATFORM=sagemaker`` (``voicedesk deploy``
sets it) or any ``SAGEMAKER_*``/``SM_*`` variable. Behind SageMaker IAM decides who calls and every session comes from
one address: no token warning, no per-client cap."""

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


def is_loopback(host: str) -> bool:
    """True when binding ``host`` can only be reached from this machine (``0.0.0.0``/``::`` and names are not)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
