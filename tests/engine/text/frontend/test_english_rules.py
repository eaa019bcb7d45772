"""Issue 31's categories, a table each: what the front-end says for written English equals what it says for an
accepted spoken form (real NeMo grammars, real misaki G2P; phonemes compared without stress marks and spaces, as
``test_spoken_table`` does). Each row failed before: NeMo saw too little context, a pre-rule misfired, a symbol
reached the G2P unsaid, a host never reached a rule, NeMo misread it with nothing after it, or code was skipped.
"""

from __future__ import annotations

import pytest

from tests.engine.text.frontend.test_spoken_table import compact
from voicedesk.engine.text.frontend.settings import TextSettings

# (category, written, accepted spoken form, language)
CASES = [
    ("context", "The shop is at 12 Oak St. today.", "The shop is at twelve Oak Street today.", "a"),
    ("context", "Drive to 1211 E Arques Ave now.", "Drive to twelve eleven East Arques Avenue now.", "a"),
    ("context", "Use the card ending in 8876 now.", "Use the card ending in eight eight seven six now.", "a"),
    ("context", "We ship 100 million kg a year.", "We ship one hundred million kilograms a year.", "a"),
    ("context", "Open 9:00 am - 5:30 pm daily.", "Open nine AM to five thirty PM daily.", "a"),
    ("context", "She is at 1428 Elm St. It is nice.", "She is at fourteen twenty eight Elm Street. It is nice.", "a"),
    ("pre-rule", "Use 3-1=2 here.", "Use three minus one equals two here.", "a"),
    ("pre-rule", "Part 978-3 arrived.", "Part nine hundred and seventy eight three arrived.", "a"),
    ("pre-rule", "It was 2020-30 kg.", "It was two thousand and twenty to thirty kilograms.", "a"),
    ("pre-rule", "Wait 1h 20m please.", "Wait one hour twenty minutes please.", "a"),
    ("pre-rule", "Set a timer for 2h30.", "Set a timer for two hours thirty.", "a"),
    ("pre-rule", "Born on 01/07/98.", "Born on january seventh ninety eight.", "a"),
    ("pre-rule", "It rained 1961–1965 here.", "It rained nineteen sixty one to nineteen sixty five here.", "a"),
    ("pre-rule", "Read pages 10-20.", "Read pages ten to twenty.", "a"),
    ("symbol", "Open host:8080 now.", "Open host colon eight thousand and eighty now.", "a"),
    ("symbol", "The code is A12/31/B7 today.", "The code is A twelve slash thirty one slash B seven today.", "a"),
    ("symbol", "We lost -$4.5 million.", "We lost minus four point five million dollars.", "a"),
    ("symbol", "It is 20±2 degrees.", "It is twenty plus or minus two degrees.", "a"),
    ("symbol", "Check that x < y and y > z.", "Check that x less than y and y greater than z.", "a"),
    ("symbol", "It costs 5‰ more.", "It costs five per mille more.", "a"),
    ("symbol", "Lights - off now.", "Lights — off now.", "a"),
    ("host", "See docs.example.org for more.", "See docs dot example dot org for more.", "a"),
    ("host", "Open notes.txt now.", "Open notes dot txt now.", "a"),
    ("host", "Fruit, e.g. apples and U.S. pears.", "Fruit, for example apples and US pears.", "a"),
    ("nemo misread", "Update to v2.3.1 today.", "Update to version two point three point one today.", "a"),
    ("nemo misread", "Firmware 1.12 is out.", "Firmware one point twelve is out.", "a"),
    ("nemo misread", "Born on 15.01.2020.", "Born on the fifteenth of january twenty twenty.", "a"),
    ("nemo misread", "It was 3x faster.", "It was three times faster.", "a"),
    ("nemo misread", "We have 10k users.", "We have ten thousand users.", "a"),
    ("nemo misread", "It is ±5 V.", "It is plus or minus five volts.", "a"),
    ("nemo misread", "It is approx. 5 km.", "It is approximately five kilometers.", "a"),
    ("nemo misread", "Fig. 3 shows it.", "figure three shows it.", "a"),
    ("nemo misread", "Henry VIII was king.", "Henry the eighth was king.", "a"),
    ("nemo misread", "Read Chapter IV now.", "Read Chapter four now.", "a"),
    ("nemo misread", "Apollo XI landed.", "Apollo eleven landed.", "a"),
    ("nemo misread", "Sam and I left.", "Sam and I left.", "a"),
    ("nemo misread", "NO2 levels are high.", "N O two levels are high.", "a"),
    ("nemo misread", "CH4 is methane.", "C H four is methane.", "a"),
    ("nemo misread", "PM2.5 is at 12.", "P M two point five is at twelve.", "a"),
    ("nemo misread", "How're you doing?", "How are you doing?", "a"),
    ("nemo misread", "Theyre late.", "They're late.", "a"),
    ("nemo misread", "Im here now.", "I'm here now.", "a"),
    ("code", "Say `lights off` to me.", "Say lights off to me.", "a"),
    ("code", "Run `ls -l` first.", "Run L S dash L first.", "a"),
    ("code", "```\nrm -rf build\n```\nDone.", "Done.", "a"),
]


def test_every_category_of_the_issue_has_its_table():
    assert {c[0] for c in CASES} == {"context", "pre-rule", "symbol", "host", "nemo misread", "code"}


@pytest.mark.parametrize(
    ("category", "written", "accepted", "language"), CASES, ids=[f"{i:02d}-{c[0]}" for i, c in enumerate(CASES)]
)
def test_written_text_sounds_like_its_spoken_form(speaker, category, written, accepted, language):
    said = speaker.phonemes(written, language)
    expected = speaker.phonemes(accepted, language, TextSettings(markup="plain"))
    assert compact(said) == compact(expected), (
        f"{category}: {written!r} was spoken as {speaker.front_end.to_spoken(written, language).plain!r}"
    )


def test_the_symbol_words_point_at_the_characters_they_say(front_end):
    text = "Open host:8080 now."
    spoken = front_end.to_spoken(text, "a", TextSettings())
    assert {text[u.start : u.end] for u in spoken.units if u.text in ("host", "colon", "eighty")} == {"host:8080"}
