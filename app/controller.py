"""The app's conductor: turns text into speech through the selected engine and the player, with no Qt in sight.

One ``speak`` is one turn; ``stop`` fades out, cancels and marks the cut. If a remote engine dies mid-reply and failover
is on, the reply continues on the local engine (``app.failover``). The window listens through ``ControllerListener``."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Protocol

from voicedesk.app.conversation import CutMark, Turn, TurnKind, TurnState
from voicedesk.app.engines import DOWN_STATES, KIND_LABELS, EngineHub, EngineStatus
from voicedesk.app.failover import engine_failure, plan_failover
from voicedesk.app.link import SessionLink
from voicedesk.app.messages import error_text, failover_text
from voicedesk.app.notices import Topic
from voicedesk.app.playback_buffer import PlaybackBuffer
from voicedesk.app.player import wait_for_room
from voicedesk.app.prepared_turn import PreparedTurn
from voicedesk.app.sources import ChatMessage
from voicedesk.app.turn_run import TurnRun
from voicedesk.engine.api import Engine
from voicedesk.engine.audio import pcm16_to_wav
from voicedesk.engine.errors import ConnectionFailed, ErrorCode, VoicedeskError
from voicedesk.engine.events import (
    SAMPLE_RATE,
    Audio,
    Cancelled,
    Closed,
    Error,
    Event,
    Flushed,
    SentenceFinished,
    SentenceStarted,
    SessionConfig,
)
from voicedesk.engine.measure.recorder import UtteranceRecorder
from voicedesk.engine.measure.timeline import UtteranceTimeline
from voicedesk.engine.text.frontend.settings import DEFAULT_TEXT_SETTINGS

log = logging.getLogger(__name__)


KIND_OF_LABEL = {label: kind for kind, label in KIND_LABELS.items()}


class ControllerListener(Protocol):
    def turn_changed(self, turn: Turn) -> None: ...
    def turn_ended(self, turn: Turn) -> None:
        """Once per turn, when it is done, cut or failed."""

    def timeline_changed(self, turn: Turn, timeline: UtteranceTimeline) -> None: ...
    def engine_status(self, status: EngineStatus) -> None: ...
    def notice(self, text: str, level: str, topic: Topic = Topic.GENERAL) -> None:
        """A status-bar message; level is 'info', 'warning' or 'error'; topic: what it is about
        (``app.notices``: the message goes when that changes)."""


class PlayerLike(Protocol):
    """What the controller needs of ``app.player.AudioPlayer``."""

    buffer: PlaybackBuffer

    def begin_utterance(self) -> None: ...
    def push(self, pcm16: bytes, seq: int | None = None) -> None: ...
    def end_utterance(self) -> None: ...
    def interrupt(self, fade_s: float = 0.03) -> float: ...
    @property
    def position_s(self) -> float: ...
    @property
    def output_latency_s(self) -> float: ...
    async def wait_finished(self) -> None: ...


TURNS_KEPT = 100
"""The newest turns the controller remembers (retries, the window's lookups); an always-on console speaks for
weeks, so older ones go (the history file keeps what was said)."""


class SpeechController:
    def __init__(
        self,
        hub: EngineHub,
        listener: ControllerListener,
        player: PlayerLike | None = None,
        clock: Callable[[], float] = time.monotonic,
        turns_kept: int = TURNS_KEPT,
    ) -> None:
        self.hub = hub
        self.listener = listener
        self.player = player
        self.clock = clock
        self.voice = SessionConfig()
        """The voice for turns that do not bring their own."""
        self._turn_voice = self.voice
        self.failover_enabled = True
        self.refusal = ""
        """Why the last ``speak`` that returned None could not start (its notice's text)."""
        self.history: list[ChatMessage] = []
        self.turns: deque[Turn] = deque(maxlen=turns_kept)
        self.run: TurnRun | None = None
        self.last_run: TurnRun | None = None
        self._link: SessionLink | None = None
        self._turn_ids = itertools.count(1)
        self._player_seqs = itertools.count()
        self._player_map: dict[int, tuple[TurnRun, int]] = {}
        self._speak_lock = asyncio.Lock()
        self._engine_lock = asyncio.Lock()
        """One engine change at a time: Connect and the health check's reconnect must not open two sessions."""
        self._background: set[asyncio.Future[object]] = set()
        self._ended: dict[int, asyncio.Future[None]] = {}
        self._synthesized: dict[int, asyncio.Event] = {}

    # ---- speaking ---------------------------------------------------------------------------------

    async def speak(
        self,
        kind: TurnKind,
        prompt: str,
        fragments: AsyncIterator[str],
        voice: SessionConfig | None = None,
        prepared: PreparedTurn | None = None,
    ) -> Turn | None:
        """Starts a turn (stopping the one playing); returns it, or None when no engine could take it.

        ``voice``: this turn's voice and speed (a saved phrase's), else ``self.voice``. ``prepared``: the same
        text already synthesized ahead (``prepare``): its audio plays at once; it is discarded instead when it no
        longer fits (another engine or voice, its session gone). Queueing is the console's job
        (``app.console``): the controller says one thing at a time."""
        async with self._speak_lock:  # two quick clicks must not feed one session two texts at once
            await self.stop(quiet=True)
            voice = self._voice_for(voice)
            if prepared is not None and not await self._fits(prepared, voice):
                await prepared.discard()
                prepared = None
            if prepared is not None:
                link = prepared.link
            else:
                try:
                    async with self._engine_lock:  # not while Connect or a reconnect is opening a session
                        link = await self._usable_link()
                except VoicedeskError as exc:
                    self.refusal = error_text(exc, self.hub.spec.kind)
                    self.listener.notice(self.refusal, "error", Topic.ENGINE)
                    return None
            self._turn_voice = voice
            turn = Turn(prepared.turn_id if prepared is not None else next(self._turn_ids), kind, prompt, link.label)
            if prepared is None:
                link.new_turn()
            # The timeline's pacing model plays the reply the way this player will (same prebuffer).
            prebuffer = self.player.buffer.prebuffer / SAMPLE_RATE if self.player is not None else 0.0
            run = TurnRun(turn, UtteranceRecorder(f"turn {turn.id}", prebuffer), link, f"turn-{turn.id}")
            self.run = self.last_run = run
            self.turns.append(turn)
            self._ended[turn.id] = asyncio.get_event_loop().create_future()
            if kind is TurnKind.AGENT:
                self.history.append(ChatMessage("user", prompt))
            self._synthesized[turn.id] = asyncio.Event()
            if self.player is not None:
                self.player.begin_utterance()
            if prepared is not None:
                # Recorded as sent now, when the turn starts: its latency is what the listener waits from here
                # (the time it waited in the queue is not the engine's).
                now = self.clock()
                link.record_sent(link.record_fragment(prepared.text, now), now)
                link.flush_sent = True
                link.record_sent(link.record_flush(now), now)
                run.text_done = True
                prepared.attach(self._on_event, self._player_room)  # what was synthesized ahead plays now
                with contextlib.suppress(Exception):
                    await fragments.aclose()  # type: ignore[attr-defined]  # its text was sent ahead
            else:
                await self._configure(link)
                run.feeder = asyncio.ensure_future(self._feed(run, fragments))
            self._changed(run)
            return turn

    async def prepare(self, key: object, text: str, voice: SessionConfig | None = None) -> PreparedTurn | None:
        """Synthesizes ``text`` ahead on its own session of the selected engine, while something else plays;
        ``speak(..., prepared=...)`` plays it later. None when the engine cannot take it now (it is then said
        the ordinary way, when its turn comes)."""
        voice = self._voice_for(voice)
        try:
            engine = await self.hub.engine()
            link = SessionLink(engine, KIND_LABELS[self.hub.spec.kind])
            link.session = await engine.open_session(voice)
        except VoicedeskError as exc:
            log.info("could not prepare the next announcement: %s", exc)
            return None
        prepared = PreparedTurn(key, text, voice, engine, link, next(self._turn_ids))
        link.new_turn()
        link.start_pump(prepared.deliver, prepared.room)
        try:
            await link.session.configure(voice=voice.voice, speed=voice.speed, text=voice.text)
            await link.session.send_text(text)
            await link.session.flush(prepared.flush_id)
        except VoicedeskError as exc:
            log.info("could not prepare the next announcement: %s", exc)
            await prepared.discard()
            return None
        link.ready.set()
        return prepared

    async def wait_synthesized(self, turn: Turn) -> None:
        """Returns once all of ``turn``'s audio has come from the engine (it may still be playing), or it ended."""
        synthesized = self._synthesized.get(turn.id)
        if synthesized is not None:
            await synthesized.wait()

    def _voice_for(self, voice: SessionConfig | None) -> SessionConfig:
        if voice is None:
            return self.voice
        if voice.text == DEFAULT_TEXT_SETTINGS:
            return replace(voice, text=self.voice.text)  # a saved phrase's voice still reads text as the window
        return voice

    async def _fits(self, prepared: PreparedTurn, voice: SessionConfig) -> bool:
        if not prepared.usable or prepared.voice != voice:
            return False
        try:
            return await self.hub.engine() is prepared.engine
        except VoicedeskError:
            return False

    async def wait_turn(self, turn: Turn) -> None:
        """Returns once ``turn`` is done, cut or failed."""
        ended = self._ended.get(turn.id)
        if ended is not None:
            await asyncio.shield(ended)

    async def stop(self, quiet: bool = False) -> CutMark | None:
        """Barge-in: fade out within 30 ms, cancel the session, mark what was heard. No-op when silent.

        ``quiet``: no "Stopped" message (a new turn replacing this one says what happens instead)."""
        run = self.run
        if run is None or not run.turn.active:
            return None
        heard = self.player.interrupt(0.03) if self.player is not None else 0.0
        link = run.link
        link.discarding = True  # before any await: nothing queued behind this point may reach the player
        cut = run.turn.mark_cut(heard)
        self._end_run(run)
        if run.feeder is not None:
            run.feeder.cancel()
        if link.usable:
            try:
                await link.session.cancel()
            except VoicedeskError as exc:
                log.info("cancel on %s failed: %s", link.label, exc)
        if not quiet:
            heard = f"heard up to “{cut.quote}”" if cut.quote else "before any word was heard"
            self.listener.notice(f"Stopped — {heard}.", "info", Topic.TURN)
        return cut

    def heard_position(self) -> float | None:
        """Seconds of the current turn's audio that have reached the listener (for word highlighting)."""
        if self.run is None or self.player is None:
            return None
        return max(self.player.position_s - self.player.output_latency_s, 0.0)

    def reply_wav(self, run: TurnRun | None = None) -> bytes | None:
        """The last reply's audio as a WAV file (works with no audio device)."""
        run = run or self.last_run
        return pcm16_to_wav(b"".join(run.pcm)) if run is not None and run.pcm else None

    async def use_engine(self, spec, blocked: str | None = None) -> Engine | None:
        """Switches engines, or (the same engine) connects again at once: Connect always tries.

        The next reply goes to ``spec``; what is being said is stopped first."""
        async with self._engine_lock:
            return await self._use_engine(spec, blocked)

    async def _use_engine(self, spec, blocked: str | None) -> Engine | None:
        await self.stop()
        if self._link is not None and (spec != self.hub.spec or spec.kind != "local"):
            # Another engine, or Connect on a remote one: a fresh connection, even if the old one looks alive.
            await self._link.shut()
            self._link = None
        if spec == self.hub.spec and spec.kind != "local" and self.hub.status.state in DOWN_STATES:
            await self.hub.forget_remote()  # a client that failed once may hold a broken transport
        engine = await self.hub.select(spec, blocked)
        if engine is not None and self._link is None:
            with contextlib.suppress(VoicedeskError):
                await self._usable_link(fallback=False)  # connect now, so the status shows the connection
        if spec.kind != "local" and self.failover_enabled and not self.hub.local_loaded:
            self._spawn(self._preload_local())
        return engine

    async def reconnect(self) -> bool:
        """Opens the selected remote engine's session again if it is down (the health check's reconnect);
        never interrupts a reply. Returns True when connected."""
        async with self._engine_lock:
            return await self._reconnect()

    async def _reconnect(self) -> bool:
        if self.run is not None or self.hub.spec.kind == "local":
            return self._link is not None and self._link.usable
        if self._link is not None and self._link.usable:
            return True
        if self._link is not None:
            await self._link.shut()
            self._link = None
        await self.hub.forget_remote()
        try:
            await self._usable_link(fallback=False)
        except VoicedeskError:
            return False
        return True

    @property
    def connected(self) -> bool:
        """The selected engine has a live session (remote: an open connection)."""
        return self._link is not None and self._link.usable

    def new_conversation(self) -> None:
        """The agent forgets what was said so far (its next question starts afresh)."""
        self.history.clear()

    async def _preload_local(self) -> None:
        """Loads the local model in the background, so a failover does not wait for it (if it is here)."""
        with contextlib.suppress(VoicedeskError):
            await self.hub.local(report=False)

    async def aclose(self) -> None:
        await self.stop()
        if self._link is not None:
            await self._link.shut()
        await self.hub.aclose()

    # ---- the turn's text --------------------------------------------------------------------------

    async def _feed(self, run: TurnRun, fragments: AsyncIterator[str]) -> None:
        source_error = None
        try:
            async for fragment in fragments:
                if not fragment:
                    continue
                now = self.clock()
                link = run.link  # read and recorded without an await between: failover sees it or resends it
                released = link.record_fragment(fragment, now)
                self._show_pending(run)
                await link.ready.wait()
                if link.usable:
                    await link.session.send_text(fragment)
                    link.record_sent(released, self.clock())
        except VoicedeskError as exc:
            source_error = error_text(exc)
        except Exception as exc:
            log.exception("the text source failed")
            source_error = f"The text source failed: {exc!r}"
        finally:
            aclose = getattr(fragments, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()  # stops an LLM stream at its source
        if source_error is not None:
            source_error = error_text(source_error)
            if not run.link.ledger.text.strip() and not run.turn.sentences:
                self._fail_turn(run, source_error, Topic.AGENT)
                return
            run.turn.error = source_error  # speak what arrived, and say why the rest is missing
            self.listener.notice(source_error, "error", Topic.AGENT)
        run.text_done = True
        await self._send_flush(run, run.link)

    async def _send_flush(self, run: TurnRun, link: SessionLink) -> None:
        await link.ready.wait()
        if run.link is not link or link.flush_sent or not run.turn.active:
            return
        link.flush_sent = True
        released = link.record_flush(self.clock())
        if link.usable:
            await link.session.flush(run.flush_id)
            link.record_sent(released, self.clock())

    def _show_pending(self, run: TurnRun) -> None:
        run.turn.pending = run.link.ledger.unclaimed
        self._changed(run)

    # ---- engine events ----------------------------------------------------------------------------

    async def _player_room(self) -> None:
        if self.player is not None:
            await wait_for_room(self.player.buffer)

    def _on_event(self, link: SessionLink, event: Event | BaseException) -> None:
        if isinstance(event, BaseException):
            self._link_failed(link, str(event) or type(event).__name__)
            return
        if link.is_stale(event):
            return
        run = self.run if self.run is not None and self.run.link is link else None
        now = self.clock()
        match event:
            case SentenceStarted(seq, text) if run is not None:
                run.sentence_started(seq, text, count_underruns=self.player is not None)
                self._changed(run)
            case Audio(seq, pcm) if run is not None:
                self._audio(run, seq, pcm, now)
            case SentenceFinished(seq, duration_s, words, synthesis_s) if run is not None:
                if run.sentence_finished(seq, duration_s, words, synthesis_s):
                    self._changed(run)
            # A cancelled flush the turn did not ask for: a server winding down dropped the rest of the reply. It is
            # not the reply's end: the server's Closed follows, and the rest is said locally (or the turn fails).
            case Flushed(_last, request_id, False) if run is not None and request_id == run.flush_id:
                self._synthesized_now(run)
                run.finisher = asyncio.ensure_future(self._play_out(run))
                run.turn.pending = ""
                self._changed(run)
            case Cancelled():
                link.on_cancelled(event)
            case Error(code, message, seq, _rid, False) if engine_failure(event, link.closing) is None:
                self._engine_error(run, link, code, message, seq)
            case Closed() | Error():
                reason = engine_failure(event, link.closing)
                if reason is not None:
                    self._link_failed(link, reason)

    def _audio(self, run: TurnRun, seq: int, pcm: bytes, now: float) -> None:
        placed = run.audio(seq, pcm, now)
        if placed is None:
            log.warning("audio for sentence %d that was never started; dropped", seq)
            return
        index, first = placed
        if self.player is not None:
            player_seq = next(self._player_seqs) if first else None
            if player_seq is not None:
                self._player_map[player_seq] = (run, index)
            self.player.push(pcm, player_seq)
        self._changed(run)

    def _engine_error(self, run: TurnRun | None, link: SessionLink, code: str, message: str, seq: int | None) -> None:
        text = error_text(Error(code, message), KIND_OF_LABEL.get(link.label))
        if run is not None and seq is not None and run.sentence_failed(seq, text):
            self._changed(run)
        elif run is not None and code == ErrorCode.UNKNOWN_VOICE and text not in run.turn.notes:
            run.turn.notes.append(text)  # the bubble says which voice it was not said in
            self._changed(run)
        topic = Topic.VOICE if code == ErrorCode.UNKNOWN_VOICE else Topic.ENGINE
        self.listener.notice(text, "warning" if code != ErrorCode.INTERNAL else "error", topic)

    # ---- player events (delivered on the loop by AudioPlayer) --------------------------------------

    @property
    def onsets_awaited(self) -> int:
        """Sentences handed to the player whose first sample has not been heard yet."""
        return len(self._player_map)

    def on_player_event(self, event) -> None:
        if event.kind == "onset" and event.seq in self._player_map:
            run, index = self._player_map.pop(event.seq)
            # The player plays in order: an earlier sentence with no onset by now was cut or dropped, never heard.
            for unheard in [seq for seq in self._player_map if seq < event.seq]:
                del self._player_map[unheard]
            run.dac(index, event.monotonic)
            self._changed(run)
        elif event.kind == "underrun" and self.run is not None:
            self.run.underrun(event.monotonic)
            self._changed(self.run)
        elif event.kind == "stall_end" and self.run is not None:
            self.run.stall_ended(event.duration_s)
            self._changed(self.run)

    # ---- ending a turn ----------------------------------------------------------------------------

    async def _play_out(self, run: TurnRun) -> None:
        if self.player is not None:
            self.player.end_utterance()
            await self.player.wait_finished()
            # Played out: an onset still awaited will never come (a player that reports none, a sentence dropped).
            for seq in [seq for seq, (mapped, _) in self._player_map.items() if mapped is run]:
                del self._player_map[seq]
        if run.turn.active:
            run.turn.state = TurnState.DONE
            self._end_run(run)

    def _fail_turn(self, run: TurnRun, message: str, topic: Topic = Topic.TURN) -> None:
        if not run.turn.active:
            return
        run.turn.error = message
        run.turn.state = TurnState.FAILED
        if self.player is not None:
            self.player.end_utterance()  # what was delivered still plays
        self.listener.notice(message, "error", topic)
        self._end_run(run)

    def _end_run(self, run: TurnRun) -> None:
        if run.turn.kind is TurnKind.AGENT:
            heard = run.turn.cut.heard_text if run.turn.cut is not None else run.turn.text
            if heard:
                self.history.append(ChatMessage("assistant", heard))
            else:
                self.history.pop()  # nothing was said: the question goes unanswered, not half-recorded
        run.measure_seams()
        if self.run is run:
            self.run = None
        if run.link is not self._link:  # a failover's local session: it served this turn only
            self._spawn(run.link.shut())
        self._changed(run)
        self.listener.turn_ended(run.turn)
        self._synthesized_now(run)
        ended = self._ended.pop(run.turn.id, None)
        if ended is not None and not ended.done():
            ended.set_result(None)

    def _synthesized_now(self, run: TurnRun) -> None:
        synthesized = self._synthesized.pop(run.turn.id, None)
        if synthesized is not None:
            synthesized.set()

    def _spawn(self, awaitable) -> None:
        task = asyncio.ensure_future(awaitable)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _changed(self, run: TurnRun) -> None:
        run.rebuild()
        self.listener.turn_changed(run.turn)
        self.listener.timeline_changed(run.turn, run.timeline)

    # ---- links and failover -----------------------------------------------------------------------

    async def _usable_link(self, fallback: bool = True) -> SessionLink:
        """The session replies go to, (re)connecting; ``fallback``: the local engine stands in for a remote one
        that cannot be reached (when speaking; a Connect click should just show the error)."""
        if self._link is not None and self._link.usable:
            return self._link
        if self._link is not None:
            await self._link.shut()
            self._link = None
        try:
            engine = await self.hub.engine()
            link = await self._open_link(engine, KIND_LABELS[self.hub.spec.kind])
        except VoicedeskError as exc:
            if self.hub.spec.kind == "local" or not self.failover_enabled or not fallback:
                raise
            link = await self._local_fallback_link(error_text(exc, self.hub.spec.kind))
        self._link = link
        return link

    async def _open_link(self, engine: Engine, label: str) -> SessionLink:
        link = SessionLink(engine, label)
        link.session = await self.hub.open_session(engine, self.voice)
        link.start_pump(self._on_event, self._player_room)
        link.ready.set()
        return link

    async def _local_fallback_link(self, why: str) -> SessionLink:
        try:
            engine = await self.hub.local(report=False)
        except VoicedeskError:
            raise ConnectionFailed(why) from None
        self.listener.notice(f"{why.rstrip('.')} — speaking on the local engine instead.", "warning", Topic.ENGINE)
        return await self._open_link(engine, "Local")

    async def _configure(self, link: SessionLink) -> None:
        if link.usable:
            turn = self._turn_voice
            await link.session.configure(voice=turn.voice, speed=turn.speed, text=turn.text)

    def _link_failed(self, link: SessionLink, reason: str) -> None:
        if link.dead:
            return
        link.dead = True
        self.hub.session_lost(link.engine, reason)
        run = self.run
        if run is None or run.link is not link or not run.turn.active:
            return
        if link.label == "Local" or not self.failover_enabled:
            # About the engine, not the turn: the line goes once the engine is back (the bubble keeps it).
            self._fail_turn(
                run, f"The {link.label} engine failed mid-reply: {error_text(reason).rstrip('.')}.", Topic.ENGINE
            )
            return
        plan = plan_failover(link.ledger, reason)
        resumed = SessionLink(link.engine, "Local")  # the engine is replaced once the local one is open
        resumed.new_turn()
        origin = link.ledger.time_of_char(link.ledger.delivered_cursor) or self.clock()
        released = resumed.record_fragment(plan.resume_text, origin) if plan.resume_text else 0
        run.link = resumed  # from here on, new fragments go to the replacement
        delivered = sum(1 for s in run.turn.sentences if s.audio_start_s is not None)
        # Sentences the dead engine started but never delivered are said again by the local engine.
        run.turn.sentences = run.turn.sentences[:delivered]
        run.turn.notes.append(f"The {link.label} engine failed; continued on the local engine.")
        self.listener.notice(failover_text(link.label, reason, delivered + 1), "warning", Topic.ENGINE)
        self._spawn(self._resume_locally(run, resumed, plan.resume_text, released))

    async def _resume_locally(self, run: TurnRun, link: SessionLink, text: str, released: int) -> None:
        try:
            engine = await self.hub.local(report=False)
            link.engine = engine
            link.session = await engine.open_session(self._turn_voice)
        except VoicedeskError as exc:
            self._fail_turn(run, f"The remote engine failed and the local engine is not available: {error_text(exc)}")
            return
        link.start_pump(self._on_event, self._player_room)
        if text:
            await link.session.send_text(text)
            link.record_sent(released, self.clock())
        link.ready.set()
        if run.text_done:
            await self._send_flush(run, link)
