"""The window as a console an operator lives in: the announcement queue, saved phrases, the history across restarts
with replay, the agent's conversation (failures, retry, one history per agent, new conversation), and status
messages that go when their cause goes. The real window through pytest-qt, the real local engine (random weights),
audio through the real PortAudio stream (into the private null sink under tests/run.sh)."""

from __future__ import annotations

import asyncio
import socket

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMessageBox

from tests.app.helpers import until
from tests.app.peers import serve
from tests.app.test_sources import chat_server
from voicedesk.app.conversation import TurnKind, TurnState
from voicedesk.app.engines import EngineState
from voicedesk.app.history import load_history
from voicedesk.app.notices import Topic
from voicedesk.app.phrases import Phrase
from voicedesk.app.settings import AppSettings, save_settings


def type_and(window, qtbot, text: str, button) -> None:
    window.composer.editor.clear()
    qtbot.keyClicks(window.composer.editor, text)
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def test_a_new_speak_waits_its_turn_and_speak_now_interrupts_on_purpose(make_window, qtbot, qloop, tmp_path):
    window = make_window(history_path=tmp_path / "history.json")
    type_and(window, qtbot, "First in line. It keeps going a while.", window.composer.speak)

    async def scenario():
        await until(lambda: window.controller.turns and window.controller.turns[0].state is TurnState.SPEAKING)
        first = window.controller.turns[0]
        assert window.composer.speak.text().startswith("Queue")  # says what it will do
        type_and(window, qtbot, "Second.", window.composer.speak)
        await until(lambda: len(window.announce.console.core) == 1)
        queue = window.console.announcements
        assert queue.queue.count() == 1 and "Second." in queue.queue.item(0).text()
        assert "First in line" in queue.now.text()
        await until(lambda: not first.active)
        assert first.state is TurnState.DONE  # not cut by the new Speak (issue 13, bug 6)
        await until(lambda: len(window.controller.turns) == 2 and not window.controller.turns[1].active)
        second = window.controller.turns[1]
        assert second.state is TurnState.DONE and second.text == "Second."

        type_and(window, qtbot, "Third one talks for a while. On and on it goes.", window.composer.speak)
        await until(lambda: len(window.controller.turns) == 3 and window.controller.turns[2].sentences)
        type_and(window, qtbot, "Urgent.", window.composer.speak_now)
        await until(lambda: len(window.controller.turns) == 4 and not window.controller.turns[3].active)
        # the history is written once the turn's outcome is in, a moment after the turn ends
        await until(lambda: [e.text for e in window.announce.history.entries][-1:] == ["Urgent."])
        return window.controller.turns

    turns = qloop.run_until_complete(scenario())
    assert turns[2].state is TurnState.CUT  # interrupted because the operator chose to
    assert turns[3].text == "Urgent." and turns[3].state is TurnState.DONE
    assert [e.text for e in window.announce.history.entries][-1] == "Urgent."


def test_stop_pauses_the_queue_and_resume_carries_on(make_window, qtbot, qloop, tmp_path):
    window = make_window(history_path=tmp_path / "history.json")
    type_and(window, qtbot, "Hold this thought for a moment please.", window.composer.speak)

    async def scenario():
        await until(lambda: window.controller.turns and window.controller.turns[0].sentences)
        type_and(window, qtbot, "Waiting one.", window.composer.speak)
        await until(lambda: len(window.announce.console.core) == 1)
        qtbot.keyClick(window.composer.editor, Qt.Key.Key_Escape)
        await until(lambda: window.controller.turns[0].state is TurnState.CUT and not window.announce.console.busy)
        queue = window.console.announcements
        assert window.announce.console.core.paused and queue.resume.isVisible()
        assert "Paused" in queue.now.text()
        assert len(window.controller.turns) == 1  # nothing started behind the operator's back
        qtbot.mouseClick(queue.resume, Qt.MouseButton.LeftButton)
        await until(lambda: len(window.controller.turns) == 2 and not window.controller.turns[1].active)

    qloop.run_until_complete(scenario())
    assert window.controller.turns[1].text == "Waiting one."


def test_a_saved_phrase_speaks_in_its_own_voice_by_click_and_by_shortcut(make_window, qtbot, qloop, tmp_path):
    settings = AppSettings()
    settings.phrases = [Phrase("Dinner", "Dinner is ready.", voice="am_adam", shortcut="Ctrl+Alt+1")]
    save_settings(settings, tmp_path / "settings.json")
    window = make_window(tmp_path / "settings.json", history_path=tmp_path / "history.json")
    (button,) = window.console.phrases.buttons
    assert button.text() == "Dinner" and "Ctrl+Alt+1" in button.toolTip()
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)

    async def scenario():
        await until(lambda: window.controller.turns and not window.controller.turns[-1].active)
        window.activateWindow()
        await until(lambda: QApplication.activeWindow() is window)  # a window shortcut needs its window active
        keys = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier
        qtbot.keyClick(window.composer.editor, Qt.Key.Key_1, keys)
        await until(lambda: len(window.controller.turns) == 2 and not window.controller.turns[-1].active)
        await until(lambda: len(window.announce.history.entries) == 2)  # written once the turn's outcome is in

    qloop.run_until_complete(scenario())
    for turn in window.controller.turns:
        assert turn.text == "Dinner is ready." and turn.state is TurnState.DONE
        assert all(s.error is None for s in turn.sentences)
    entries = window.announce.history.entries
    assert [(e.voice, e.origin) for e in entries] == [("am_adam", "Phrase · Dinner")] * 2
    assert window.controller.voice.voice == "af_heart"  # the window's own voice is untouched


def test_the_history_survives_a_restart_and_replays_in_the_same_voice(make_window, qtbot, qloop, tmp_path):
    history = tmp_path / "data" / "history.json"
    first = make_window(history_path=history)
    first.sidebar.voice.voice.setCurrentIndex(first.sidebar.voice.voice.findData("bf_emma"))
    type_and(first, qtbot, "Remember me.", first.composer.speak)
    qloop.run_until_complete(until(lambda: first.controller.turns and not first.controller.turns[-1].active))
    qloop.run_until_complete(first.shutdown())
    first.close()
    (entry,) = load_history(history).entries
    assert (entry.text, entry.voice, entry.state, entry.engine) == ("Remember me.", "bf_emma", "done", "Local")

    second = make_window(history_path=history)
    listing = second.console.announcements.history
    assert listing.count() == 1 and "Remember me." in listing.item(0).text()
    listing.setCurrentRow(0)
    qtbot.mouseClick(second.console.announcements.replay, Qt.MouseButton.LeftButton)
    qloop.run_until_complete(until(lambda: second.controller.turns and not second.controller.turns[-1].active))
    (replayed,) = second.controller.turns
    assert replayed.text == "Remember me." and replayed.state is TurnState.DONE
    # The console keeps a turn in the history once its runner sees it end, a loop pass after the turn ends.
    qloop.run_until_complete(until(lambda: listing.count() == 2))
    assert [e.origin for e in load_history(history).entries] == ["Typed", "Replay"]
    assert load_history(history).entries[-1].voice == "bf_emma"


def test_a_failed_question_keeps_the_question_offers_a_retry_and_shows_no_placeholder(make_window, qtbot, qloop):
    window = make_window()
    agent = window.sidebar.agent
    agent.source.setCurrentIndex(agent.source.findData("openai"))
    agent.base_url.clear()
    qtbot.keyClicks(agent.base_url, "http://127.0.0.1:9/v1")
    qtbot.mouseClick(window.composer.mode.buttons["agent"], Qt.MouseButton.LeftButton)
    type_and(window, qtbot, "Will you answer?", window.composer.speak)

    async def scenario():
        await until(lambda: window.controller.turns and not window.controller.turns[-1].active)
        return window.controller.turns[-1]

    turn = qloop.run_until_complete(scenario())
    assert turn.state is TurnState.FAILED
    view = window.conversation.views[turn.id]
    assert "Waiting for the first words" not in view.text.text()
    assert any("Could not reach the chat server" in chip.text() for chip in view._chips)
    assert window.composer.text() == "Will you answer?"  # the question is not lost
    assert view.retry.isVisible()
    assert "Could not reach" in window.status.text
    qtbot.mouseClick(view.retry, Qt.MouseButton.LeftButton)
    qloop.run_until_complete(until(lambda: len(window.controller.turns) == 2 and not window.controller.turns[1].active))
    assert window.controller.turns[1].prompt == "Will you answer?"
    assert window.controller.history == []  # unanswered questions are not history


def test_each_agent_has_its_own_conversation_and_it_can_be_started_afresh(make_window, qtbot, qloop):
    seen: list[dict] = []
    with serve(chat_server(["Fine, ", "thanks."], seen)) as base:
        window = make_window()
        agent = window.sidebar.agent
        qtbot.mouseClick(window.composer.mode.buttons["agent"], Qt.MouseButton.LeftButton)
        assert window.composer.new_conversation.isVisible()
        type_and(window, qtbot, "Echo this.", window.composer.speak)  # the scripted agent
        qloop.run_until_complete(until(lambda: window.controller.turns and not window.controller.turns[-1].active))
        assert [m.text for m in window.controller.history] == ["Echo this.", "Echo this."]

        agent.source.setCurrentIndex(agent.source.findData("openai"))
        agent.base_url.clear()
        qtbot.keyClicks(agent.base_url, f"{base}/v1")
        agent.model.clear()
        qtbot.keyClicks(agent.model, "tiny-llm")
        type_and(window, qtbot, "How are you?", window.composer.speak)
        qloop.run_until_complete(
            until(lambda: len(window.controller.turns) == 2 and not window.controller.turns[1].active)
        )
        asked = [m["content"] for m in seen[-1]["messages"] if m["role"] != "system"]
        assert asked == ["How are you?"]  # the scripted agent's echo was not sent to the LLM
        assert "new conversation" in " ".join(n.text for n in window.status.board.log)

        type_and(window, qtbot, "And now?", window.composer.speak)
        qloop.run_until_complete(
            until(lambda: len(window.controller.turns) == 3 and not window.controller.turns[2].active)
        )
        assert [m["content"] for m in seen[-1]["messages"] if m["role"] != "system"] == [
            "How are you?",
            "Fine, thanks.",
            "And now?",
        ]
        qtbot.mouseClick(window.composer.new_conversation, Qt.MouseButton.LeftButton)
        type_and(window, qtbot, "Hello again.", window.composer.speak)
        qloop.run_until_complete(
            until(lambda: len(window.controller.turns) == 4 and not window.controller.turns[3].active)
        )
        assert [m["content"] for m in seen[-1]["messages"] if m["role"] != "system"] == ["Hello again."]


def test_an_api_key_goes_over_plain_http_to_another_host_only_if_the_person_says_so(
    make_window, qtbot, qloop, monkeypatch
):
    host = socket.gethostname()
    assert socket.gethostbyname(host).startswith("127."), "this test needs the machine's name to be on loopback"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    requests: list[dict] = []

    def recording(app):
        async def asgi(scope, receive, send):
            if scope["type"] == "http":
                requests.append({k.decode(): v.decode() for k, v in scope["headers"]})
            await app(scope, receive, send)

        return asgi

    with serve(recording(chat_server(["Hi."], []))) as base:
        url = base.replace("127.0.0.1", host) + "/v1"  # a name, not a loopback address: counts as another host
        window = make_window()
        agent = window.sidebar.agent
        agent.source.setCurrentIndex(agent.source.findData("openai"))
        agent.base_url.clear()
        qtbot.keyClicks(agent.base_url, url)
        agent.model.clear()
        qtbot.keyClicks(agent.model, "tiny-llm")
        qtbot.mouseClick(window.composer.mode.buttons["agent"], Qt.MouseButton.LeftButton)

        async def ask_and_answer(answer: str, count: int):
            type_and(window, qtbot, "Hello?", window.composer.speak)
            if answer:
                await until(lambda: _question() is not None)
                box = _question()
                assert "unencrypted" in box.text() and host in box.text()
                button = next(b for b in box.buttons() if b.text() == answer)
                qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
            await until(lambda: len(window.controller.turns) == count and not window.controller.turns[-1].active)

        qloop.run_until_complete(ask_and_answer("Ask without the key", 1))
        assert requests[-1]["authorization"] == "Bearer not-sent"
        qloop.run_until_complete(ask_and_answer("", 2))  # decided for this host: not asked again
        assert requests[-1]["authorization"] == "Bearer not-sent"
        assert all("sk-test-secret" not in r.get("authorization", "") for r in requests)


def _question() -> QMessageBox | None:
    boxes = [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible()]
    return boxes[0] if boxes else None


def test_status_messages_go_when_their_cause_goes_and_long_ones_can_be_read(make_window, qtbot, qloop):
    window = make_window()
    engine = window.sidebar.engine
    qtbot.mouseClick(engine.switch.buttons["websocket"], Qt.MouseButton.LeftButton)
    engine.ws_url.clear()
    qtbot.keyClicks(engine.ws_url, "ws://127.0.0.1:9")
    window.controller.failover_enabled = True
    type_and(window, qtbot, "Hello.", window.composer.speak)

    async def scenario():
        await until(lambda: window.controller.turns and not window.controller.turns[-1].active)
        assert "speaking on the local engine instead" in window.status.text
        qtbot.mouseClick(engine.switch.buttons["local"], Qt.MouseButton.LeftButton)
        await until(lambda: window.hub.status.kind == "local" and window.hub.status.state is EngineState.READY)
        assert window.status.text == ""  # the complaint about the WebSocket engine went with it

        type_and(window, qtbot, "Stop me soon please. There is more.", window.composer.speak)
        await until(lambda: len(window.controller.turns) == 2 and window.controller.turns[1].sentences)
        qtbot.keyClick(window.composer.editor, Qt.Key.Key_Escape)
        await until(lambda: "Stopped" in window.status.text)
        type_and(window, qtbot, "Next.", window.composer.speak)
        await until(lambda: len(window.controller.turns) == 3)
        assert "Stopped" not in window.status.text  # a new reply: the old "Stopped" is gone

    qloop.run_until_complete(scenario())
    long_text = "A very long explanation " * 30 + "with the important part at the end."
    window.resize(1024, 640)
    window.notice(long_text, "error")
    shown = window.status.label.text()
    assert "important part" not in shown and "…" in shown  # cut at the edge…
    assert window.status.label.toolTip() == long_text
    qtbot.mouseClick(window.status.more, Qt.MouseButton.LeftButton)
    assert window.status.dialog.isVisible()
    assert "important part at the end." in window.status.dialog.browser.toPlainText()  # …and readable in full
    window.status.dialog.close()
    assert window.controller.turns[2].kind is TurnKind.SPEAK


def test_no_more_link_without_a_message_behind_it(make_window):
    """Issue 33.8: once a long message went, its "More…" link stayed with nothing shown to be more of."""
    window = make_window(start=False)
    window.resize(1024, 640)
    window.notice("A very long explanation " * 30, "error")
    assert window.status.more.text() == "More…"
    window.status.clear(Topic.GENERAL)
    assert window.status.text == "" and window.status.more.isVisibleTo(window)
    assert window.status.more.text() == "Earlier messages"


def test_clear_history_asks_first(make_window, qtbot, qloop, tmp_path):
    """Issue 33.8: one click deleted the whole history, with no question and no undo."""
    history = tmp_path / "history.json"
    window = make_window(history_path=history)
    type_and(window, qtbot, "Keep me.", window.composer.speak)
    qloop.run_until_complete(until(lambda: window.announce.history.entries))
    card = window.console.announcements

    async def answer(button_text: str) -> None:
        qtbot.mouseClick(card.history_clear, Qt.MouseButton.LeftButton)
        await until(lambda: _question() is not None)
        box = _question()
        assert "Clear the history?" in box.windowTitle() + box.text() and "1 entry will be deleted" in box.text()
        qtbot.mouseClick(next(b for b in box.buttons() if b.text() == button_text), Qt.MouseButton.LeftButton)
        await until(lambda: _question() is None)
        await asyncio.sleep(0.05)

    qloop.run_until_complete(answer("Keep it"))
    assert [e.text for e in load_history(history).entries] == ["Keep me."]
    qloop.run_until_complete(answer("Clear history"))
    assert load_history(history).entries == [] and card.history.count() == 0
