"""Tools ▸ Pronunciations… driven through pytest-qt on the real window: entries added (a bad one refused with the
reason), removed, played through the real local engine before saving, exported and imported; saved to
``lexicon.json`` beside the settings, and used by the window's sessions from the next turn, across a restart."""

from __future__ import annotations

import json

from PySide6.QtCore import Qt

from tests.app.helpers import until
from voicedesk.app.conversation import TurnKind, TurnState


def add(qtbot, dialog, word: str, says: str, respelling: bool = False) -> None:
    dialog.word.clear()
    qtbot.keyClicks(dialog.word, word)
    dialog.kind.setCurrentIndex(1 if respelling else 0)
    dialog.says.setText(says)  # QTest cannot type IPA symbols (no key for them); a person pastes them
    qtbot.mouseClick(dialog.add_button, Qt.MouseButton.LeftButton)


def rows(dialog) -> list[tuple[str, str]]:
    return [(dialog.table.item(r, 0).text(), dialog.table.item(r, 1).text()) for r in range(dialog.table.rowCount())]


def test_pronunciations_are_edited_played_saved_and_used(make_window, qtbot, qloop, tmp_path):
    window = make_window()
    window.pronunciations.action.trigger()  # the menu item
    dialog = window.pronunciations.dialog
    assert dialog is not None and dialog.isVisible()
    assert rows(dialog) == []

    add(qtbot, dialog, "Siobhan", "ʃɪvˈɔn")
    add(qtbot, dialog, "Nguyen", "win", respelling=True)
    assert rows(dialog) == [("Siobhan", "/ʃɪvˈɔn/"), ("Nguyen", "“win”")]
    add(qtbot, dialog, "Aoife", "ˈifəX")  # not a Kokoro symbol: refused, with the reason
    assert dialog.problem.isVisible() and "'X'" in dialog.problem.text()
    assert len(rows(dialog)) == 2

    # Play the word before saving: a preview turn on the real local engine, with the dialog's entries.
    dialog.word.clear()
    qtbot.keyClicks(dialog.word, "Siobhan")
    qtbot.mouseClick(dialog.play_button, Qt.MouseButton.LeftButton)

    async def played():
        await until(lambda: window.controller.turns and not window.controller.turns[-1].active)

    qloop.run_until_complete(played())
    turn = window.controller.turns[-1]
    assert turn.kind is TurnKind.PREVIEW and turn.state is TurnState.DONE, turn.notes
    session = window.controller.last_run.link.session
    assert session.config.text.lexicon.lookup("siobhan").phonemes == "ʃɪvˈɔn"
    assert not (tmp_path / "lexicon.json").exists()  # nothing saved yet

    # Export, remove one, import it back.
    exported = tmp_path / "exported.json"
    dialog.export_file(exported)
    assert json.loads(exported.read_text(encoding="utf-8")) == [
        {"word": "Siobhan", "phonemes": "ʃɪvˈɔn"},
        {"word": "Nguyen", "respelling": "win"},
    ]
    dialog.table.selectRow(0)
    qtbot.mouseClick(dialog.remove_button, Qt.MouseButton.LeftButton)
    assert rows(dialog) == [("Nguyen", "“win”")]
    bad = tmp_path / "bad.json"
    bad.write_text('[{"word": ""}]', encoding="utf-8")
    assert not dialog.import_file(bad) and "lexicon entry 0" in dialog.problem.text()
    assert dialog.import_file(exported)
    assert sorted(rows(dialog)) == [("Nguyen", "“win”"), ("Siobhan", "/ʃɪvˈɔn/")]

    qtbot.mouseClick(dialog.buttons.button(dialog.buttons.StandardButton.Save), Qt.MouseButton.LeftButton)
    saved = json.loads((tmp_path / "lexicon.json").read_text(encoding="utf-8"))
    assert {entry["word"] for entry in saved} == {"Siobhan", "Nguyen"}
    assert window.controller.voice.text.lexicon.lookup("Nguyen").respelling == "win"

    # A restarted window reads it back.
    again = make_window()
    assert again.controller.voice.text.lexicon.lookup("siobhan").phonemes == "ʃɪvˈɔn"


def test_a_damaged_lexicon_file_is_kept_aside_and_reported(make_window, tmp_path):
    (tmp_path / "lexicon.json").write_text('[{"word": "Siobhan", "phonemes": "S1"}]', encoding="utf-8")
    window = make_window()
    assert not window.controller.voice.text.lexicon
    assert list(tmp_path.glob("lexicon.damaged-*.json"))
    assert any("lexicon entry 0" in n.text and "damaged" in n.text for n in window.status.board.log)
