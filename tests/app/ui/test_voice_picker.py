"""The voice picker: voices grouped by language, what is not set up said so, previews in the voice's language."""

from __future__ import annotations

import sys

from tests.app.helpers import until
from voicedesk.app.ui.announce_actions import preview_sentence
from voicedesk.app.ui.sidebar import NOT_HERE, NOT_SET_UP
from voicedesk.engine.model.languages import LANGUAGES
from voicedesk.engine.model.voices import KNOWN_VOICES


def entries(combo) -> list[tuple[str, object, bool]]:
    model = combo.model()
    return [(combo.itemText(i), combo.itemData(i), model.item(i).isEnabled()) for i in range(combo.count())]


def test_voices_are_grouped_by_language_and_a_language_not_set_up_says_so(make_window, monkeypatch, qloop):
    monkeypatch.setitem(sys.modules, "jieba", None)  # Mandarin's G2P is not installed on this machine
    window = make_window()
    voice = window.sidebar.voice
    # the local engine's list (Engine.voices(), read off the event loop) says which languages are set up
    qloop.run_until_complete(
        until(lambda: voice.voice.itemText(voice.voice.findData("zf_xiaobei")).endswith(NOT_SET_UP))
    )
    listed = entries(voice.voice)
    headings = [text for text, data, enabled in listed if data is None]
    assert all(not enabled for _text, data, enabled in listed if data is None)  # headings cannot be chosen
    assert headings == [name + (f" — {NOT_SET_UP}" if code == "z" else "") for code, name in LANGUAGES_IN_ORDER]
    assert [data for _text, data, _enabled in listed if data is not None] == sorted(
        KNOWN_VOICES, key=lambda n: list(LANGUAGES).index(n[0])
    )
    texts = {data: text for text, data, _enabled in listed}
    assert texts["af_heart"] == "Heart · US ♀"
    assert texts["jf_alpha"].endswith(NOT_HERE)  # Japanese is set up; this voice is just not downloaded
    assert texts["zf_xiaobei"].endswith(NOT_SET_UP)
    assert voice.voice.currentData() == "af_heart"

    voice.voice.setCurrentIndex(voice.voice.findData("zf_xiaobei"))
    assert "speaks Mandarin Chinese, which is not set up on this machine" in voice.message.text()
    assert "voicedesk models fetch --languages zh" in voice.message.text()
    assert voice.download.isHidden()


LANGUAGES_IN_ORDER = [(code, lang.name) for code, lang in LANGUAGES.items()]


def test_a_preview_speaks_a_sentence_in_the_voices_language(synthesizer):
    assert preview_sentence("af_heart", "Heart") == "Hello, this is Heart."
    for voice, code in (("ef_dora", "e"), ("jf_alpha", "j"), ("zf_xiaobei", "z"), ("hf_alpha", "h")):
        sentence = preview_sentence(voice, "Dora")
        assert "Dora" in sentence and sentence == LANGUAGES[code].sample.format(voice="Dora")
        phonemes, _ = synthesizer.pipeline(code).g2p(sentence)
        assert phonemes.strip()
