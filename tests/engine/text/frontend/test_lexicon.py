"""The operator's lexicon: entries are checked against Kokoro's real vocabulary and refused by name."""

from __future__ import annotations

import json
import pickle

import pytest

from tests.support.fake_hf_cache import CONFIG_ASSET
from voicedesk.engine.text.frontend.lexicon import (
    EMPTY_LEXICON,
    KOKORO_VOCAB,
    Lexicon,
    LexiconEntry,
    LexiconError,
    load_lexicon_file,
    parse_lexicon,
)
from voicedesk.engine.text.frontend.settings import TextSettings, TextSettingsError


def test_vocabulary_constant_is_the_real_config_vocab(hf_home):
    from tests.support.fake_hf_cache import snapshot_path

    served = json.loads((snapshot_path(hf_home) / "config.json").read_text())
    assert frozenset(served["vocab"]) == KOKORO_VOCAB
    assert frozenset(json.loads(CONFIG_ASSET.read_text())["vocab"]) == KOKORO_VOCAB


def test_parse_and_lookup_with_case_rules():
    lexicon = parse_lexicon(
        [
            {"word": "Siobhan", "phonemes": "ʃɪvˈɔn"},
            {"word": "GIF", "respelling": "jif", "case_sensitive": True},
        ]
    )
    assert lexicon.lookup("siobhan") == LexiconEntry("Siobhan", phonemes="ʃɪvˈɔn")
    assert lexicon.lookup("SIOBHAN") is not None
    assert lexicon.lookup("GIF") == LexiconEntry("GIF", respelling="jif", case_sensitive=True)
    assert lexicon.lookup("gif") is None
    assert parse_lexicon(lexicon.to_json()) == lexicon


@pytest.mark.parametrize(
    ("entries", "index", "needle"),
    [
        ([{"word": "Siobhan", "phonemes": "ʃɪvXˈɔn"}], 0, "unknown phoneme symbol 'X'"),
        ([{"word": "ok", "phonemes": "ˈOk"}, {"word": "   ", "phonemes": "ˈO"}], 1, "the word is empty"),
        ([{"word": "", "respelling": "x"}], 0, "the word is empty"),
        ([{"word": "Nguyen", "phonemes": "wˈɪn", "respelling": "win"}], 0, "exactly one of"),
        ([{"word": "Nguyen"}], 0, "exactly one of"),
        ([{"word": "Nguyen", "phonemes": "w(ɪn)"}], 0, "punctuation"),
        ([{"word": "Nguyen", "respelling": "[win](/x/)"}], 0, "no brackets"),
        ([{"word": "Nguyen", "phonemes": "wˈɪn", "weight": 2}], 0, "unknown field(s) weight"),
        ([{"word": "a", "phonemes": "ˈA"}, {"word": "A", "phonemes": "ˈæ"}], 1, "already in the lexicon"),
        ([{"word": 5, "phonemes": "ˈA"}], 0, '"word" is missing'),
        (["Siobhan"], 0, "expected an object"),
    ],
)
def test_bad_entries_are_refused_naming_the_entry(entries, index, needle):
    with pytest.raises(LexiconError) as caught:
        parse_lexicon(entries)
    assert caught.value.index == index
    assert needle in str(caught.value)
    assert f"lexicon entry {index}" in str(caught.value)
    assert caught.value.code == "bad_message"


def test_not_a_list_is_refused():
    with pytest.raises(LexiconError, match="expected a list"):
        parse_lexicon({"Siobhan": "ʃɪvˈɔn"})


def test_merged_over_replaces_the_same_word_only():
    server = parse_lexicon([{"word": "Nguyen", "respelling": "win"}, {"word": "Siobhan", "respelling": "shivawn"}])
    session = parse_lexicon([{"word": "nguyen", "phonemes": "ŋwˈɛn"}])
    merged = session.merged_over(server)
    assert merged.lookup("NGUYEN") == LexiconEntry("nguyen", phonemes="ŋwˈɛn")
    assert merged.lookup("siobhan") == LexiconEntry("Siobhan", respelling="shivawn")
    assert EMPTY_LEXICON.merged_over(server) == server


def test_settings_are_hashable_picklable_and_checked():
    settings = TextSettings(markup="markdown", lexicon=parse_lexicon([{"word": "Siobhan", "phonemes": "ʃɪvˈɔn"}]))
    again = pickle.loads(pickle.dumps(settings))
    assert again == settings and hash(again) == hash(settings)
    assert again.lexicon.lookup("siobhan") is not None
    with pytest.raises(TextSettingsError, match="markup must be one of"):
        TextSettings(markup="html")
    with pytest.raises(TextSettingsError, match="lexicon must be a Lexicon"):
        TextSettings(lexicon=[])  # type: ignore[arg-type]
    assert isinstance(Lexicon(), Lexicon) and not Lexicon()


def test_load_lexicon_file(tmp_path):
    good = tmp_path / "lexicon.json"
    good.write_text(json.dumps([{"word": "Siobhan", "phonemes": "ʃɪvˈɔn"}]), encoding="utf-8")
    assert load_lexicon_file(good).lookup("Siobhan") is not None
    bad = tmp_path / "bad.json"
    bad.write_text("[{", encoding="utf-8")
    with pytest.raises(LexiconError, match="not valid JSON"):
        load_lexicon_file(bad)
    with pytest.raises(LexiconError, match="could not be read"):
        load_lexicon_file(tmp_path / "missing.json")
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps([{"word": "x", "phonemes": "Z"}]), encoding="utf-8")
    with pytest.raises(LexiconError, match=r"lexicon entry 0 \('x'\).*wrong.json"):
        load_lexicon_file(wrong)


def test_a_clients_lexicon_is_capped_in_characters_too():
    from voicedesk.engine.text.frontend.lexicon import MAX_CHARS

    word = "w" * 90
    entries = [{"word": f"{word}{i}", "phonemes": "ɐ" * 190} for i in range(MAX_CHARS // 280 + 1)]
    with pytest.raises(LexiconError, match="characters of words and pronunciations"):
        parse_lexicon(entries)


def test_a_lexicon_travels_to_another_process_with_its_own_hash():
    lexicon = parse_lexicon([{"word": "Siobhan", "phonemes": "ʃɪvˈɔn"}])
    copy = pickle.loads(pickle.dumps(lexicon))
    assert copy == lexicon and hash(copy) == hash(lexicon) and copy.lookup("siobhan") is not None
