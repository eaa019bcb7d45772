"""The window's voice input: the Microphone card, push-to-talk (button, F9 held in the window, the global
shortcut), what is heard shown live and asked as the composer's agent questions are, through the console core
(``listen`` on barge-in, ``heard`` / ``not_heard`` after), and each spoken turn's timeline timed from the end of
speech. The microphone, VAD and STT are ``app.voice.voice_input``'s."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QApplication

from voicedesk.app.console.announcement import Source
from voicedesk.app.conversation import Turn, TurnKind
from voicedesk.app.notices import Topic
from voicedesk.app.voice.stt import Transcriber, stt_language
from voicedesk.app.voice.voice_input import (
    MICROPHONE_RETRY_S,
    Heard,
    HeardTimes,
    Interrupted,
    Listening,
    NotHeard,
    Partial,
    VoiceEvent,
    VoiceInput,
    VoiceProblem,
)
from voicedesk.engine.measure.timeline import UtteranceTimeline, spoken
from voicedesk.engine.tasks import cancel_and_wait

if TYPE_CHECKING:
    from voicedesk.app.console.runner import ConsoleRunner
    from voicedesk.app.controller import SpeechController
    from voicedesk.app.settings import AppSettings
    from voicedesk.app.ui.agent_actions import AgentActions
    from voicedesk.app.ui.conversation_view import ConversationView
    from voicedesk.app.ui.microphone_card import MicrophoneCard
    from voicedesk.app.ui.status_line import StatusLine

TALK_KEY = Qt.Key.Key_F9
METER_MS = 80


class VoiceActions(QObject):
    def __init__(
        self,
        card: MicrophoneCard,
        settings: AppSettings,
        console: ConsoleRunner,
        controller: SpeechController,
        agent: AgentActions,
        conversation: ConversationView,
        status: StatusLine,
    ) -> None:
        super().__init__(card)
        self.card, self.settings, self.console, self.controller = card, settings, console, controller
        self.agent, self.conversation, self.status = agent, conversation, status
        self.voice: VoiceInput | None = None
        self.events: list[VoiceEvent] = []
        """Every event of this session (the tests read them)."""
        self._task: asyncio.Task[None] | None = None
        self._transcriber: tuple[tuple[str, ...], Transcriber] | None = None
        """The STT model loaded last, by what it was made from: a settings change does not load it again."""
        self._attached: object = None
        self._stt_key: tuple[str, ...] = ()
        self._talking = False
        self._ticks = 0
        self._was_connected: bool | None = None
        self._started = 0.0
        self._said = ""
        """The problem that ended listening, as the status line was told of it, until listening works again."""
        self._again_task: asyncio.Future[None] | None = None
        self._spoken: dict[str, HeardTimes] = {}
        self._turn_times: dict[int, HeardTimes] = {}
        self._meter = QTimer(self, interval=METER_MS)
        self._meter.timeout.connect(self._tick)
        card.talk_pressed.connect(self.press)
        card.talk_released.connect(self.release)
        card.refresh.clicked.connect(self.refresh)
        QApplication.instance().installEventFilter(self)

    # ---- starting and stopping ----------------------------------------------------------------------

    def refresh(self) -> None:
        """Lists the microphones again, and tries listening again if a problem ended it."""
        from voicedesk.app.player import AudioDeviceError
        from voicedesk.app.voice.microphone import input_choices

        try:
            choices = input_choices()
        except AudioDeviceError:
            choices = []
        self.card.set_devices(choices, self.settings.voice_input.input_device)
        self._again()

    def _again(self, asked: bool = True) -> bool:
        """Listening ended on a problem (the microphone lost, no model): starts it again; whether it did.
        ``asked``: by the person (the talk button, ↻), who is told of the problem again if it is still there."""
        if self._task is None or not self._task.done() or not self.settings.voice_input.enabled:
            return False
        if self._again_task is None or self._again_task.done():
            self._again_task = asyncio.ensure_future(self.apply(retry=not asked))
        return True

    async def apply(self, retry: bool = False) -> None:
        """(Re)starts listening as the settings say; off: the microphone is closed. ``retry``: by itself, after a
        problem (shown until it is over, and not told again if it is the same)."""
        if not retry:
            self._said = ""
        await self.aclose()
        settings = self.settings.voice_input
        self.card.talk.setEnabled(settings.enabled)
        if not settings.enabled:
            self.card.status.setText("Voice input is off: tick it to talk to the agent.")
            self.status.clear(Topic.MICROPHONE)
            return
        stt = (settings.stt, settings.stt_model, settings.stt_device, settings.stt_compute, settings.wyoming_uri)
        stt += (settings.stt_timeout_s,)
        loaded = self._transcriber[1] if self._transcriber and self._transcriber[0] == stt else None
        if not self._said:  # else a retry by itself: the problem stays shown until it is over
            self.card.status.setText("Opening the microphone…" if loaded else "Loading speech-to-text…")
        voice = VoiceInput(settings, self._on_event, self._interrupt, self.settings.voice.voice, loaded)
        self.voice, self._attached, self._stt_key, self._was_connected = voice, None, stt, None
        self._attach()
        self._started = time.monotonic()
        self._task = asyncio.ensure_future(voice.run())
        self._meter.start()

    def language_changed(self) -> bool:
        """The voice changed the STT language (it follows the voice's unless set): ``apply`` again."""
        voice, settings = self.voice, self.settings
        return voice is not None and voice.language != stt_language(settings.voice.voice, settings.voice_input.language)

    async def aclose(self) -> None:
        self._meter.stop()
        task, self._task = self._task, None
        await cancel_and_wait(task)
        self.voice = None
        self.card.show_listening(False, -120.0)
        if self.console.core.listening:  # cut by a barge-in whose words never came: the console goes on
            self.console.not_heard()

    # ---- push-to-talk -----------------------------------------------------------------------------

    def press(self) -> None:
        if self.voice is None:
            self.status.post("Voice input is off: tick “Voice input” in the Microphone card.", "info", Topic.MICROPHONE)
            return
        self._talking = True
        if not self._again():  # else pressed once the microphone is open
            self.voice.press()

    def release(self) -> None:
        self._talking = False
        if self.voice is not None:
            self.voice.release()

    def toggle(self) -> None:
        """The global shortcut: press to talk, press again to end (a global shortcut sees no key release)."""
        self.release() if self._talking else self.press()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """F9 held while the window has the focus talks (its auto-repeat ignored)."""
        kind = event.type()
        if kind not in (QEvent.Type.KeyPress, QEvent.Type.KeyRelease) or event.key() != TALK_KEY:
            return False
        if not self.card.window().isActiveWindow():
            return False
        if not event.isAutoRepeat() and (kind == QEvent.Type.KeyPress) != self._talking:
            self.press() if kind == QEvent.Type.KeyPress else self.release()
        return True

    # ---- what is heard ----------------------------------------------------------------------------

    async def _interrupt(self) -> object:
        """Barge-in: the window's Stop for the person's voice (the console core's ``listen``); the cut it made."""
        run = self.controller.run
        await self.console.listen()
        return run.turn.cut if run is not None else None

    def _on_event(self, event: VoiceEvent) -> None:
        self.events.append(event)
        match event:
            case Listening(open=True):
                if self.voice is not None and self.voice.listener is not None:  # kept for the next start
                    self._transcriber = (self._stt_key, self.voice.listener.transcriber)
                    self.card.show_listening(True, self.voice.level)
                if not self._said:  # else the problem is over once sound comes (``_tick``): a stalled one opens too
                    self._ready()
                if self._talking and self.voice is not None:
                    self.voice.press()
            case Listening(open=False):
                self.card.show_listening(False, -120.0)  # why: the VoiceProblem before it
            case Partial(text=text):
                self.conversation.show_heard(text, final=False)
            case Heard(text=text, times=times):  # never empty: an empty transcript is NotHeard
                self.conversation.show_heard(text, final=True)
                self._ready()  # heard again: a problem before this is over
                self._spoken[text] = times
                self.console.heard(replace(self.agent.question(text, origin="Spoken"), source=Source.VOICE))
            case NotHeard():  # nothing to ask (a barge-in's words never came, the STT failed): the console goes on
                self.conversation.show_heard("", False)
                self.console.not_heard()
            case Interrupted(cut=cut):
                quote = getattr(cut, "quote", "")
                heard = f"heard up to “{quote}”" if quote else "before any word was heard"
                self.status.post(f"You spoke: the reply stopped, {heard}.", "info", Topic.TURN)
            case VoiceProblem(message=message, listening=still):
                self.card.status.setText(message)
                if message != self._said:  # a retry that failed the same way says nothing new (nor brings back
                    self.status.post(message, "warning", Topic.MICROPHONE)  # a warning the person closed)
                if not still:  # listening ended: it is tried again
                    self._said = message

    def _ready(self) -> None:
        self._said = ""
        hands_free = self.settings.voice_input.mode == "hands_free"
        self.card.status.setText("Listening: just speak." if hands_free else "Ready: hold to talk.")
        self.status.clear(Topic.MICROPHONE)

    def _tick(self) -> None:
        voice = self.voice
        if voice is not None:
            self.card.show_listening(voice.listening, voice.level)
            self._attach()
            self._ticks += 1
            if self._said and voice.listener is not None and voice.listening and voice.listener.now > 0:
                self._ready()  # opened again after a problem, and it delivers
            if self._task is not None and self._task.done() and self._ticks % 25 == 0:  # every ~2 s
                connected = voice.microphone.connected
                if connected and self._was_connected is False:
                    self._again(asked=False)  # plugged back in
                elif (  # nothing says it is back (PortAudio's own hosts, a source that stalled): just try
                    connected is not False
                    and voice.microphone_failed
                    and time.monotonic() - self._started >= MICROPHONE_RETRY_S
                ):
                    self._again(asked=False)
                self._was_connected = connected

    def _attach(self) -> None:
        """The echo reference is what the window's player plays (the house's shaped player wraps it)."""
        player = self.controller.player
        player = getattr(player, "player", player)
        if self.voice is not None and player is not None and player is not self._attached:
            self.voice.attach(player)
            self._attached = player

    # ---- the timeline -----------------------------------------------------------------------------

    def timeline(self, turn: Turn, timeline: UtteranceTimeline) -> UtteranceTimeline:
        """A spoken turn's timeline, from the end of speech (others as they are)."""
        times = self._turn_times.get(turn.id)
        if times is None and turn.kind is TurnKind.AGENT:
            times = self._spoken.pop(turn.prompt, None)
            if times is not None:
                self._turn_times = {turn.id: times}  # only the latest turn's timeline is still being made
        if times is None:
            return timeline
        return spoken(timeline, times.speech_start, times.speech_end, times.final_transcript)
