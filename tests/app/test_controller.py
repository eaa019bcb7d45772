"""The controller without Qt: real local engine (random weights), real sessions, no audio device (player=None),
which is also how the app runs on a machine without a sound card."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.app.helpers import opener_for, until
from voicedesk.app.controller import SpeechController
from voicedesk.app.conversation import TurnKind, TurnState
from voicedesk.app.engines import EngineHub, EngineState
from voicedesk.app.sources import ChatMessage
from voicedesk.app.sources.scripted import ScriptedSource
from voicedesk.engine.engine_spec import EngineSpec
from voicedesk.engine.errors import LocalErrorCode, VoicedeskError
from voicedesk.engine.events import Audio, Cancelled


class Recorder:
    def __init__(self) -> None:
        self.statuses = []
        self.notices: list[tuple[str, str]] = []
        self.timelines = []
        self.ended = []

    def turn_changed(self, turn) -> None:
        pass

    def turn_ended(self, turn) -> None:
        self.ended.append(turn)

    def timeline_changed(self, turn, timeline) -> None:
        self.timelines.append(timeline)

    def engine_status(self, status) -> None:
        self.statuses.append(status)

    def notice(self, text: str, level: str, topic="general") -> None:
        self.notices.append((text, level))


@pytest.fixture
async def controller(synthesizer):
    recorder = Recorder()
    hub = EngineHub(recorder.engine_status, opener_for(synthesizer))
    ctl = SpeechController(hub, recorder)
    ctl.recorder = recorder
    yield ctl
    await ctl.aclose()


async def whole(text: str) -> AsyncIterator[str]:
    yield text


async def test_typed_text_is_spoken_sentence_by_sentence_with_a_full_timeline(controller):
    await controller.use_engine(EngineSpec("local"))
    assert controller.recorder.statuses[-1].state is EngineState.READY
    text = "Hi there, friend. See you soon."
    turn = await controller.speak(TurnKind.SPEAK, text, whole(text))
    await until(lambda: not turn.active)
    assert turn.state is TurnState.DONE
    assert " ".join(s.text for s in turn.sentences).split() == text.split()
    assert all(s.finished and s.audio_s > 0 for s in turn.sentences)
    run = controller.last_run
    assert sum(len(p) for p in run.pcm) / 48000 == pytest.approx(turn.audio_s)
    timeline = run.timeline
    assert timeline.problems == ()
    assert len(timeline.sentences) == len(turn.sentences) >= 2
    for sentence in timeline.sentences:
        for stage in ("fragment_in", "chunk_released", "sent", "first_byte", "first_audible"):
            assert sentence.at(stage) is not None, stage
        assert sentence.audio_s > 0 and sentence.synthesis_s > 0
    assert controller.reply_wav()[:4] == b"RIFF"


async def test_agent_reply_streams_in_and_the_history_keeps_both_sides(controller):
    await controller.use_engine(EngineSpec("local"))
    source = ScriptedSource(tokens_per_s=200.0, script="Sure thing. It is done.")
    turn = await controller.speak(TurnKind.AGENT, "Do it", source.reply([]))
    await until(lambda: not turn.active)
    assert turn.state is TurnState.DONE
    assert controller.history == [ChatMessage("user", "Do it"), ChatMessage("assistant", "Sure thing. It is done.")]


async def test_stop_cancels_and_the_next_turn_hears_nothing_stale(controller):
    await controller.use_engine(EngineSpec("local"))
    text = "One two three. Four five six. Seven eight nine."
    first = await controller.speak(TurnKind.SPEAK, text, whole(text))
    await until(lambda: first.sentences and first.sentences[0].audio_s > 0)
    cut = await controller.stop()
    assert first.state is TurnState.CUT and cut is not None
    link = controller.last_run.link
    await until(lambda: not link.discarding)  # the engine confirmed the cancel
    second = await controller.speak(TurnKind.SPEAK, "Fresh.", whole("Fresh."))
    await until(lambda: not second.active)
    assert [s.text for s in second.sentences] == ["Fresh."]
    assert len(first.sentences) < 3  # the rest of the cancelled reply was never said


def test_stale_audio_is_dropped_until_the_cancel_is_confirmed():
    from voicedesk.app.link import SessionLink

    link = SessionLink(engine=None, label="WebSocket")  # type: ignore[arg-type]
    link.discarding = True
    assert link.is_stale(Audio(3, b"\0\0"))
    link.on_cancelled(Cancelled(4))
    assert link.is_stale(Audio(4, b"\0\0"))
    assert not link.is_stale(Audio(5, b"\0\0"))
    assert link.stale_dropped == 2


def test_a_cancelled_utterances_sentences_are_stale_too():
    """Its sentence starts and ends, arriving after the next turn began, must not become that turn's sentences."""
    from voicedesk.app.link import SessionLink
    from voicedesk.engine.events import SentenceFinished, SentenceStarted

    link = SessionLink(engine=None, label="Local")  # type: ignore[arg-type]
    link.discarding = True
    assert link.is_stale(SentenceStarted(1, "The dryer is done too."))
    link.on_cancelled(Cancelled(1))
    assert link.is_stale(SentenceFinished(1, 1.2))
    assert not link.is_stale(SentenceStarted(2, "Water leak."))


async def test_a_source_failing_mid_reply_speaks_what_arrived_and_says_why(controller):
    await controller.use_engine(EngineSpec("local"))

    async def flaky() -> AsyncIterator[str]:
        yield "Here is the start."
        raise VoicedeskError(LocalErrorCode.CONNECTION, "The chat server went away.")

    turn = await controller.speak(TurnKind.AGENT, "Tell me", flaky())
    await until(lambda: not turn.active)
    assert turn.state is TurnState.DONE
    assert [s.text for s in turn.sentences] == ["Here is the start."]
    assert turn.error == "The chat server went away."
    assert ("The chat server went away.", "error") in controller.recorder.notices


async def test_an_unreachable_remote_engine_is_reported_and_local_takes_the_reply(controller):
    spec = EngineSpec("websocket", target="ws://127.0.0.1:9/invocations-bidirectional-stream")
    await controller.use_engine(spec)
    status = controller.recorder.statuses[-1]
    assert status.kind == "websocket" and status.state is EngineState.ERROR
    assert "127.0.0.1:9" in status.message
    turn = await controller.speak(TurnKind.SPEAK, "Hello.", whole("Hello."))
    assert turn is not None and turn.engine == "Local"
    assert any("local engine instead" in text for text, _ in controller.recorder.notices)
    await until(lambda: not turn.active)
    assert turn.state is TurnState.DONE


@pytest.mark.parametrize("failover", [True, False])
async def test_a_server_shut_down_after_the_whole_text_came_is_not_taken_for_the_replys_end(
    controller, synthesizer, failover
):
    """A server that shuts down finishes the sentence on its model, answers the pending flush as cancelled, then
    closes. That cancelled flush is not the end of the reply (CI found turns ended DONE with the rest unsaid): the
    rest is said locally, or without failover the turn fails and says why. The whole text and its flush are sent at
    once, so the flush is pending when the server goes."""
    from tests.support.endpoint import server_settings
    from voicedesk.endpoint.runner import ServerThread
    from voicedesk.endpoint.server import create_app

    controller.failover_enabled = failover
    server = ServerThread(create_app(synthesizer, server_settings(idle_timeout_s=120))).start()
    try:
        await controller.use_engine(EngineSpec("websocket", target=server.ws_url))
        assert controller.recorder.statuses[-1].state is EngineState.READY
        # Sentences to spare: the server finishes the one on its model, and may be one ahead on a loaded machine.
        text = "One two three. Four five six. Seven eight nine. Ten eleven twelve. Thirteen fourteen. The end."
        turn = await controller.speak(TurnKind.SPEAK, text, whole(text))
        await until(lambda: turn.sentences and turn.sentences[0].audio_s > 0)
        await asyncio.to_thread(server.stop)
        await until(lambda: not turn.active)
    finally:
        server.stop()
    engines = [s.engine for s in turn.sentences]
    if not failover:
        assert turn.state is TurnState.FAILED and set(engines) == {"WebSocket"}
        assert turn.error == "The WebSocket engine failed mid-reply: the connection closed: server shutting down."
        assert (turn.error, "error") in controller.recorder.notices
        return
    assert turn.state is TurnState.DONE, turn.error
    assert engines[0] == "WebSocket" and engines[-1] == "Local"  # the server did not finish it all before it went
    assert " ".join(s.text for s in turn.sentences).split() == text.split()  # each word once, none lost
    assert all(s.audio_s > 0 for s in turn.sentences)
    assert any("continued on the local engine" in note for note in turn.notes)


async def test_without_failover_an_unreachable_engine_refuses_the_reply_clearly(controller):
    controller.failover_enabled = False
    await controller.use_engine(EngineSpec("websocket", target="ws://127.0.0.1:9"))
    assert await controller.speak(TurnKind.SPEAK, "Hello.", whole("Hello.")) is None
    text, level = controller.recorder.notices[-1]
    assert level == "error" and "127.0.0.1:9" in text


async def test_an_always_on_controller_remembers_only_its_newest_turns(synthesizer):
    """The soak found memory growing with every announcement: the controller kept every turn it ever spoke."""
    recorder = Recorder()
    ctl = SpeechController(EngineHub(recorder.engine_status, opener_for(synthesizer)), recorder, turns_kept=2)
    try:
        await ctl.use_engine(EngineSpec("local"))
        spoken = []
        for text in ("One.", "Two.", "Three."):
            turn = await ctl.speak(TurnKind.SPEAK, text, whole(text))
            await until(lambda turn=turn: not turn.active)
            spoken.append(turn)
        assert all(turn.state is TurnState.DONE for turn in spoken)
        assert list(ctl.turns) == spoken[1:]
        assert not ctl._ended and not ctl._synthesized
    finally:
        await ctl.aclose()
