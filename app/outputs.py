"""Outputs by name: PortAudio sees only "pulse", so sinks are listed with ``pulsectl`` and reached through
``PULSE_SINK``. A choice is ``""`` (the default), ``pulse-sink:NAME``, or a PortAudio device name."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

log = logging.getLogger(__name__)

PULSE_PREFIX = "pulse-sink:"
PULSE_SOURCE_PREFIX = "pulse-source:"
PORTAUDIO_ALIASES = ("pulse", "default", "sysdefault")  # redundant once the sinks are listed by name
_ENV_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class OutputChoice:
    key: str  # what the settings store
    title: str
    detail: str = ""


def pulse_sinks(kind: str = "sink") -> list[tuple[str, str]]:
    """(name, description) of PulseAudio's sinks (or sources); empty without PulseAudio."""
    try:
        import pulsectl
    except (ImportError, OSError):  # OSError: libpulse.so is not installed
        return []
    try:
        with pulsectl.Pulse("voicedesk-outputs", connect=True) as pulse:
            found = pulse.sink_list() if kind == "sink" else pulse.source_list()
            return [(sink.name, sink.description or sink.name) for sink in found]
    except Exception as exc:  # no server, refused, version mismatch: PortAudio's list is the fallback
        log.debug("PulseAudio is not available: %s", exc)
        return []


def list_outputs(portaudio_devices: list[str]) -> list[OutputChoice]:
    sinks = pulse_sinks()
    choices = [OutputChoice(f"{PULSE_PREFIX}{name}", description, name) for name, description in sinks]
    for name in portaudio_devices:
        if sinks and name in PORTAUDIO_ALIASES:
            continue
        choices.append(OutputChoice(name, name, "PortAudio device"))
    return choices


def sink_name(key: str) -> str | None:
    return key[len(PULSE_PREFIX) :] if key.startswith(PULSE_PREFIX) else None


@contextmanager
def routed_to(key: str) -> Iterator[str | None]:
    """Yields the PortAudio device to open; ``PULSE_SINK``/``PULSE_SOURCE`` is set meanwhile, under a lock."""
    sink = sink_name(key)
    source = key[len(PULSE_SOURCE_PREFIX) :] if key.startswith(PULSE_SOURCE_PREFIX) else None
    if sink is None and source is None:
        yield key or None
        return
    variable = "PULSE_SINK" if sink is not None else "PULSE_SOURCE"
    with _ENV_LOCK:
        before = os.environ.get(variable)
        os.environ[variable] = sink or source or ""
        try:
            yield None
        finally:
            if before is None:
                os.environ.pop(variable, None)
            else:
                os.environ[variable] = before
