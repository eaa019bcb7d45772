"""Signs, units, currencies and clock times said in each non-English language Kokoro speaks (English has NeMo).

The pure rewrite first, then through the real front-end and G2P (``voicedesk phonemes``): the text as a thermostat
or a timetable writes it gives the same phonemes as the same sentence written out in words by hand.
"""

from __future__ import annotations

import pytest

from voicedesk.engine.commands import main
from voicedesk.engine.text.frontend.spoken_languages import spoken_form
from voicedesk.engine.text.frontend.spoken_symbols import symbols_spoken


@pytest.mark.parametrize(
    ("code", "written", "spoken"),
    [
        ("e", "Hace -5 °C y 72 % a las 7:45.", "Hace menos 5 grados Celsius y 72 por ciento a las 7 y 45."),
        ("e", "A la 1:05, 1 km, 3 km, 90 km/h.", "A la una y 5, 1 kilómetro, 3 kilómetros, 90 kilómetros por hora."),
        ("e", "Cuesta $5 o 20 €; 5 manzanas.", "Cuesta 5 dólares o 20 euros; 5 manzanas."),
        ("f", "Il fait -5\u202f°C, 72\u00a0% à 7 h 45.", "Il fait moins 5 degrés Celsius, 72 pour cent à 7 heures 45."),
        ("f", "À 1h, 18h30 ; 1,5 km et 3 km.", "À une heure, 18 heures 30 ; 1,5 kilomètre et 3 kilomètres."),
        ("i", "Ci sono -5 °C alle 1:15 e 20 €.", "Ci sono meno 5 gradi Celsius alle una e 15 e 20 euro."),
        (
            "p",
            "Faz -5 °C às 1:15; R$ 20 e 2 kWh.",
            "Faz menos 5 graus Celsius às uma hora e 15; 20 reais e 2 quilowatts-hora.",
        ),
        (
            "h",
            "तापमान -5 °C है, 72% नमी, 7:45 बजे, ₹500।",
            "तापमान माइनस 5 डिग्री सेल्सियस है, 72 प्रतिशत नमी, 7 बजकर 45 मिनट, 500 रुपये।",
        ),
        ("j", "気温は-5°C、7:45に3kmです。¥500。", "気温はマイナス5度、7時45分に3キロメートルです。500円。"),
        ("z", "气温-5°C，7:45，3 km，20 €。", "气温-5摄氏度，7点45分，3公里，20欧元。"),
    ],
)
def test_signs_units_currencies_and_times_are_said_in_the_language(code, written, spoken):
    assert symbols_spoken(written, code) == spoken


@pytest.mark.parametrize(
    "written",
    ["COVID-19 y el 2024-05-01.", "Versión 1.2.3.", "El 10:30:15 no es una hora.", "5 manzanas."],
)
def test_what_is_not_a_sign_a_unit_or_a_time_is_left_alone(written):
    assert symbols_spoken(written, "e") == written


def test_english_is_left_to_its_own_front_end():
    assert symbols_spoken("It is -5 °C at 7:45.", "a") == "It is -5 °C at 7:45."


def test_a_decimal_comma_is_said_as_a_comma_in_spanish():
    assert spoken_form("Pesa 3,5 kg.", "e") == "Pesa tres coma cinco kilogramos."


def phonemes(capsys, voice: str, text: str) -> str:
    """All model calls' phonemes in a row (the two texts' sentences may be grouped into calls differently)."""
    assert main(["phonemes", "--voice", voice, text]) == 0
    return " ".join(capsys.readouterr().out.split())


# Short sentences: espeak-ng's stress and liaison depend on the words around, so both texts must have the same
# sentences whichever calls they are grouped into.
@pytest.mark.parametrize(
    ("voice", "written", "by_hand"),
    [
        (
            "ef_dora",
            "Hace -5 °C. Hay 72 %. Son las 7:45. Son 20 €.",
            "Hace menos 5 grados Celsius. Hay 72 por ciento. Son las 7 y 45. Son 20 euros.",
        ),
        (
            "ff_siwis",
            "Il fait -5 °C. Il y a 72 %. Il est 7 h 45. Ça fait 20 €.",
            "Il fait moins 5 degrés Celsius. Il y a 72 pour cent. Il est 7 heures 45. Ça fait 20 euros.",
        ),
        (
            "if_sara",
            "Ci sono -5 °C. Umidità 72 %. Sono le 7:45.",
            "Ci sono meno 5 gradi Celsius. Umidità 72 per cento. Sono le 7 e 45.",
        ),
        (
            "pf_dora",
            "Faz -5 °C. Umidade 72 %. São 7:45.",
            "Faz menos 5 graus Celsius. Umidade 72 por cento. São 7 horas e 45.",
        ),
        ("hf_alpha", "तापमान -5 °C है। नमी 72 % है।", "तापमान माइनस 5 डिग्री सेल्सियस है। नमी 72 प्रतिशत है।"),
        ("jf_alpha", "気温は-5°Cです。湿度は72 %です。", "気温はマイナス5度です。湿度は72パーセントです。"),
        ("zf_xiaobei", "气温-5°C。现在7:45。共20 €。", "气温-5摄氏度。现在7点45分。共20欧元。"),
    ],
)
def test_the_model_receives_the_words_a_person_would_write_out(capsys, voice, written, by_hand):
    """Through the real front-end and G2P: a stray "%" or "€" (with a space before it, as French writes it) is
    not dropped before the language's G2P stage can say it, and `voicedesk phonemes` prints what a session sends."""
    said = phonemes(capsys, voice, written)
    assert said == phonemes(capsys, voice, by_hand)
    assert len(said.split()) >= len(written.split()) - 3
