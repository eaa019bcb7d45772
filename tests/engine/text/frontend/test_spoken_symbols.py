"""Numbers, and the signs, units, currencies, dates and times around them, said in each non-English language.

The pure rewrite first, then through the real front-end and G2P: a console sentence as a thermostat, a shop or a
calendar writes it gives the same phonemes as the same sentence written out in words by hand.
"""

from __future__ import annotations

import pytest

from voicedesk.engine.commands import main
from voicedesk.engine.model import weights
from voicedesk.engine.model.g2p_pipelines import G2PPipelines
from voicedesk.engine.text.frontend.spoken_languages import parse_number, spoken_form

REWRITES = [
    (
        "e",
        "Hace -5 °C y 72 % a las 7:45.",
        "Hace menos cinco grados Celsius y setenta y dos por ciento a las siete y cuarenta y cinco.",
    ),
    (
        "e",
        "A la 1:05, 1 km, 21 km, $5 o 1 £.",
        "A la una y cinco, un kilómetro, veintiún kilómetros, cinco dólares o una libra.",
    ),
    ("e", "Cuesta 1.250,00 € o 3,20 €.", "Cuesta mil doscientos cincuenta euros o tres euros con veinte."),
    (
        "f",
        "Il fait -5\u202f°C, 72\u00a0% à 7 h 45.",
        "Il fait moins cinq degrés Celsius, soixante-douze pour cent à sept heures quarante-cinq.",
    ),
    (
        "f",
        "À 1h, 18h30 ; 1,5 km et 12 500,5 €.",
        "À une heure, dix-huit heures trente ; un virgule cinq kilomètre et douze mille cinq cents virgule cinq euros.",
    ),
    (
        "i",
        "Ci sono -5 °C alle 1:15, costa 3,20 €.",
        "Ci sono meno cinque gradi Celsius alle una e quindici, costa tre euro e venti.",
    ),
    (
        "p",
        "Faz -5 °C às 1:15; R$ 1.250,00 e R$ 3,20.",
        "Faz menos cinco graus Celsius às uma hora e quinze; mil duzentos e"
        " cinquenta reais e três reais e vinte centavos.",
    ),
    (
        "h",
        "तापमान -5 °C है, 7:45 बजे, ₹1,25,000 और ₹1,250.50।",
        "तापमान माइनस पाँच डिग्री सेल्सियस है, सात बजकर पैंतालीस"
        " मिनट, एक लाख पच्चीस हज़ार रुपये और एक हज़ार दो सौ पचास रुपये पचास पैसे।",
    ),
    ("h", "वज़न 12.5 किलो, तारीख 15/03/2025।", "वज़न बारह दशमलव पाँच किलो, तारीख पंद्रह मार्च दो हज़ार पच्चीस।"),
    (
        "z",
        "气温-5°C，7:45，湿度 72 %，¥8.60，3,000元。",
        "气温负五摄氏度，七点四十五分，湿度 百分之七十二，八元六角，三千元。",
    ),
    ("z", "日期15/03/2025，¥8.05，$3.50。", "日期二零二五年三月十五日，八元零五分，三点五零美元。"),
    (
        "e",
        "El 15/03/2025, el 2024-05-01 y el 03/15/2025.",
        "El quince de marzo de dos mil veinticinco, el uno de mayo de"
        " dos mil veinticuatro y el quince de marzo de dos mil veinticinco.",
    ),
    ("f", "Le 1/4/2025.", "Le premier avril deux mille vingt-cinq."),
    ("e", "Versión 1.2.3, código 007.", "Versión uno punto dos punto tres, código cero cero siete."),
    ("e", "Papel A4, COVID-19.", "Papel A cuatro, COVID-diecinueve."),
    ("j", "4月1日、20日、8時10分、3,000円、¥500、-5°C。", "4月1日、20日、8時10分、3000円、500円、マイナス5度。"),
]
"""Japanese numbers stay digits with their counters: Open JTalk reads them (``LanguageG2P``)."""


@pytest.mark.parametrize(("code", "written", "spoken"), REWRITES)
def test_numbers_and_what_stands_around_them_are_said_in_the_language(code, written, spoken):
    assert spoken_form(written, code) == spoken


@pytest.mark.parametrize(
    ("written", "decimal_comma", "parsed"),
    [
        ("1.250,00", True, ("1250", ",", "00")),
        ("1,250.50", True, ("1250", ".", "50")),
        ("1.000", True, ("1000", "", "")),
        ("1.5", True, ("1", ".", "5")),
        ("3,000", False, ("3000", "", "")),
        ("3,5", False, ("3", ",", "5")),
        ("1,25,000", False, ("125000", "", "")),
        ("12\u202f500,5", True, ("12500", ",", "5")),
        ("0.500", True, ("0", ".", "500")),
        ("1.2.3", True, None),
        ("1,2,3", False, None),
    ],
)
def test_a_number_is_parsed_the_way_its_language_writes_it(written, decimal_comma, parsed):
    assert parse_number(written, decimal_comma) == parsed


@pytest.fixture(scope="module")
def pipelines() -> G2PPipelines:
    return G2PPipelines(weights.REPO_ID, False, weights.cached_vocab())


def said(pipelines: G2PPipelines, code: str, text: str) -> str:
    phonemes = pipelines.get(code).g2p(text)[0]
    # Japanese: where MeCab puts word spaces differs between kanji and the kana written by hand.
    return phonemes.replace(" ", "") if code == "j" else phonemes


# Console sentences: written as a device writes them, and written out in words by hand.
SENTENCES = {
    "e": [
        ("El total es 1.250,00 €.", "El total es mil doscientos cincuenta euros."),
        ("Cuesta 3,20 €.", "Cuesta tres euros con veinte."),
        ("Hay 12.500 coches.", "Hay doce mil quinientos coches."),
        ("La cita es el 15/03/2025.", "La cita es el quince de marzo de dos mil veinticinco."),
        ("Quedan 1.250,5 km.", "Quedan mil doscientos cincuenta coma cinco kilómetros."),
        ("Fuera hay -3,5 °C.", "Fuera hay menos tres coma cinco grados Celsius."),
    ],
    "f": [
        ("Le total est de 1 250,00 €.", "Le total est de mille deux cent cinquante euros."),
        ("Ça coûte 3,20 €.", "Ça coûte trois euros vingt."),
        ("Rendez-vous le 15/03/2025.", "Rendez-vous le quinze mars deux mille vingt-cinq."),
        ("Il reste 12,5 km.", "Il reste douze virgule cinq kilomètres."),
    ],
    "i": [
        ("Costa 3,20 €.", "Costa tre euro e venti."),
        ("Ci vediamo il 15/03/2025.", "Ci vediamo il quindici marzo duemilaventicinque."),
        ("Mancano 1.250,5 km.", "Mancano milleduecentocinquanta virgola cinque chilometri."),
    ],
    "p": [
        ("Custa R$ 1.250,00.", "Custa mil duzentos e cinquenta reais."),
        ("Custa R$ 3,20.", "Custa três reais e vinte centavos."),
        ("A consulta é em 15/03/2025.", "A consulta é em quinze de março de dois mil e vinte e cinco."),
        ("Faltam 1.250,5 km.", "Faltam mil duzentos e cinquenta vírgula cinco quilômetros."),
    ],
    "h": [
        ("कुल ₹1,25,000 है।", "कुल एक लाख पच्चीस हज़ार रुपये है।"),
        ("कीमत ₹1,250.50 है।", "कीमत एक हज़ार दो सौ पचास रुपये पचास पैसे है।"),
        ("वज़न 12.5 किलो है।", "वज़न बारह दशमलव पाँच किलो है।"),
        ("तारीख 15/03/2025 है।", "तारीख पंद्रह मार्च दो हज़ार पच्चीस है।"),
    ],
    "j": [
        ("3,000円です。", "さんぜんえんです。"),
        ("4月1日です。", "しがつついたちです。"),
        ("20日に会います。", "はつかに会います。"),
        ("8時10分です。", "はちじじゅっぷんです。"),
        ("気温は-5°Cです。", "気温はマイナスごどです。"),
    ],
    "z": [
        ("共¥8.60。", "共八元六角。"),
        ("共3,000元。", "共三千元。"),
        ("湿度 72 %。", "湿度百分之七十二。"),
        ("日期是15/03/2025。", "日期是二零二五年三月十五日。"),
        ("体重12.5公斤。", "体重十二点五公斤。"),
    ],
}


@pytest.mark.parametrize(
    ("code", "written", "by_hand"), [(code, w, h) for code, pairs in SENTENCES.items() for w, h in pairs]
)
def test_a_console_sentence_sounds_as_written_out_by_hand(pipelines, code, written, by_hand):
    assert said(pipelines, code, written) == said(pipelines, code, by_hand)


def phonemes(capsys, voice: str, text: str) -> str:
    """All model calls' phonemes in a row (the two texts' sentences may be grouped into calls differently)."""
    assert main(["phonemes", "--voice", voice, text]) == 0
    return " ".join(capsys.readouterr().out.split())


def test_voicedesk_phonemes_prints_the_spoken_numbers(capsys):
    """Through the front-end too: a "%" or "€" after a space (as French writes it) is not dropped before the
    language's stage can say it, and `voicedesk phonemes` prints what a session sends."""
    written = phonemes(capsys, "ff_siwis", "Il fait -5 °C. Il y a 72 %. Ça fait 1 250,00 €.")
    by_hand = "Il fait moins cinq degrés Celsius. Il y a soixante-douze pour cent. Ça fait mille deux cent cinquante"
    by_hand += " euros."
    assert written == phonemes(capsys, "ff_siwis", by_hand)
