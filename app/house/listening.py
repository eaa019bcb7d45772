"""``voicedesk announcer --listen``: the headless console hears the house. A wall button (MQTT ``<base>/listen``,
HTTP ``POST /listen``) or a wake word opens a turn; what is heard goes to the agent (Home Assistant's conversation
API) and its answer is said, or, with no agent, out on MQTT (``<base>/heard``) for the house to act on.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

import numpy as np

from voicedesk.app.console.announcement import Request, Source
from voicedesk.app.console.runner import ConsoleRunner
from voicedesk.app.conversation import TurnKind
from voicedesk.app.sources import ChatMessage, TextSource
from voicedesk.app.voice.stt import Transcriber
from voicedesk.app.voice.voice_input import (
    MICROPHONE_RETRY_S,
    Heard,
    Listening,
    NotHeard,
    VoiceInput,
    VoiceProblem,
    VoiceSettings,
)
from voicedesk.engine.tasks import cancel_and_wait

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ListenConfig:
    voice: VoiceSettings
    agent: TextSource | None = None
    """Asked what was heard (its answer is said); None: the transcript goes out on MQTT only."""
    wake_word: str | None = None
    """A model in pymicro-wakeword's wheel (``app.voice.wake_word``); None: push-to-talk from the house only."""
    transcriber: Transcriber | None = None
    """One already loaded (the bench, tests); None: opened from ``voice``."""


class HouseEars:
    def __init__(
        self,
        runner: ConsoleRunner,
        config: ListenConfig,
        player: object | None,
        publish: Callable[[dict[str, object]], None],
        voice: str = "",
    ) -> None:
        self.runner = runner
        self.config = config
        self.publish = publish
        """What was heard, for the house (MQTT ``<base>/heard``)."""
        self.input = VoiceInput(config.voice, self._event, self._interrupt, voice, config.transcriber)
        self.input.turns.config = replace(self.input.turns.config, press_until_silence=True)  # nobody holds a key
        if player is not None:
            self.input.attach(player)
        self.wake = None
        if config.wake_word:
            from voicedesk.app.voice.wake_word import WakeWord

            self.wake = WakeWord(config.wake_word)
        self.wakes = 0
        self._closed = ""
        self._told = ""  # the problem that ended listening, logged once while retries fail the same way
        self.last_heard: Heard | None = None
        """With its times (``voicedesk bench voice`` reads them)."""
        self._task: asyncio.Task[None] | None = None
        self._background: set[asyncio.Future[object]] = set()

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while True:  # a microphone missing or lost (told as a VoiceProblem) is tried again
            await self.input.run()
            await asyncio.sleep(MICROPHONE_RETRY_S)

    async def aclose(self) -> None:
        await cancel_and_wait(self._task)

    def listen(self, start: bool) -> str:
        """Push-to-talk from the house: start opens a turn (it ends at the silence after speech), stop ends it.
        Returns why it cannot ("": done)."""
        if not self.input.listening:
            closed = self._closed or "starting"
            return f"the microphone is not open ({closed}); it is tried again every {MICROPHONE_RETRY_S:g} s"
        if start:
            self._spawn(self.runner.listen())  # what plays is cut, nothing starts until it is heard
            self.input.press()
        else:
            self.input.release()
        return ""

    async def _interrupt(self) -> None:
        await self.runner.listen()

    def _event(self, event: object) -> None:
        if isinstance(event, Listening):
            level = logging.DEBUG if not event.open and event.reason == self._told else logging.WARNING
            log.log(
                level,
                "listening: microphone %s%s",
                "open" if event.open else "closed",
                f" ({event.reason})" * bool(event.reason),
            )
            self._closed = "" if event.open else event.reason
            if event.open:
                self._told = ""
            if event.open and self.wake is not None and self.input.listener is not None:
                self.input.listener.taps.append(self._hear_wake_word)
        elif isinstance(event, Heard):
            self.last_heard = event
            self._heard(event.text.strip())
        elif isinstance(event, NotHeard):
            log.info("heard nothing (%s)", event.reason)
            self.runner.not_heard()
        elif isinstance(event, VoiceProblem):
            if event.message == self._told:  # a retry failed as the last did: the log is not told every 10 s
                log.debug("listening, still: %s", event.message)
            else:
                log.error("listening: %s", event.message)
            if not event.listening:  # otherwise only what was said is lost, and its NotHeard tells the runner
                self.runner.not_heard()
                self._told = event.message

    def _hear_wake_word(self, block: np.ndarray) -> None:
        if self.wake is not None and self.wake.feed(block):
            self.wakes += 1
            log.info("wake word %r heard", self.wake.phrase)
            asyncio.get_running_loop().call_soon(self.listen, True)  # not inside the listener's own step

    def _heard(self, text: str) -> None:
        agent = self.config.agent
        self.publish({"text": text, "at": time.time(), "agent": agent.name if agent is not None else None})
        if not text or agent is None:
            log.info("heard %r", text)
            self.runner.not_heard()
            return
        log.info("heard %r: asking %s", text, agent.name)
        reply = lambda: agent.reply([ChatMessage("user", text)])  # noqa: E731 - asked when its turn starts
        self.runner.heard(Request(text, kind=TurnKind.AGENT, source=Source.VOICE, origin="Heard", fragments=reply))

    def _spawn(self, awaitable: Awaitable[object]) -> None:
        task = asyncio.ensure_future(awaitable)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
