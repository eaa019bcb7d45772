"""The front-end's first-sentence cost: NeMo's answers remembered per stretch, and a sentence still arriving warmed
stretch by stretch. Both are optimizations: the tests check the spoken form is exactly what an unmemoized,
unwarmed front-end gives, and that the work really moved (NeMo not called again)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from voicedesk.engine.model.front_end_warmer import FrontEndWarmer
from voicedesk.engine.text.frontend import FrontEnd, complete_words, load_front_end
from voicedesk.engine.text.frontend.english import EnglishSpokenForm
from voicedesk.engine.text.frontend.memo import MemoNormalize
from voicedesk.engine.text.frontend.settings import DEFAULT_TEXT_SETTINGS, TextSettings

SENTENCES = (
    "It is 21°C in the living room and the dryer uses 1,200 W right now.",
    "Outside it is -5°C tonight.",
    "Motion at the back door at 3:07 PM, wind at 20 km/h.",
    "Call Dr. Smith at 555-0123 before Mar. 17.",
    "The total comes to $42.50 and battery is at 15%.",
    "- **Lights**: off in 3 rooms, see [the dashboard](http://homeassistant.local:8123/lovelace/0) 📊",
)


@pytest.fixture(scope="module")
def memo_front_end(text_grammars: Path) -> FrontEnd:
    loaded = load_front_end(text_grammars)
    assert not loaded.notes, loaded.notes
    return loaded


def _memo(front_end: FrontEnd) -> MemoNormalize:
    english = front_end.spoken_forms["a"]
    assert isinstance(english, EnglishSpokenForm) and isinstance(english.normalize, MemoNormalize)
    return english.normalize


def _unmemoized(front_end: FrontEnd) -> FrontEnd:
    english = front_end.spoken_forms["a"]
    raw = EnglishSpokenForm(MemoNormalize(_memo(front_end)._normalize, size=0), english.whitelist)
    return FrontEnd({"a": raw}, front_end.notes)


@pytest.mark.parametrize("text", SENTENCES)
def test_the_memo_and_warming_never_change_the_spoken_form(memo_front_end: FrontEnd, text: str) -> None:
    memo = _memo(memo_front_end)
    memo.clear()
    expected = _unmemoized(memo_front_end).to_spoken(text, "a")
    for end in range(1, len(text) + 1):  # character by character, as a fast stream would arrive
        memo_front_end.warm(text[:end], "a")
    warmed = memo_front_end.to_spoken(text, "a")
    remembered = memo_front_end.to_spoken(text, "a")
    assert warmed == expected
    assert remembered == expected
    assert pickle.loads(pickle.dumps(warmed)) == expected


def test_a_sentence_still_arriving_has_its_finished_stretches_normalized(memo_front_end: FrontEnd) -> None:
    memo = _memo(memo_front_end)
    memo.clear()
    text = "It is 21°C in the living room and the dryer uses 1,200 W right now."
    memo_front_end.warm("It is 21°C in the living room and the dry", "a")
    calls = memo.misses
    assert calls >= 1 and memo.cached("It is 21°C in the living room") is not None  # four words each side
    assert memo_front_end.warm(text[: text.index("right") + len("right ")], "a") == 1  # "W right" may go on
    assert memo_front_end.warm(text, "a") == 2  # the sentence's end: its last stretch too
    calls = memo.misses
    memo_front_end.to_spoken(text, "a")
    assert memo.misses == calls  # the released sentence reached NeMo not once more


def test_a_number_at_the_end_waits_for_its_context_word(memo_front_end: FrontEnd) -> None:
    memo = _memo(memo_front_end)
    memo.clear()
    assert memo_front_end.warm("Outside it is -5°C", "a") == 0  # "tonight." may still make it another stretch
    assert memo_front_end.warm("Outside it is -5°C tonight.", "a") == 1  # a finished word: it is final now
    calls = memo.misses
    memo_front_end.to_spoken("Outside it is -5°C tonight.", "a")
    assert memo.misses == calls
    assert memo_front_end.warm("Wind from the north at 20 km/h", "a") == 0
    assert memo_front_end.warm("Wind from the north at 20 km/h.", "a") == 1  # the likely end of the sentence
    calls = memo.misses
    memo_front_end.to_spoken("Wind from the north at 20 km/h.", "a")
    assert memo.misses == calls


def test_a_word_still_being_typed_is_left_out() -> None:
    assert complete_words("at 3:0") == "at"
    assert complete_words("at 3:07 ") == "at 3:07 "
    assert complete_words("tonight.") == "tonight."
    assert complete_words("21°C") == ""


def test_half_an_ssml_document_is_left_alone(memo_front_end: FrontEnd) -> None:
    assert memo_front_end.warm('<speak>It is <say-as interpret-as="digits">21</say-as> ', "a") == 0
    settings = TextSettings(markup="ssml")
    assert memo_front_end.warm("<speak>It is 21 degrees ", "a", settings) == 0


def test_the_memo_is_bounded_and_never_remembers_a_failure() -> None:
    calls: list[str] = []

    def normalize(text: str) -> str:
        calls.append(text)
        if text == "bad":
            raise ValueError("no path")
        return text.upper()

    memo = MemoNormalize(normalize, size=2)
    assert [memo("a"), memo("b"), memo("a")] == ["A", "B", "A"]
    assert calls == ["a", "b"]
    memo("c")  # "b" was used least recently
    assert len(memo) == 2 and memo.cached("b") is None and memo.cached("a") == "A"
    for _ in range(2):
        with pytest.raises(ValueError):
            memo("bad")
    assert calls.count("bad") == 2


def test_the_warmer_keeps_only_the_newest_fragment_and_swallows_errors() -> None:
    import threading

    started, release = threading.Event(), threading.Event()
    warmed: list[str] = []

    def warm(text: str, _voice: str, _settings: TextSettings) -> None:
        if text == "first ":
            started.set()
            release.wait(5)
        warmed.append(text)
        if text == "broken ":
            raise RuntimeError("half a sentence")

    warmer = FrontEndWarmer(warm)
    warmer.hint("first ", "af_heart", DEFAULT_TEXT_SETTINGS)
    assert started.wait(5)
    for text in ("second ", "third ", "broken "):  # while "first" runs, each newer fragment replaces the one waiting
        warmer.hint(text, "af_heart", DEFAULT_TEXT_SETTINGS)
    release.set()
    assert warmer.wait_idle(5)
    assert warmed == ["first ", "broken "]
    warmer.hint("after 1,2", "af_heart", DEFAULT_TEXT_SETTINGS)  # an error did not stop the warmer
    assert warmer.wait_idle(5)
    warmer.hint("after 1,200", "af_heart", DEFAULT_TEXT_SETTINGS)  # only the last word grew: nothing new to warm
    assert warmer.wait_idle(5)
    assert warmed[2:] == ["after"]
