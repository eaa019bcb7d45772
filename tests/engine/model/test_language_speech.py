"""Each of Kokoro's nine languages, offline, through the real G2P and the real model (random weights).

Two short sentences with a number per language: the phonemes are non-empty and all in the model's vocabulary,
the audio is exactly as long as the phonemes say (durations are pinned), and the number is read as words of the
voice's language: the text with the digits gives the same phonemes as the text with the number spelled out in
that language (num2words, or cn2an for Mandarin; Hindi's word is written out, num2words has no Hindi).
"""

from __future__ import annotations

import re

import cn2an
import pytest
import torch
from num2words import num2words

from tests.support.fake_hf_cache import PINNED_FRAMES, SAMPLES_PER_FRAME, random_voice_pack

# voice, text with a number, the number, that number in words of the language
CASES = {
    "a": ("af_heart", "I have 7 cats. They are fine.", lambda n: num2words(n, lang="en")),
    "b": ("bf_emma", "I have 7 cats. They are fine.", lambda n: num2words(n, lang="en")),
    "e": ("ef_dora", "Tengo 7 gatos. ¿Y tú?", lambda n: num2words(n, lang="es")),
    "f": ("ff_siwis", "J'ai 7 chats. Et toi ?", lambda n: num2words(n, lang="fr")),
    "h": ("hf_alpha", "मेरे पास 7 बिल्लियाँ हैं। और तुम?", lambda n: {7: "सात"}[n]),
    "i": ("if_sara", "Ho 7 gatti. E tu?", lambda n: num2words(n, lang="it")),
    "j": ("jf_alpha", "猫が7匹います。あなたは？", lambda n: num2words(n, lang="ja")),
    "p": ("pf_dora", "Eu tenho 7 gatos. E você?", lambda n: num2words(n, lang="pt_BR")),
    "z": ("zf_xiaobei", "我有7只猫。你呢？", lambda n: cn2an.an2cn(str(n))),
}


@pytest.fixture(scope="module")
def voice_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A random voice pack per language, saved under the name of one of its Kokoro voices (the file's name
    gives the language, as for any .pt voice)."""
    folder = tmp_path_factory.mktemp("voices")
    paths = {}
    for index, (code, (name, _text, _words)) in enumerate(CASES.items()):
        path = folder / f"{name}.pt"
        torch.save(random_voice_pack(100 + index), path)
        paths[code] = str(path)
    return paths


@pytest.mark.parametrize("code", list(CASES))
def test_two_sentences_with_a_number_speak_in_the_voice_language(synthesizer, voice_files, code):
    _name, text, words = CASES[code]
    voice = voice_files[code]
    torch.manual_seed(3)
    result = synthesizer.synthesize(text, voice, 1.0)

    spoken = result.phonemes.replace(" ", "")
    assert spoken, f"no phonemes for {text!r}"
    outside = sorted({c for c in result.phonemes if c not in synthesizer.model.vocab and c != " "})
    assert outside == [], f"phonemes the model cannot say: {outside}"
    tokens = sum(1 for c in result.phonemes if c in synthesizer.model.vocab)
    # One model call (two short sentences are one chunk): its phonemes plus the two boundary tokens, each
    # PINNED_FRAMES frames of 600 samples.
    assert len(result.audio) == (tokens + 2) * PINNED_FRAMES * SAMPLES_PER_FRAME
    assert torch.isfinite(torch.from_numpy(result.audio)).all()
    # Word timings where the G2P gives them (misaki's English); other languages are timed by the sentence.
    assert bool(result.words) == (code in "ab")

    g2p = synthesizer.pipeline(code).g2p
    with_digits, _ = g2p(text)
    spelled, _ = g2p(re.sub(r"\d+", lambda m: words(int(m.group())), text, count=1))
    if code == "j":  # Open JTalk reads 7匹 as one word (ななひき), MeCab spaces 七 and 匹 apart
        with_digits, spelled = with_digits.replace(" ", ""), spelled.replace(" ", "")
    assert with_digits == spelled, f"{text!r}: the number is not read as {words(7)!r}"
    assert with_digits.replace(" ", "") == spoken or code in "ab"


@pytest.mark.parametrize(
    ("code", "text", "name"),
    [
        ("j", "明日はGoogleで調べます。", "Google"),
        ("z", "我用Google搜索。", "Google"),
        ("j", "ＮＡＳＡの話です。", "NASA"),
        ("j", "José Müllerさんが来ました。", "José Müller"),
        ("z", "我认识Zoë。", "Zoë"),
    ],
)
def test_an_english_name_inside_japanese_or_mandarin_is_spoken_in_english(synthesizer, code, text, name):
    phonemes, _ = synthesizer.pipeline(code).g2p(text)
    english, _ = synthesizer.pipeline("a").g2p(name)
    assert english.strip() in phonemes
    assert not any(c.isupper() and c not in synthesizer.model.vocab for c in phonemes)


@pytest.mark.parametrize(
    ("code", "text", "run", "reader", "reading"),
    [
        ("a", "田中さん is here.", "田中さん", "j", "たなかさん"),
        ("b", "We met 田中 in 東京でした.", "東京でした", "j", "とうきょうでした"),
        ("e", "Llamó 田中さん ayer.", "田中さん", "j", "たなかさん"),
        ("f", "Il vit à 北京.", "北京", "z", "北京"),
        ("h", "वह 北京 में है।", "北京", "z", "北京"),
    ],
)
def test_kana_and_kanji_in_another_voice_are_read_by_their_language_never_named(
    synthesizer, code, text, run, reader, reading
):
    """misaki's English and espeak-ng said "Chinese letter" / "chino símbolo" for each character."""
    phonemes, _ = synthesizer.pipeline(code).g2p(text)
    expected, _ = synthesizer.pipeline(reader).g2p(reading)
    assert expected.replace(" ", "") in phonemes.replace(" ", "")
    named, _ = synthesizer.pipeline(code).g2p({"a": "letter", "b": "letter", "e": "símbolo"}.get(code, "zzz"))
    assert named.strip(" .") not in phonemes


def test_an_english_name_inside_spanish_is_read_by_spanish_rules(synthesizer):
    phonemes, _ = synthesizer.pipeline("e").g2p("Busca en Google, por favor.")
    assert "ˈuɣəl" in phonemes  # espeak-ng's Spanish reading ("ɡˈuɣəl" here, "ɣˈuɣəl" after a vowel): spoken


def test_voicedesk_phonemes_prints_what_the_synthesizer_sends_in_another_language(synthesizer, voice_files, capsys):
    from voicedesk.engine.commands import main

    text = "Il fait -5 °C, 72 % à 7 h 45."
    result = synthesizer.synthesize(text, voice_files["f"], 1.0)
    assert main(["phonemes", "--voice", "ff_siwis", text]) == 0
    assert (
        " ".join(capsys.readouterr().out.splitlines()) == result.phonemes
    )  # its calls, joined as the result joins them
    assert "sɛlsjˈys" in result.phonemes and "puʁ sˈɑ̃" in result.phonemes  # "Celsius", "pour cent"
