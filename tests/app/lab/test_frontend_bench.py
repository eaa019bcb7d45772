"""``bench frontend``'s streamed first-sentence run on the real front-end (NeMo's grammars): tokens cut as an LLM's
tokenizer would, and the after-variant really warmed the sentence (its stretch is in the memo when released)."""

from __future__ import annotations

from pathlib import Path

from voicedesk.app.lab.frontend_first import streamed_overhead, tokens
from voicedesk.engine.text.frontend import load_front_end


def test_tokens_cut_digits_one_by_one_and_join_back() -> None:
    assert tokens("It is -5°C tonight.") == ["It", " is", " -", "5", "°", "C", " tonight", "."]


def test_the_streamed_run_measures_both_variants_and_warms_the_after_one(text_grammars: Path) -> None:
    front_end = load_front_end(text_grammars)
    found = streamed_overhead(front_end, ["It is 21°C in the hall."], "a", rate=400.0, rounds=1)
    assert {k: len(v) for k, v in found.items()} == {"before": 1, "after": 1, "before cpu": 1, "after cpu": 1}
    memo = front_end.spoken_forms["a"].normalize
    # the after run: NeMo once for the stretch (warming), and the released sentence found it (a hit); unwarmed,
    # the release would have been the one miss and nothing would have hit
    assert (memo.misses, memo.hits >= 1) == (1, True)
    assert memo.cached("It is 21°C in the hall.") == "It is twenty one degrees Celsius in the hall."
