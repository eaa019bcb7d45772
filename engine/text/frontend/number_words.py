"""Whole numbers in the words of each non-English language: num2words for es, fr, it, pt; Hindi from its irregular words
and the Indian scale (num2words lacks it); cn2an for Mandarin. Japanese numbers stay digits, for Open JTalk's counter
readings."""

from __future__ import annotations

import re
from functools import lru_cache

from num2words import num2words

MAX_SPELLED_DIGITS = 15
"""Longer digit strings (and those with a leading zero) are read digit by digit, as people read codes."""

HINDI_0_99 = """शून्य एक दो तीन चार पाँच छह सात आठ नौ दस ग्यारह बारह तेरह चौदह पंद्रह सोलह सत्रह अठारह उन्नीस बीस इक्कीस
बाईस तेईस चौबीस पच्चीस छब्बीस सत्ताईस अट्ठाईस उनतीस तीस इकतीस बत्तीस तैंतीस चौंतीस पैंतीस छत्तीस सैंतीस अड़तीस उनतालीस
चालीस इकतालीस बयालीस तैंतालीस चवालीस पैंतालीस छियालीस सैंतालीस अड़तालीस उनचास पचास इक्यावन बावन तिरपन चौवन पचपन
छप्पन सत्तावन अट्ठावन उनसठ साठ इकसठ बासठ तिरसठ चौंसठ पैंसठ छियासठ सड़सठ अड़सठ उनहत्तर सत्तर इकहत्तर बहत्तर तिहत्तर
चौहत्तर पचहत्तर छिहत्तर सतहत्तर अठहत्तर उन्यासी अस्सी इक्यासी बयासी तिरासी चौरासी पचासी छियासी सत्तासी अट्ठासी नवासी
नब्बे इक्यानवे बानवे तिरानवे चौरानवे पचानवे छियानवे सत्तानवे अट्ठानवे निन्यानवे""".split()
HINDI_SCALE = ((10**9, "अरब"), (10**7, "करोड़"), (10**5, "लाख"), (1000, "हज़ार"), (100, "सौ"))
CHINESE_DIGITS = "零一二三四五六七八九"


def hindi(number: int) -> str:
    if number < 100:
        return HINDI_0_99[number]
    for size, word in HINDI_SCALE:
        if number >= size:
            high, rest = divmod(number, size)
            said = f"{hindi(high)} {word}"
            return f"{said} {hindi(rest)}" if rest else said
    raise AssertionError(number)  # unreachable: every number of 100 or more has a scale word


def chinese(number: int) -> str:
    import cn2an

    return cn2an.an2cn(str(number))


def spelled_by_num2words(lang: str):
    # num2words' Portuguese writes "mil, duzentos": no comma (a pause) belongs there.
    return lambda number: num2words(number, lang=lang).replace(",", "")


def whole(digits: str, spell) -> str:
    """The words for a run of digits: as one number, or digit by digit (``007``, a 20-digit code)."""
    if len(digits) > MAX_SPELLED_DIGITS or (len(digits) > 1 and digits[0] == "0"):
        return " ".join(spell(int(d)) for d in digits)
    return spell(int(digits))


JAPANESE_NUMBER = re.compile(r"(?:\d+(?:\.\d+)?[\u4e00-\u9fff々ヶ]{0,2})+")
"""A Japanese number with the counters after it (up to two kanji): ``4月1日``, ``8時10分``, ``3000円``."""


@lru_cache(maxsize=1024)
def japanese_reading(written: str) -> str:
    """Open JTalk's reading of a ``JAPANESE_NUMBER`` in katakana (``20日`` ハツカ)."""
    import pyopenjtalk

    return pyopenjtalk.g2p(written, kana=True)
