"""A console left open all day: the conversation keeps the newest bubbles, not one per announcement for ever."""

from __future__ import annotations

from voicedesk.app.conversation import Turn, TurnKind, TurnState


def test_the_conversation_keeps_only_the_newest_bubbles_and_never_the_one_playing(make_window, qtbot):
    window = make_window()
    conversation = window.conversation
    conversation.views_kept = 3
    playing = Turn(1, TurnKind.SPEAK, "Still playing.", "Local", state=TurnState.SPEAKING)
    conversation.show_turn(playing, None)
    for turn_id in range(2, 7):
        conversation.show_turn(Turn(turn_id, TurnKind.SPEAK, f"Said {turn_id}.", "Local", state=TurnState.DONE), None)
    assert list(conversation.views) == [1, 5, 6]
    bubble = type(conversation.views[1])
    qtbot.waitUntil(lambda: len(conversation.widget().findChildren(bubble)) == 3)  # the others are deleted
