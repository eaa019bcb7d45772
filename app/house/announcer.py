"""A console without a window (``voicedesk announcer``): the engine hub, speech controller, player and console runner
with the house's inputs, put together from one ``AnnouncerConfig`` (the command and the tests build it the same way).

Start-up order: the options were checked by the command; the HTTP endpoint and MQTT (with discovery) come up first,
then the model loads while announcements are already taken (said once it is ready, within their TTL).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from voicedesk.app.console.core import ConsoleCore, Item
from voicedesk.app.console.runner import ConsoleRunner
from voicedesk.app.controller import SpeechController
from voicedesk.app.conversation import Turn
from voicedesk.app.engines import EngineHub, EngineOpener, EngineStatus
from voicedesk.app.house.inputs import HouseInputs, HouseLink, loudness_cache
from voicedesk.app.house.shaped_player import mark_announcement_role
from voicedesk.app.notices import Topic
from voicedesk.app.settings import load_app_lexicon
from voicedesk.engine.engine_spec import EngineSpec
from voicedesk.engine.errors import VoicedeskError
from voicedesk.engine.events import SessionConfig
from voicedesk.engine.factory import open_engine

if TYPE_CHECKING:
    from voicedesk.app.house.listening import ListenConfig
    from voicedesk.app.player import PlayerEvent

log = logging.getLogger(__name__)

HEALTH_EVERY_S = 15.0
"""How often a remote engine that went down is tried again (between announcements)."""


@dataclass
class AnnouncerConfig:
    house: HouseInputs = field(default_factory=HouseInputs)
    engine: EngineSpec = field(default_factory=lambda: EngineSpec("local"))
    voice: SessionConfig = field(default_factory=SessionConfig)
    audio: bool = True
    """False: no sound device (the announcements are synthesized and accounted for, not played)."""
    output_device: str | None = None
    media_role: str | None = "announcement"
    loudness_cache: Path | None = None
    lexicon_file: Path | None = None
    """The pronunciations every announcement uses (the window's file by default), read again when it changes."""
    failover: bool = True
    opener: EngineOpener = open_engine
    listen: ListenConfig | None = None
    """The microphone, with push-to-talk from the house and a wake word (``app.house.listening``)."""


class HeadlessListener:
    """The controller's listener without a window: notices go to the log, engine changes to the state."""

    def __init__(self) -> None:
        self.runner: ConsoleRunner | None = None

    def turn_changed(self, turn: Turn) -> None:
        pass

    def turn_ended(self, turn: Turn) -> None:
        pass

    def timeline_changed(self, turn: Turn, timeline: object) -> None:
        pass

    def engine_status(self, status: EngineStatus) -> None:
        log.info("engine %s: %s %s", status.kind, status.title, status.message)
        if self.runner is not None:
            self.runner.publish_state()

    def notice(self, text: str, level: str, topic: Topic = Topic.GENERAL) -> None:
        log.log(logging.ERROR if level == "error" else logging.WARNING if level == "warning" else logging.INFO, text)


class Announcer:
    def __init__(self, config: AnnouncerConfig) -> None:
        self.config = config
        self.listener = HeadlessListener()
        self.hub = EngineHub(self.listener.engine_status, config.opener)
        self.audio_player = None
        if config.audio:
            from voicedesk.app.player import AudioPlayer

            if config.media_role:
                mark_announcement_role(role=config.media_role)
            # Its onsets reach the controller as in the window: they time each sentence at the DAC and let the
            # controller forget the sentences it was waiting to hear (without them it kept every announcement).
            self.audio_player = AudioPlayer(
                device=config.output_device, on_event=self._player_event, loop=asyncio.get_running_loop()
            )
        self.controller = SpeechController(self.hub, self.listener, self.audio_player)
        self.controller.voice = config.voice
        self.controller.failover_enabled = config.failover
        house = config.house
        loudness = loudness_cache(house, config.loudness_cache) if config.audio else None
        core = ConsoleCore(house.policy)
        self.runner = ConsoleRunner(self.controller, core, house.chimes, loudness, before=self._before)
        self.listener.runner = self.runner
        self.ears = None
        if config.listen is not None:
            from voicedesk.app.house.listening import HouseEars

            self.ears = HouseEars(
                self.runner, config.listen, self.audio_player, self._publish_heard, config.voice.voice
            )
        self.link = HouseLink(self.runner, house, self.ears.listen if self.ears is not None else None)
        self._health: asyncio.Task[None] | None = None
        self._lexicon_read: float | None = None
        self._read_lexicon()

    @property
    def mqtt(self):
        return self.link.mqtt

    @property
    def http(self):
        return self.link.http

    async def start(self) -> None:
        if self.audio_player is not None:
            try:
                self.audio_player.open()
            except VoicedeskError as exc:
                self.runner.device_error = str(exc)
                log.error("%s (tried again before each announcement)", exc)
        self.runner.start()
        await self.link.start()
        if self.ears is not None:
            self.ears.start()
        with contextlib.suppress(VoicedeskError):  # the hub reports why; announcements retry
            await self.controller.use_engine(self.config.engine)
        self._health = asyncio.ensure_future(self._check_engine())

    async def aclose(self) -> None:
        if self._health is not None:
            self._health.cancel()
        if self.ears is not None:
            await self.ears.aclose()
        await self.link.aclose()
        await self.runner.aclose()
        await self.controller.aclose()
        if self.audio_player is not None:
            self.audio_player.close()

    def _publish_heard(self, heard: dict[str, object]) -> None:
        if self.mqtt is not None:
            self.mqtt.publish_heard(heard)

    def _player_event(self, event: PlayerEvent) -> None:
        self.controller.on_player_event(event)

    def _read_lexicon(self) -> None:
        """The lexicon file, when it changed (the window's Pronunciations dialog may edit it at any time)."""
        path = self.config.lexicon_file
        changed = path.stat().st_mtime if path is not None and path.exists() else None
        if path is None or changed == self._lexicon_read:
            return
        self._lexicon_read = changed
        loaded = load_app_lexicon(path)
        if loaded.message:
            log.warning("%s", loaded.message)
        voice = self.controller.voice
        self.controller.voice = replace(voice, text=replace(voice.text, lexicon=loaded.lexicon))

    async def _before(self, item: Item) -> None:
        """The lexicon read again if it changed; a sound device that went away opened again."""
        self._read_lexicon()
        if self.audio_player is None or not self.runner.device_error:
            return
        from voicedesk.app.player import AudioDeviceError

        try:
            self.audio_player.close()
            self.audio_player.open()
        except VoicedeskError as exc:
            self.runner.device_error = str(exc)
            raise AudioDeviceError(f"no sound device: {exc}") from None
        self.runner.device_error = ""
        log.warning("the sound device is back")

    async def _check_engine(self) -> None:
        """A remote engine that went down is connected again between announcements (the controller falls back
        to the local engine meanwhile, when failover is on)."""
        while True:
            await asyncio.sleep(HEALTH_EVERY_S)
            if self.hub.spec.kind != "local" and not self.controller.connected and self.controller.run is None:
                if await self.controller.reconnect():
                    log.warning("the %s engine is back", self.hub.spec.kind)
                self.runner.publish_state()
