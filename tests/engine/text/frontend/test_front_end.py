"""The front-end's own promises: spans back to the text as sent, markup read without symbols, malformed SSML
refused clearly, nothing normalized that needs nothing, picklable in and out, other languages left alone."""

from __future__ import annotations

import json
import pickle

import pytest

from voicedesk.engine.errors import ErrorCode
from voicedesk.engine.events import SentenceFinished, WordTiming
from voicedesk.engine.model.prepared import prepare_pieces
from voicedesk.engine.protocol import ClientProtocol, ServerProtocol
from voicedesk.engine.text.frontend import FrontEnd
from voicedesk.engine.text.frontend.english import EnglishSpokenForm
from voicedesk.engine.text.frontend.lexicon import parse_lexicon
from voicedesk.engine.text.frontend.settings import TextSettings
from voicedesk.engine.text.frontend.ssml import BadText


def spans(front_end: FrontEnd, text: str, language: str = "a", settings: TextSettings | None = None):
    spoken = front_end.to_spoken(text, language, settings or TextSettings())
    return [(unit.text, text[unit.start : unit.end]) for unit in spoken.units]


def test_every_spoken_word_points_at_the_characters_it_says(front_end):
    text = "Outside it is -5°C tonight, wind at 20 km/h."
    found = spans(front_end, text)
    assert found[:3] == [("Outside", "Outside"), ("it", "it"), ("is", "is")]
    assert [source for word, source in found if word in ("minus", "five", "degrees", "Celsius")] == ["-5°C"] * 4
    assert ("tonight,", "tonight,") in found
    assert {source for word, source in found if word.rstrip(".") in ("twenty", "kilometers", "per", "hour")} == {
        "20 km/h."
    }


def test_spans_skip_markdown_marks_and_survive_the_lexicon(front_end):
    text = "Ask **Nguyen** about [the *forecast*](https://x.io) 🌧️ today."
    settings = TextSettings(lexicon=parse_lexicon([{"word": "Nguyen", "respelling": "win"}]))
    found = spans(front_end, text, settings=settings)
    assert found == [
        ("Ask", "Ask"),
        ("win", "Nguyen"),
        ("about", "about"),
        ("the", "the"),
        ("forecast", "forecast"),
        ("today.", "today."),
    ]


def test_g2p_tokens_carry_the_source_span(front_end, speaker):
    text = "It is 21°C and [Siobhan](/ʃɪvˈɔn/) is home."
    spoken = front_end.to_spoken(text, "a", TextSettings())
    pieces = prepare_pieces(speaker.pipeline("a"), spoken, "a")
    tokens = [t for piece in pieces for t in piece.tokens if t.phonemes]
    by_word = {t.text: text[t.start_char : t.end_char] for t in tokens if t.start_char is not None}
    assert by_word["twenty"] == "21°C" and by_word["Celsius"] == "21°C"
    assert by_word["Siobhan"] == "Siobhan"  # the word, not the override's brackets
    assert by_word["home"] == "home"  # the word, without the sentence's full stop
    assert "ʃɪvˈɔn" in pieces[0].phonemes
    assert all(t.start_char is not None for t in tokens), [t.text for t in tokens if t.start_char is None]


def test_an_agent_reply_in_markdown_is_spoken_without_symbols(front_end, speaker):
    reply = (
        "## Your evening 🌙\n\n"
        "Here is what I found:\n\n"
        "- **Lights**: the *living room* is at 40%\n"
        "- Heating: set to 21°C ✅\n"
        "- Details on [the dashboard](http://homeassistant.local:8123/lovelace)\n\n"
        "Anything else? 😊"
    )
    spoken = front_end.to_spoken(reply, "a", TextSettings())
    for mark in ("*", "#", "[", "]", "(", "http", "8123", "-", "🌙", "✅", "😊", "%", "°"):
        assert mark not in spoken.text, (mark, spoken.text)
    assert "the dashboard." in spoken.text and "forty percent" in spoken.text
    assert spoken.text.count(".") >= 4  # heading and list items are sentences of their own
    phonemes = speaker.phonemes(reply)
    assert "❓" not in phonemes


@pytest.mark.parametrize(
    ("ssml", "needle"),
    [
        ("<speak>Hello <break time='300ms'></speak>", "not well-formed"),
        ("<speak>Hello <audio src='x.wav'/></speak>", "<audio> is not part"),
        ("<speak><phoneme ph='ʃXv'>Siobhan</phoneme></speak>", "not in Kokoro's vocabulary"),
        ("<speak><break time='soon'/></speak>", "give a time"),
        ("<speak><prosody rate='ludicrous'>hi</prosody></speak>", "rate='ludicrous'"),
        ("<speak><say-as interpret-as='poem'>hi</say-as></speak>", "interpret-as='poem'"),
        ("<speak><sub>WWW</sub></speak>", "alias"),
        (
            '<?xml version="1.0"?><!DOCTYPE speak [<!ENTITY a "aaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
            "<speak>&b;</speak>",
            "forbidden XML feature",
        ),
    ],
)
def test_malformed_ssml_is_refused_clearly(front_end, ssml, needle):
    with pytest.raises(BadText) as caught:
        front_end.to_spoken(ssml, "a", TextSettings(markup="ssml"))
    assert caught.value.code == ErrorCode.BAD_TEXT
    assert needle in caught.value.message
    assert caught.value.advice and "<say-as" in caught.value.advice


def test_ssml_breaks_and_rates_reach_the_prepared_pieces(front_end, speaker):
    text = '<speak>One <break time="400ms"/> two <prosody rate="x-slow">three</prosody></speak>'
    spoken = front_end.to_spoken(text, "a", TextSettings())
    pieces = prepare_pieces(speaker.pipeline("a"), spoken, "a")
    assert [(p.rate, p.pause_after_s) for p in pieces] == [(1.0, 0.4), (1.0, 0.0), (0.5, 0.0)]


def test_text_with_nothing_to_normalize_never_reaches_nemo(front_end):
    english = front_end.spoken_forms["a"]
    calls: list[str] = []

    def counting(text: str) -> str:
        calls.append(text)
        return english.normalize(text)

    counted = FrontEnd({"a": EnglishSpokenForm(counting, english.whitelist)})
    counted.to_spoken("Sure, I can help you with that right away!", "a", TextSettings())
    assert calls == []
    counted.to_spoken("Sure, the oven is at 180°C right away!", "a", TextSettings())
    assert calls == ["the oven is at 180°C right away!"]  # the word and four words of context on either side


def test_inputs_and_outputs_pickle(front_end, speaker):
    settings = TextSettings(markup="markdown", lexicon=parse_lexicon([{"word": "Siobhan", "phonemes": "ʃɪvˈɔn"}]))
    spoken = front_end.to_spoken("**Siobhan** paid $5.", "a", pickle.loads(pickle.dumps(settings)))
    assert pickle.loads(pickle.dumps(spoken)) == spoken
    pieces = prepare_pieces(speaker.pipeline("a"), spoken, "a")
    assert pickle.loads(pickle.dumps(pieces)) == pieces


def test_markdown_marks_of_a_chunk_cut_open_are_not_read(front_end):
    assert front_end.to_spoken("The **living room", "a", TextSettings()).text == "The living room"
    assert front_end.to_spoken("lights** are on_", "a", TextSettings()).text == "lights are on"


def test_other_languages_get_markup_and_lexicon_only(front_end):
    settings = TextSettings(lexicon=parse_lexicon([{"word": "Hola", "respelling": "ola"}]))
    spoken = front_end.to_spoken("**Hola**, son las 5:30 🎉", "e", settings)
    assert spoken.text == "ola, son las 5:30"


def test_word_spans_cross_the_wire():
    words = (WordTiming("minus", 0.0, 0.2, 6, 10), WordTiming("Hi", 0.2, 0.3))
    frames = ServerProtocol().send(SentenceFinished(3, 0.5, words, 0.1))
    body = json.loads(frames[0])
    assert body["words"][0] == {"word": "minus", "start_s": 0.0, "end_s": 0.2, "start_char": 6, "end_char": 10}
    assert "start_char" not in body["words"][1]
    client = ClientProtocol()
    assert client.receive(frames[0]) == [SentenceFinished(3, 0.5, words, 0.1)]


def test_a_chunk_of_punctuation_alone_is_still_a_pause(front_end):
    assert front_end.to_spoken("...", "a", TextSettings()).text == "..."
    assert front_end.to_spoken("Hi ... there 🎉", "a", TextSettings()).text == "Hi... there"
