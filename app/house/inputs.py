"""The house's side of a console, the window's and the announcer's alike: its rules (``HouseInputs``) and its inputs
and outputs (MQTT with discovery, the HTTP endpoint) around one ``ConsoleRunner``."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING

from voicedesk.app.console.core import Policy
from voicedesk.app.house.chimes import Chimes
from voicedesk.app.house.loudness import LoudnessCache
from voicedesk.app.house.mqtt import MqttBridge, MqttSettings

if TYPE_CHECKING:
    from voicedesk.app.console.runner import ConsoleRunner


@dataclass(frozen=True, slots=True)
class HouseInputs:
    mqtt: MqttSettings | None = None
    http_host: str = "127.0.0.1"
    http_port: int | None = None
    http_token: str | None = None
    policy: Policy = field(default_factory=Policy)
    chimes: Chimes = field(default_factory=Chimes)
    loudness: bool = True
    """Each voice at one loudness (``app.house.loudness``)."""


def loudness_cache(inputs: HouseInputs | None, path: Path | None = None) -> LoudnessCache | None:
    """The learnt loudness both consoles share (``~/.cache/voicedesk/loudness.json``), when asked for."""
    if inputs is None or not inputs.loudness:
        return None
    if path is None:
        from platformdirs import user_cache_dir

        path = Path(user_cache_dir("voicedesk")) / "loudness.json"
    return LoudnessCache(path)


def product_version() -> str:
    try:
        return version("voicedesk")
    except PackageNotFoundError:
        return "dev"


class HouseLink:
    """MQTT and HTTP for ``runner``: started before the model loads, so the house is heard from the first moment."""

    def __init__(self, runner: ConsoleRunner, inputs: HouseInputs, listen: Callable[[bool], str] | None = None) -> None:
        self.runner = runner
        self.inputs = inputs
        self.listen = listen
        """Push-to-talk from the house (MQTT ``listen``, HTTP ``POST /listen``) when the console listens."""
        self.mqtt: MqttBridge | None = None
        self.http = None

    async def start(self) -> None:
        inputs = self.inputs
        if inputs.http_port is not None:
            from voicedesk.app.house.http import serve_announce

            where = (inputs.http_host, inputs.http_port, inputs.http_token)
            self.http = await serve_announce(self.runner, *where, self.listen)
        if inputs.mqtt is not None:
            self.mqtt = MqttBridge(self.runner, inputs.mqtt, product_version(), self.listen)
            self.mqtt.start()

    async def aclose(self) -> None:
        if self.http is not None:
            self.http.should_exit = True
            with contextlib.suppress(Exception):
                await self.http.task
        if self.mqtt is not None:
            await self.mqtt.aclose()
