"""Where a server runs, as far as its exposure goes: behind SageMaker, on loopback, or open to a network.

SageMaker documents no environment variable that its hosting platform sets in every inference container (AWS's
own toolkits read optional ones such as ``SAGEMAKER_BIND_TO_PORT``, which only some endpoints get). So the signal
is one ``voicedesk deploy`` puts in the model's container environment itself, ``VOICEDESK_PLATFORM=sagemaker``;
an endpoint deployed by other means can set it too. Any ``SAGEMAKER_*`` or ``SM_*`` variable counts as well, since
those appear only where SageMaker (or someone imitating it on purpose) put them.

Behind SageMaker, IAM decides who may call the endpoint and every session arrives through SageMaker's sidecar from
one address: no token warning there, and no per-client session cap.
"""

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
