"""The chunker for each of Kokoro's languages: sentence and clause ends, the phoneme ceiling through the real G2P,
and the same chunks however the text is split into fragments."""

from __future__ import annotations

import random

import pytest

from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker
from voicedesk.engine.text.chunking.phoneme_estimate import PhonemeEstimator, char_kind_for

PROSE = {
    "e": "El tren de alta velocidad salió de la estación central a las ocho de la mañana con cuatrocientos "
    "pasajeros. ¿Sabías que la ciudad tiene más de doscientos museos? ¡Es increíble! Mañana visitaremos el barrio "
    "antiguo, donde las calles son estrechas y empinadas.",
    "f": "Le train à grande vitesse a quitté la gare centrale à huit heures du matin avec quatre cents passagers. "
    "Saviez-vous que la ville compte plus de deux cents musées ? C’est incroyable ! Demain, nous visiterons le "
    "vieux quartier, où les rues sont étroites et escarpées.",
    "h": "तेज़ रफ़्तार वाली ट्रेन सुबह आठ बजे चार सौ यात्रियों के साथ मुख्य स्टेशन से निकली। क्या आप जानते हैं कि शहर "
    "में दो सौ से ज़्यादा संग्रहालय हैं? यह अविश्वसनीय है! कल हम पुराने मोहल्ले में जाएँगे, जहाँ गलियाँ संकरी और खड़ी हैं।",
    "i": "Il treno ad alta velocità è partito dalla stazione centrale alle otto del mattino con quattrocento "
    "passeggeri. Sapevi che la città ha più di duecento musei? È incredibile! Domani visiteremo il quartiere "
    "antico, dove le strade sono strette e ripide.",
    "p": "O trem de alta velocidade saiu da estação central às oito da manhã com quatrocentos passageiros. Você "
    "sabia que a cidade tem mais de duzentos museus? É incrível! Amanhã visitaremos o bairro antigo, onde as ruas "
    "são estreitas e íngremes.",
    "j": "高速列車は朝八時に四百人の乗客を乗せて中央駅を出発しました。この街には二百以上の博物館があることを知って"
    "いましたか？信じられません！明日は古い町並みを訪れます。そこの通りは狭くて急な坂道です。",
    "z": "高速列车早上八点载着四百名乘客从中央车站出发。你知道这座城市有两百多个博物馆吗？真是难以置信！明天我们将"
    "参观老城区，那里的街道又窄又陡。",
}


def chunks_of(text: str, language: str | None, pieces: list[str] | None = None, **options) -> list[str]:
    chunker = IncrementalSentenceChunker(language=language, **options)
    out: list[str] = []
    for piece in pieces if pieces is not None else [text]:
        out += chunker.feed(piece)
    tail = chunker.flush()
    return out + ([tail] if tail else [])


def random_pieces(text: str, rng: random.Random) -> list[str]:
    cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(1, 40))))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


@pytest.mark.parametrize(
    ("language", "text", "expected"),
    [
        (
            "e",
            "¿Dónde está la estación de tren? ¡Qué lejos está! Gracias por tu ayuda, amigo mío.",
            ["¿Dónde está la estación de tren?", "¡Qué lejos está! Gracias por tu ayuda, amigo mío."],
        ),
        (
            "f",
            "Bonjour ! Comment allez-vous ? Très bien : merci beaucoup ; et vous ? « Oui », dit-il. Voilà.",
            ["Bonjour ! Comment allez-vous ?", "Très bien : merci beaucoup ; et vous ?", "« Oui », dit-il. Voilà."],
        ),
        (
            "h",
            "मेरा नाम राम है। मैं दिल्ली में रहता हूँ। आप कैसे हैं?",
            ["मेरा नाम राम है।", "मैं दिल्ली में रहता हूँ।", "आप कैसे हैं?"],
        ),
        (
            "j",
            "今日はいい天気ですね。明日も晴れるでしょうか？はい、そう思います！",
            ["今日はいい天気ですね。", "明日も晴れるでしょうか？", "はい、そう思います！"],
        ),
        (
            "z",
            "我今天很高兴。你呢？我们一起去公园吧！好的，走吧。",
            ["我今天很高兴。", "你呢？我们一起去公园吧！", "好的，走吧。"],
        ),
        ("j", "はい、わかりました。少々お待ちください。", ["はい、わかりました。", "少々お待ちください。"]),
    ],
)
def test_sentence_and_clause_ends_of_each_language(language, text, expected):
    assert chunks_of(text, language) == expected


@pytest.mark.parametrize("language", list(PROSE))
def test_any_fragmentation_gives_the_same_chunks(language):
    text = PROSE[language] * 3
    whole = chunks_of(text, language)
    rng = random.Random(language)
    for _ in range(20):
        assert chunks_of(text, language, random_pieces(text, rng)) == whole


def estimate_phonemes_for(text: str, language: str | None) -> int:
    """The chunker's estimate of ``text`` for a voice of ``language`` (Kokoro's code)."""
    estimator = PhonemeEstimator(kind_of=char_kind_for(language))
    for c in text:
        estimator.add(c)
    return estimator.phonemes


@pytest.mark.parametrize("language", list(PROSE))
def test_no_chunk_of_long_text_overflows_the_model_through_the_real_g2p(synthesizer, language):
    text = " ".join([PROSE[language]] * 6) if language not in "jz" else PROSE[language] * 6
    g2p = synthesizer.pipeline(language).g2p
    chunks = chunks_of(text, language, early_first_fragment=False, min_sentence_chars=10_000)
    assert len(chunks) > 1
    for chunk in chunks:
        phonemes, _ = g2p(chunk)
        assert len(phonemes) <= 510, f"{len(phonemes)} phonemes in {chunk[:30]!r}…"
        assert estimate_phonemes_for(chunk, language) >= len(phonemes)  # the estimate errs high
    # With the language's own weights a chunk holds most of the 510 phonemes, not a sliver of them.
    assert max(len(g2p(chunk)[0]) for chunk in chunks) > 200


@pytest.mark.parametrize(("voice", "most_chars"), [("af_heart", 40), ("jf_alpha", 1000)])
def test_the_session_chunks_by_the_voices_language(voice, most_chars):
    from voicedesk.engine.session import SessionCore

    core = SessionCore(IncrementalSentenceChunker(early_first_fragment=False, min_sentence_chars=10_000))
    core.configure(voice=voice)
    core.synthesize(PROSE["j"] * 6, 0.0)
    job, _events = core.next_job(0.0)
    # English weights (16 phonemes a character) cut Japanese every ~30 characters; Japanese ones fill the chunk.
    assert (len(job.text) <= most_chars) and (voice == "af_heart" or len(job.text) > 80)


@pytest.mark.parametrize(
    ("language", "text", "first"),
    [
        (
            "j",
            "私は昨日の午後に友達と一緒に新しくできた駅前の大きな本屋へ行きました。それから帰りました。",
            "私は昨日の午後に友達と一緒に",
        ),
        (
            "z",
            "我昨天下午和朋友一起去了车站前面新开的那家很大的书店然后在咖啡馆喝了咖啡。今天天气很好。",
            "我昨天下午和朋友一起去了",
        ),
        # Without the language, any character boundary at the limit (mid-word: "一|緒").
        (None, "私は昨日の午後に友達と一緒に新しくできた駅前の大きな本屋へ行きました。", "私は昨日の午後に友達と一"),
        # No phrase boundary in sight: cut after a few more characters all the same, never waiting for the end.
        (
            "j",
            "東京都特許許可局長今日急遽休暇許可拒否東京都特許許可局長今日急遽休暇許可拒否。",
            "東京都特許許可局長今日急遽休暇許可拒否東",
        ),
    ],
)
def test_the_early_first_fragment_of_unspaced_text_ends_at_a_phrase_of_the_language(language, text, first):
    chunks = chunks_of(text, language)
    assert chunks[0] == first
    rng = random.Random(7)
    for _ in range(10):
        assert chunks_of(text, language, random_pieces(text, rng)) == chunks
