"""Output devices by the names the system gives them.

On a PulseAudio (or PipeWire-Pulse) desktop, PortAudio sees only "pulse" and "default": the real outputs
("Built-in Audio Analog Stereo", "USB Speaker") are PulseAudio *sinks*. They are listed through ``pulsectl``
(libpulse's own client API) and chosen by name: the stream opens on PortAudio's default ALSA device with
``PULSE_SINK`` set to the sink, which libpulse reads when the stream connects. Elsewhere (no PulseAudio:
macOS, Windows, plain ALSA) the PortAudio devices are the list.

A choice is stored as a string: ``""`` (the system default), ``pulse-sink:NAME``, or a PortAudio device name.
"""

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
PORTAUDIO_ALIASES = ("pulse", "default", "sysdefault")
"""PortAudio's names for "whatever PulseAudio's default is": redundant once the sinks are listed by name."""
_ENV_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class OutputChoice:
    key: str
    """What the settings store (see the module docstring)."""
    title: str
    """What the person sees."""
    detail: str = ""


def pulse_sinks(kind: str = "sink") -> list[tuple[str, str]]:
    """(name, description) of PulseAudio's sinks (or ``kind="source"``: its sources, the microphones); empty when
    there is no PulseAudio (or no libpulse)."""
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
    """The outputs to offer, PulseAudio's sinks first (by their descriptions), then other PortAudio devices."""
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
    """Opens a stream inside this block to reach ``key``: yields the PortAudio device to name (None: default).

    For a PulseAudio sink (or source), ``PULSE_SINK`` (``PULSE_SOURCE``) is set for the moment the stream connects
    (under a lock, so two streams opening at once cannot swap them), then restored."""
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
