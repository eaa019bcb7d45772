"""The real window lights the words as they were written while their spoken form plays: for
``Outside it is -5°C tonight.`` the local engine (random weights) says "minus five degrees Celsius" and the
window's bubble has ``-5°C`` highlighted, through a real PortAudio stream into the private null sink. The
screenshot taken at that moment is docs/app-highlight.png (copied from test-artifacts/ by hand)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from tests.app.helpers import ARTIFACTS, until
from tests.app.test_app_audio import player_factory, screenshot
from tests.support.audio_capture import require_null_sink
from voicedesk.app.conversation import RunStyle, TurnState
from voicedesk.app.ui.conversation_view import RUN_CSS

pytestmark = pytest.mark.audio

TEXT = "Outside it is -5°C tonight."
LIT = f"<span style='{RUN_CSS[RunStyle.CURRENT]}'>-5°C</span>"
"""The bubble's rich text while any of "minus five degrees Celsius" is heard."""


def test_the_window_lights_the_written_temperature_while_its_words_play(make_window, qtbot, qloop):
    require_null_sink()
    # the whole sentence is queued before playback starts: random weights on 2 cores are slower than real time
    window = make_window(player_factory=player_factory(30.0))
    assert window.controller.player is not None, window.banners.visible_texts()
    qtbot.keyClicks(window.composer.editor, TEXT)
    qtbot.mouseClick(window.composer.speak, Qt.MouseButton.LeftButton)

    async def scenario() -> tuple[object, list[str]]:
        await until(lambda: window.controller.turns)
        turn = window.controller.turns[-1]
        lit_words: list[str] = []

        def lit() -> bool:
            runs = turn.runs(window.controller.heard_position())
            lit_words.extend(r.text for r in runs if r.style is RunStyle.CURRENT and r.text not in lit_words)
            view = window.conversation.views.get(turn.id)
            return view is not None and LIT in view.text.text()

        await until(lit)
        await screenshot(window, ARTIFACTS / "app-highlight.png")
        await until(lambda: not turn.active)
        return turn, lit_words

    turn, lit_words = qloop.run_until_complete(scenario())
    assert turn.state is TurnState.DONE
    assert "-5°C" in lit_words
    # the words the engine spoke for it are not what is lit: the written text is
    assert not {"minus", "five", "degrees", "Celsius"} & set(lit_words)
    assert (ARTIFACTS / "app-highlight.png").stat().st_size > 10_000
