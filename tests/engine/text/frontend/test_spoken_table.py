"""What the product says for written text equals what it says for an accepted spoken form: both go through the real
front-end (NeMo grammars, markup, lexicon) and the real misaki G2P, and their phonemes are compared with stress
marks and spaces removed (the issue's table: numbers, money, times, dates, units, symbols, markup, SSML, lexicon).
"""

from __future__ import annotations

import pytest

from voicedesk.engine.text.frontend.lexicon import parse_lexicon
from voicedesk.engine.text.frontend.settings import TextSettings

LEXICON = parse_lexicon(
    [
        {"word": "Siobhan", "phonemes": "ʃɪvˈɔn"},
        {"word": "Nguyen", "respelling": "win"},
        {"word": "GIF", "respelling": "jif", "case_sensitive": True},
        {"word": "Main Street", "respelling": "main strasse"},
    ]
)
SKIP_URLS = TextSettings(urls="skip")
SKIP_CODE = TextSettings(code="skip")
NAME_EMOJI = TextSettings(emoji="name")
WITH_LEXICON = TextSettings(lexicon=LEXICON)

# (category, written, accepted spoken form, language, settings)
CASES = [
    ("cardinal", "I have 3 cats.", "I have three cats.", "a", None),
    ("cardinal", "There are 1,200 people.", "There are one thousand two hundred people.", "a", None),
    ("cardinal", "It weighs 42 tons.", "It weighs forty two tons.", "a", None),
    ("cardinal", "We sold 1,000,000 units.", "We sold one million units.", "a", None),
    ("cardinal", "Room 101 is free.", "Room one hundred and one is free.", "a", None),
    ("signed", "It changed by -3.", "It changed by minus three.", "a", None),
    ("signed", "The score is +3.", "The score is plus three.", "a", None),
    ("signed", "A drop of -12.5 points.", "A drop of minus twelve point five points.", "a", None),
    ("decimal", "Pi is 3.14159.", "Pi is three point one four one five nine.", "a", None),
    ("decimal", "Set it to 0.5 now.", "Set it to zero point five now.", "a", None),
    ("ordinal", "She came 1st.", "She came first.", "a", None),
    ("ordinal", "The 23rd floor.", "The twenty third floor.", "a", None),
    ("ordinal", "On the 2nd day.", "On the second day.", "a", None),
    ("range", "Read pages 10-20.", "Read pages ten to twenty.", "a", None),
    ("range", "It takes 5–7 days.", "It takes five to seven days.", "a", None),
    ("range", "Between 10-20°C today.", "Between ten to twenty degrees Celsius today.", "a", None),
    ("fraction", "Add 1/2 cup.", "Add one half cup.", "a", None),
    ("fraction", "About 3/4 done.", "About three quarters done.", "a", None),
    ("fraction", "Use 2 1/2 spoons.", "Use two and a half spoons.", "a", None),
    ("money", "It costs $42.50.", "It costs forty two dollars fifty cents.", "a", None),
    ("money", "Pay €20 now.", "Pay twenty euros now.", "a", None),
    ("money", "Only £3.50 today.", "Only three pounds fifty pence today.", "b", None),
    ("money", "A $1,000,000 house.", "A one million dollars house.", "a", None),
    ("money", "Just $5.", "Just five dollars.", "a", None),
    ("percent", "Save 50% today.", "Save fifty percent today.", "a", None),
    ("percent", "Rates rose 2.5%.", "Rates rose two point five percent.", "a", None),
    ("percent", "Battery at 100%.", "Battery at one hundred percent.", "a", None),
    ("temperature", "Outside it is -5°C tonight.", "Outside it is minus five degrees Celsius tonight.", "a", None),
    (
        "temperature",
        "It is 21°C in the living room.",
        "It is twenty one degrees Celsius in the living room.",
        "a",
        None,
    ),
    ("temperature", "Set the oven to 70°F.", "Set the oven to seventy degrees Fahrenheit.", "a", None),
    ("temperature", "It is -5 °C outside.", "It is minus five degrees Celsius outside.", "b", None),
    ("temperature", "Turn it up 5° more.", "Turn it up five degrees more.", "a", None),
    ("time", "Motion at the back door at 3:07 PM.", "Motion at the back door at three oh seven PM.", "a", None),
    ("time", "Wake me at 6:45 AM.", "Wake me at six forty five AM.", "a", None),
    ("time", "The train leaves at 14:30.", "The train leaves at fourteen thirty.", "a", None),
    ("time", "It is 5:00 now.", "It is five o'clock now.", "a", None),
    ("time", "Meet at 10am.", "Meet at ten AM.", "a", None),
    ("time", "Dinner at 7 pm.", "Dinner at seven PM.", "b", None),
    ("time", "It starts at 10:30am.", "It starts at ten thirty AM.", "a", None),
    ("date", "Due on 2026-12-03.", "Due on december third twenty twenty six.", "a", None),
    ("date", "On 12/03 we meet.", "On december third we meet.", "a", None),
    ("date", "On 12/03 we meet.", "On the twelfth of march we meet.", "b", None),
    ("date", "Born on 12/03/2026.", "Born on december third twenty twenty six.", "a", None),
    ("date", "Dr. Smith on Mar. 17.", "Doctor Smith on march seventeenth.", "a", None),
    ("date", "Jan 5, 2026 was cold.", "january fifth, twenty twenty six was cold.", "a", None),
    ("date", "It was 5 Jan 2026.", "It was the fifth of january twenty twenty six.", "b", None),
    ("date", "Back in the 1990s.", "Back in the nineteen nineties.", "a", None),
    ("unit", "Wind from the north at 20 km/h.", "Wind from the north at twenty kilometers per hour.", "a", None),
    ("unit", "The dryer uses 1,200 W.", "The dryer uses one thousand two hundred watts.", "a", None),
    ("unit", "The heater draws 5 kW.", "The heater draws five kilowatts.", "a", None),
    ("unit", "We used 3 kWh today.", "We used three kilowatt hours today.", "a", None),
    ("unit", "It used 1.5 kWh.", "It used one point five kilowatt hours.", "a", None),
    ("unit", "Noise is 60 dB.", "Noise is sixty decibels.", "a", None),
    ("unit", "CO2 at 400 ppm.", "C O two at four hundred parts per million.", "a", None),
    ("unit", "Pour 2 L of water.", "Pour two liters of water.", "a", None),
    ("unit", "Wait 15 mins please.", "Wait fifteen minutes please.", "a", None),
    ("unit", "Wait 15 min please.", "Wait fifteen minutes please.", "a", None),
    ("unit", "Drive at 5 mph.", "Drive at five miles per hour.", "a", None),
    ("unit", "It weighs 10 kg.", "It weighs ten kilograms.", "a", None),
    ("unit", "The shelf is 3 ft wide.", "The shelf is three feet wide.", "a", None),
    ("unit", "Walk 100 m north.", "Walk one hundred meters north.", "a", None),
    ("unit", "Cut 5 cm off.", "Cut five centimeters off.", "a", None),
    ("unit", "The lamp uses 1 W.", "The lamp uses one watt.", "a", None),
    ("phone", "Call 555-0123 now.", "Call five five five, zero one two three now.", "a", None),
    ("phone", "Call (555) 123-4567.", "Call five five five, one two three, four five six seven.", "a", None),
    ("phone", "Dial +1 555 123 4567.", "Dial plus one, five five five, one two three, four five six seven.", "a", None),
    ("abbreviation", "Ask Mr. Lee.", "Ask mister Lee.", "a", None),
    ("abbreviation", "Ask Ms. Lee.", "Ask miss Lee.", "a", None),
    ("abbreviation", "Cats vs. dogs.", "Cats versus dogs.", "a", None),
    ("abbreviation", "Fruit, e.g. apples.", "Fruit, for example apples.", "a", None),
    ("abbreviation", "Go to Apt. 4.", "Go to apartment four.", "a", None),
    ("symbol", "Salt & pepper.", "Salt and pepper.", "a", None),
    ("symbol", "So 2 + 2 = 4.", "So two plus two equals four.", "a", None),
    ("symbol", "The room is 3 × 4 meters.", "The room is three times four meters.", "a", None),
    ("symbol", "It is our #1 pick.", "It is our number one pick.", "a", None),
    ("symbol", "Wait ~5 minutes.", "Wait approximately five minutes.", "a", None),
    ("url", "Visit https://example.com today.", "Visit example dot com today.", "a", None),
    ("url", "See www.example.org/help now.", "See example dot org slash help now.", "a", None),
    ("url", "Visit https://example.com today.", "Visit today.", "a", SKIP_URLS),
    (
        "url",
        "Read https://docs.example.com/guides/getting-started/install.html?ref=nav#step-2 now.",
        "Read docs dot example dot com slash guides slash getting dash started now.",
        "a",
        None,
    ),
    (
        "url",
        "Open http://homeassistant.local:8123/lovelace/0 today.",
        "Open homeassistant dot local slash lovelace today.",
        "a",
        None,
    ),
    ("url", "Search https://example.com/?q=lights#top today.", "Search example dot com today.", "a", None),
    (
        "url",
        "Try github.com/user/repo/blob/main/x.py please.",
        "Try github dot com slash user slash repo please.",
        "a",
        None,
    ),
    ("url", "Go to https://example.com/a-very-long-segment-name-here/x now.", "Go to example dot com now.", "a", None),
    ("url", "Try github.com/user/repo/blob/main/x.py please.", "Try please.", "a", SKIP_URLS),
    ("email", "Mail bob@example.com today.", "Mail bob at example dot com today.", "a", None),
    ("email", "Mail bob@example.com today.", "Mail today.", "a", SKIP_URLS),
    ("markdown", "**Bold** move.", "Bold move.", "a", None),
    ("markdown", "# Weather today", "Weather today", "a", None),
    ("markdown", "- first item\n- second item", "first item. second item", "a", None),
    ("markdown", "1. Preheat\n2. Bake", "Preheat. Bake", "a", None),
    ("markdown", "Read [the docs](https://docs.example.com).", "Read the docs.", "a", None),
    ("markdown", "Run `ls -l` first.", "Run L S dash L first.", "a", None),
    ("markdown", "Say `lights off` to me.", "Say lights off to me.", "a", None),
    ("markdown", "Run `make` first.", "Run first.", "a", SKIP_CODE),
    ("markdown", "```\nrm -rf build\n```\nDone.", "Done.", "a", None),
    ("markdown", "```\nrm build\n```\nDone.", "rm build. Done.", "a", TextSettings(code="read")),
    ("markdown", "It is _really_ ~~not~~ fine.", "It is really not fine.", "a", None),
    ("markdown", "> Quoted advice.", "Quoted advice.", "a", None),
    ("emoji", "Great job 🎉", "Great job", "a", None),
    ("emoji", "Great job 🎉", "Great job party popper", "a", NAME_EMOJI),
    ("emoji", "Done ✅ now.", "Done now.", "a", None),
    ("ssml", '<speak>Say <say-as interpret-as="characters">BC</say-as></speak>', "Say bee see", "a", None),
    ("ssml", '<speak>Code <say-as interpret-as="digits">123</say-as>.</speak>', "Code one two three.", "a", None),
    (
        "ssml",
        '<speak>Call <say-as interpret-as="telephone">555-0123</say-as>.</speak>',
        "Call five five five, zero one two three.",
        "a",
        None,
    ),
    (
        "ssml",
        '<speak>On <say-as interpret-as="date" format="mdy">12/03/2026</say-as>.</speak>',
        "On december third twenty twenty six.",
        "a",
        None,
    ),
    ("ssml", '<speak>At <say-as interpret-as="time">3:07 PM</say-as>.</speak>', "At three oh seven PM.", "a", None),
    (
        "ssml",
        '<speak>The <sub alias="World Wide Web">WWW</sub> is big.</speak>',
        "The World Wide Web is big.",
        "a",
        None,
    ),
    ("ssml", '<speak>Hi <phoneme alphabet="ipa" ph="wˈɪn">Nguyen</phoneme>.</speak>', "Hi win.", "a", None),
    ("ssml", '<speak><prosody rate="slow">Slowly now.</prosody></speak>', "Slowly now.", "a", None),
    ("ssml", '<speak><p>One.</p><p>Two <break time="300ms"/> three.</p></speak>', "One. Two three.", "a", None),
    ("lexicon", "Siobhan is here.", "[x](/ʃɪvˈɔn/) is here.", "a", WITH_LEXICON),
    ("lexicon", "Call Nguyen at 3 PM.", "Call win at three PM.", "a", WITH_LEXICON),
    ("lexicon", "A GIF and a gif.", "A jif and a gif.", "a", WITH_LEXICON),
    ("lexicon", "Walk down Main Street.", "Walk down main strasse.", "a", WITH_LEXICON),
    ("lexicon", "**Siobhan** won.", "[x](/ʃɪvˈɔn/) won.", "a", WITH_LEXICON),
    ("inline phonemes", "Hi [Nguyen](/wˈɪn/).", "Hi win.", "a", None),
    ("inline phonemes", "[Siobhan](/ʃɪvˈɔn/) has 2 cats.", "[x](/ʃɪvˈɔn/) has two cats.", "a", None),
    ("inline phonemes", "Hi [Nguyen](/wˈɪn/).", "Hi win.", "a", TextSettings(markup="plain")),
]


def compact(phonemes: str) -> str:
    return "".join(ch for ch in phonemes if ch not in "ˈˌ" and not ch.isspace())


def test_the_table_covers_every_category():
    categories = {case[0] for case in CASES}
    assert len(CASES) >= 80
    assert {"cardinal", "signed", "decimal", "ordinal", "range", "fraction", "money", "percent", "temperature"} <= (
        categories
    )
    assert {"time", "date", "unit", "phone", "abbreviation", "symbol", "url", "email", "markdown", "ssml"} <= categories
    assert {"lexicon", "inline phonemes", "emoji"} <= categories


@pytest.mark.parametrize(
    ("category", "written", "accepted", "language", "settings"),
    CASES,
    ids=[f"{i:03d}-{c[0]}" for i, c in enumerate(CASES)],
)
def test_written_text_sounds_like_its_spoken_form(speaker, category, written, accepted, language, settings):
    settings = settings or TextSettings()
    said = speaker.phonemes(written, language, settings)
    expected = speaker.phonemes(accepted, language, TextSettings(markup="plain", lexicon=settings.lexicon))
    assert compact(said) == compact(expected), (
        f"{category}: {written!r} was spoken as {speaker.front_end.to_spoken(written, language, settings).plain!r}"
    )
