"""The chunker's ceiling: long texts are cut under Kokoro's 510-phoneme input, checked against real G2P."""

from __future__ import annotations

import pytest

from tests.engine.text.chunker_corpus import LONG_SENTENCE, LONG_TEXTS, REALISTIC, chunk_all
from voicedesk.engine.text.chunking.chunker import estimate_phonemes
from voicedesk.engine.text.chunking.phoneme_estimate import PhonemeEstimator


def test_a_long_sentence_is_cut_at_clause_boundaries_under_the_limit() -> None:
    chunks = chunk_all("Okay. Now listen carefully to this. " + LONG_SENTENCE, early_first_fragment=False)
    assert chunks[0] == "Okay. Now listen carefully to this."
    body = chunks[1:]
    assert len(body) >= 3
    assert all(chunk.endswith(",") for chunk in body[:-1]), body
    assert " ".join(body) == LONG_SENTENCE
    assert all(estimate_phonemes(chunk) <= 510 for chunk in body)
    # Cut at the *last* clause that fits: each chunk but the last is close to the limit, not a sliver.
    assert all(estimate_phonemes(chunk) > 400 for chunk in body[:-1])


@pytest.mark.parametrize("name", sorted(LONG_TEXTS))
def test_long_texts_without_sentence_ends_are_cut_under_the_limit(name: str) -> None:
    text = LONG_TEXTS[name]
    chunks = chunk_all(text)
    assert len(chunks) >= 2
    assert all(estimate_phonemes(chunk) <= 510 for chunk in chunks)
    assert "".join(chunks).replace(" ", "") == text.replace(" ", "")
    if " " in text.strip():
        # Words are never split when there are spaces to cut at.
        assert [w for chunk in chunks for w in chunk.split()] == text.split()


def test_a_smaller_ceiling_is_respected() -> None:
    chunks = chunk_all(LONG_SENTENCE, max_chunk_phonemes=100, early_first_fragment=False)
    assert all(estimate_phonemes(chunk) <= 100 for chunk in chunks)
    assert " ".join(chunks) == LONG_SENTENCE
    # At this ceiling a clause may not fit: then the cut falls between words.
    assert all(w in LONG_SENTENCE.split() for chunk in chunks for w in chunk.split())


PATHOLOGICAL_MARKUP = {
    "never-closed link targets": "[a](" * 3_000,
    "nested brackets": "[" * 2_000 + "a" * 100,
    "a target of parentheses": "[a](" + "(b " * 1_500,
    "links whose target never ends": "[see](http://x.org/" + "y" * 250 + " " + "[more](" * 500,
}


@pytest.mark.parametrize("name", sorted(PATHOLOGICAL_MARKUP))
def test_no_chunk_escapes_the_ceiling_whatever_markup_it_holds(name: str) -> None:
    """Markup the front-end would not treat as markup is read as text, so it counts: before issue 34, 12 KB of
    ``[a](`` came out in chunks of about 1,850 characters (an unclosed link's target counted nothing), and misaki's
    G2P took seconds on one under a lock every session shares."""
    text = PATHOLOGICAL_MARKUP[name]
    chunks = chunk_all(text)
    plain = PhonemeEstimator()
    for chunk in chunks:
        assert estimate_phonemes(chunk) <= 510
        reading = PhonemeEstimator()
        for c in chunk:  # read as plain text, brackets and all: what the front-end hands G2P
            reading.add(c)
        assert reading.phonemes <= 510, (len(chunk), reading.phonemes)
    for c in text:
        plain.add(c)
    assert len(chunks) >= plain.phonemes // 510
    assert "".join(chunks).replace(" ", "") == text.replace(" ", "")


def test_only_overrides_reach_misaki_as_brackets() -> None:
    """misaki's own link pattern is quadratic on ``[a](`` repeated: it is never shown a bracket but an override's."""
    from voicedesk.engine.text.frontend import to_units
    from voicedesk.engine.text.frontend.settings import TextSettings

    units, _ = to_units("[a](" * 50 + " say [Siobhan](/ʃɪvˈɔn/) [x]", TextSettings())
    g2p = " ".join(unit.g2p_text for unit in units)
    assert g2p.count("[") == 1 and "[Siobhan](/ʃɪvˈɔn/)" in g2p


# ---- the phoneme estimate against real G2P ----------------------------------------------------------------

ESTIMATOR_PROBES = [
    "The quick brown fox jumps over the lazy dog while the cat watches, unimpressed by the whole affair.",
    "Extraordinarily, the unconstitutional representatives characterized it as incomprehensible.",
    "music uvula unique euro menu cute huge use union unit ukulele",
    "I I I a a a to to be or or on on it it is is ok ok ok",
    "NASA FBI CIA HTML CSS JSON XML WWW IEEE ACM SQL GPU CPU API SDK AWS WWDC WWF",
    "W W W W W w w w xx yy zz ww vv wWwWwW Wwwwwww xkcd qwrtp brrr",
    "JSONParser XMLHttpRequest getElementById iOS macOS McDonald",
    "777,777,777,777 777777777 123456789012345 0.000001 3.14159265358979 777th",
    "$1,234,567.89 £99.99 €5 ¥1000 $777,777.77 100% & 50% @ # + = / \\ *",
    "1/2 3/4 12/25/2024 2024-01-15 10:30 10:30:15 5:00pm 1st 2nd 3rd 101st",
    "Ph.D. U.S.A. e.g. i.e. etc. vs. Mr. Mrs. Dr. Prof. St. Jr. a.m. p.m.",
    "https://www.example.com/path/to/file.html?query=1&b=2#frag john.doe@example.com",
    "café naïve résumé über Zürich São Paulo Kraków jalapeño crème brûlée ü ö ä ß ñ",
    "😆 😀 🤷 👍 🎉 ❤️ 🏳️‍🌈 👨‍👩‍👧‍👦 🧑🏽‍🦽‍➡️ ™ © ® ° ± × ÷ § ¶ → ∞ ≈ ≠ ≤ ≥ √ π µ ½ ①",
    "你好世界，我是一个机器人。こんにちは世界 カタカナ 한국어",
    "Привет мир Γειά σου مرحبا नमस्ते สวัสดี שלום",
]


@pytest.fixture(scope="module")
def g2p_phonemes():
    """Real misaki English G2P through kokoro's KPipeline (no model): text → phoneme count."""
    pytest.importorskip(
        "en_core_web_sm", reason="spaCy's en_core_web_sm is not installed (packaging/install_spacy_model.sh)"
    )
    from kokoro import KPipeline

    pipeline = KPipeline(lang_code="a", repo_id="hexgrad/Kokoro-82M", model=False)

    def count(text: str) -> list[int]:
        return [len(result.phonemes) for result in pipeline(text)]

    return count


@pytest.mark.slow  # imports kokoro, spaCy and transformers: seconds of start-up
def test_the_estimate_is_never_below_real_g2p(g2p_phonemes) -> None:
    for text in ESTIMATOR_PROBES:
        assert sum(g2p_phonemes(text)) <= estimate_phonemes(text), text


@pytest.mark.slow
def test_the_longest_chunks_stay_under_kokoros_limit_in_real_g2p(g2p_phonemes) -> None:
    chunks = [chunk for text in [*LONG_TEXTS.values(), *REALISTIC] for chunk in chunk_all(text)]
    longest = sorted(chunks, key=estimate_phonemes)[-25:]
    assert estimate_phonemes(longest[-1]) > 490  # the ceiling really was reached
    for chunk in longest:
        counts = g2p_phonemes(chunk)
        assert len(counts) == 1, chunk  # KPipeline did not have to split it
        assert counts[0] <= min(510, estimate_phonemes(chunk)), chunk
    # Not absurdly conservative on prose: a cut long sentence still carries >= 300 real phonemes per chunk.
    prose = chunk_all(LONG_SENTENCE, early_first_fragment=False)
    assert all(sum(g2p_phonemes(chunk)) >= 300 for chunk in prose[:-1])


def test_one_english_g2p_call_reads_a_bounded_text() -> None:
    """misaki's time grows faster than its input on some patterns: a long run is read in parts of whole words."""
    from voicedesk.engine.model.prepared import ENGLISH_CALL_CHARS, _bounded
    from voicedesk.engine.text.frontend.spoken import Unit

    units = tuple(Unit(f"word{i}", 0, 0) for i in range(600))
    parts = _bounded(units)
    assert [u for part in parts for u in part] == list(units) and len(parts) >= 4
    assert all(len(" ".join(u.g2p_text for u in part)) <= ENGLISH_CALL_CHARS for part in parts)


def test_no_run_without_spaces_reaches_misaki_whole_when_it_is_long() -> None:
    """misaki merges the tokens of one word in quadratic time: ``(a)(`` 400 characters long took 0.8 s."""
    from voicedesk.engine.text.frontend.spoken import G2P_WORD_CHARS, Unit

    long_word = Unit("(a)(" * 100, 0, 400)
    assert max(len(piece) for piece in long_word.g2p_text.split()) <= G2P_WORD_CHARS
    assert long_word.g2p_text.replace(" ", "") == long_word.text
    assert Unit("antidisestablishmentarianism", 0, 28).g2p_text == "antidisestablishmentarianism"
