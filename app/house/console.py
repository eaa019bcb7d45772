"""A console without a window: the engine hub, speech controller, player, house queue and its inputs and outputs,
put together from one ``HouseConfig`` (``voicedesk announcer`` and the tests build it the same way).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from voicedesk.app.controller import SpeechController
from voicedesk.app.engines import EngineHub, EngineOpener
from voicedesk.app.house.chimes import Chimes
from voicedesk.app.house.loudness import LoudnessCache
from voicedesk.app.house.mqtt import MqttBridge, MqttSettings
from voicedesk.app.house.queue import HouseQueue, Policy
from voicedesk.app.house.runner import HeadlessListener, HouseRunner
from voicedesk.app.house.shaped_player import ShapedPlayer, mark_announcement_role
from voicedesk.engine.engine_spec import EngineSpec
from voicedesk.engine.errors import VoicedeskError
from voicedesk.engine.events import SessionConfig
from voicedesk.engine.factory import open_engine

if TYPE_CHECKING:
    from voicedesk.app.player import PlayerEvent

log = logging.getLogger(__name__)

HEALTH_EVERY_S = 15.0
"""How often a remote engine that went down is tried again (between announcements)."""


@dataclass
class HouseConfig:
    engine: EngineSpec = field(default_factory=lambda: EngineSpec("local"))
    voice: SessionConfig = field(default_factory=SessionConfig)
    audio: bool = True
    """False: no sound device (the announcements are synthesized and accounted for, not played)."""
    output_device: str | None = None
    media_role: str | None = "announcement"
    mqtt: MqttSettings | None = None
    http_host: str = "127.0.0.1"
    http_port: int | None = None
    http_token: str | None = None
    policy: Policy = field(default_factory=Policy)
    chimes: Chimes = field(default_factory=Chimes)
    loudness_cache: Path | None = None
    loudness: bool = True
    failover: bool = True
    opener: EngineOpener = open_engine


class HouseConsole:
    def __init__(self, config: HouseConfig) -> None:
        self.config = config
        self.listener = HeadlessListener()
        self.hub = EngineHub(self.listener.engine_status, config.opener)
        self.audio_player = None
        self.player: ShapedPlayer | None = None
        if config.audio:
            from voicedesk.app.player import AudioPlayer

            if config.media_role:
                mark_announcement_role(role=config.media_role)
            # Its onsets reach the controller as in the window: they time each sentence at the DAC and let the
            # controller forget the sentences it was waiting to hear (without them it kept every announcement).
            self.audio_player = AudioPlayer(
                device=config.output_device, on_event=self._player_event, loop=asyncio.get_running_loop()
            )
            self.player = ShapedPlayer(self.audio_player)
        self.controller = SpeechController(self.hub, self.listener, self.player)
        self.controller.voice = config.voice
        self.controller.failover_enabled = config.failover
        loudness = LoudnessCache(config.loudness_cache) if config.loudness and config.audio else None
        self.runner = HouseRunner(
            self.controller,
            HouseQueue(config.policy),
            config.chimes,
            self.player,
            loudness,
            reopen_player=self._reopen_player,
        )
        self.listener.runner = self.runner
        self.mqtt: MqttBridge | None = None
        self.http = None
        self._health: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self.audio_player is not None:
            try:
                self.audio_player.open()
            except VoicedeskError as exc:
                self.runner.device_error = str(exc)
                log.error("%s (tried again before each announcement)", exc)
        with contextlib.suppress(VoicedeskError):  # the hub reports why; announcements retry
            await self.controller.use_engine(self.config.engine)
        self.runner.start()
        if self.config.mqtt is not None:
            self.mqtt = MqttBridge(self.runner, self.config.mqtt, _version())
            self.mqtt.start()
        if self.config.http_port is not None:
            from voicedesk.app.house.http import serve_announce

            self.http = await serve_announce(
                self.runner, self.config.http_host, self.config.http_port, self.config.http_token
            )
        self._health = asyncio.ensure_future(self._check_engine())

    async def aclose(self) -> None:
        if self._health is not None:
            self._health.cancel()
        if self.http is not None:
            self.http.should_exit = True
            with contextlib.suppress(Exception):
                await self.http.task
        if self.mqtt is not None:
            await self.mqtt.aclose()
        await self.runner.aclose()
        if self.audio_player is not None:
            self.audio_player.close()

    def _player_event(self, event: PlayerEvent) -> None:
        self.controller.on_player_event(event)

    def _reopen_player(self) -> None:
        if self.audio_player is not None:
            self.audio_player.close()
            self.audio_player.open()

    async def _check_engine(self) -> None:
        """A remote engine that went down is connected again between announcements (the controller falls back
        to the local engine meanwhile, when failover is on)."""
        while True:
            await asyncio.sleep(HEALTH_EVERY_S)
            if self.hub.spec.kind != "local" and not self.controller.connected and self.controller.run is None:
                if await self.controller.reconnect():
                    log.warning("the %s engine is back", self.hub.spec.kind)
                self.runner.publish_state()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("voicedesk")
    except PackageNotFoundError:
        return "dev"
