"""The front-end on the first sentence's critical path, and throughput with preparation ahead (``bench frontend``).

*Streamed first sentence*: each sentence with numbers or units arrives as an agent's tokens would (digits one by
one, words with their leading space) at a given rate. **before**: what the engine did before the memo and the
warm-up (the whole front-end runs when the sentence is released, every stretch through NeMo). **after**: each
token hands the text so far to the same ``FrontEndWarmer`` the synthesizer uses (a thread of its own), and the
released sentence meets a memo that starts empty for it (no other sentence's stretches). The sentence is released
one token after its last, as the chunker does (``tonight.`` is a sentence end once the next token shows a space and
a new word). The figure is the front-end's time from the release to the spoken form: the first-audio overhead
beyond the model (G2P is paid either way). The two run alternately, sentence by sentence, so load hits both alike.

The CPU column is the process's CPU time per sentence from its first token to its spoken form, the warm-up
thread's included: what warming costs in throughput terms (its speculative stretches, its repeated markup parses).

*Throughput*: pairs of those sentences through ``KokoroSynthesizer`` (the model as installed; random weights in the
test cache), each pair said one after another and with the second prepared ahead (``prepare_ahead``) while the
first renders, alternately.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Sequence

from voicedesk.engine.model.front_end_warmer import FrontEndWarmer
from voicedesk.engine.text.frontend import FrontEnd
from voicedesk.engine.text.frontend.english import EnglishSpokenForm
from voicedesk.engine.text.frontend.memo import MemoNormalize
from voicedesk.engine.text.frontend.settings import TextSettings

TOKEN = re.compile(r"\s*(?:\d|[^\W\d_]+|[^\w\s]+|_)")
"""Roughly how an LLM's tokenizer cuts agent text: a word with its leading space, digits one by one, symbols."""


def tokens(text: str) -> list[str]:
    found = TOKEN.findall(text)
    assert "".join(found) == text, text
    return found


def p(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def without_memo(front_end: FrontEnd, language: str) -> FrontEnd:
    """The same front-end with every stretch sent to NeMo (the engine before the memo)."""
    english = front_end.spoken_forms[language]
    assert isinstance(english, EnglishSpokenForm) and isinstance(english.normalize, MemoNormalize)
    raw = EnglishSpokenForm(MemoNormalize(english.normalize._normalize, size=0), english.whitelist)
    return FrontEnd({**front_end.spoken_forms, language: raw}, front_end.notes)


def streamed_overhead(
    front_end: FrontEnd, sentences: Sequence[str], language: str, rate: float, rounds: int
) -> dict[str, list[float]]:
    """ms from each sentence's release to its spoken form, ``before`` and ``after``."""
    settings = TextSettings()
    memo = front_end.spoken_forms[language].normalize
    assert isinstance(memo, MemoNormalize)
    before_front_end = without_memo(front_end, language)
    warmer = FrontEndWarmer(lambda text, _voice, s: front_end.warm(text, language, s))
    found: dict[str, list[float]] = {"before": [], "after": [], "before cpu": [], "after cpu": []}
    for _ in range(rounds):
        for sentence in sentences:
            for variant in ("before", "after"):
                memo.clear()
                cpu = time.process_time()  # the whole process: the warm-up thread's work counts too
                received = ""
                for token in tokens(sentence):
                    time.sleep(1 / rate)
                    received += token
                    if variant == "after":
                        warmer.hint(received, "", settings)
                time.sleep(1 / rate)  # the chunker releases a sentence when the next one's first token comes
                started = time.perf_counter()
                (before_front_end if variant == "before" else front_end).to_spoken(sentence, language, settings)
                found[variant].append((time.perf_counter() - started) * 1000)
                warmer.wait_idle(10)
                found[f"{variant} cpu"].append((time.process_time() - cpu) * 1000)
    return found


def print_streamed(front_end: FrontEnd, sentences: Sequence[str], language: str, rates: Sequence[float], rounds: int):
    print(f"\nFirst sentence streamed: front-end ms after release ({len(sentences)} sentences × {rounds} rounds)")
    print(f"{'tokens/s':>8}  {'':<7}{'p50':>8}{'p95':>8}{'mean':>8}{'≤15 ms':>8}{'CPU ms':>8}")
    for rate in rates:
        found = streamed_overhead(front_end, sentences, language, rate, rounds)
        for variant in ("before", "after"):
            values = found[variant]
            within = sum(v <= 15 for v in values) / len(values)
            print(
                f"{rate:>8.0f}  {variant:<7}{p(values, 0.5):>8.1f}{p(values, 0.95):>8.1f}"
                f"{statistics.fmean(values):>8.1f}{within:>8.0%}{statistics.fmean(found[variant + ' cpu']):>8.1f}"
            )
        ratio = statistics.median(found["after"]) / max(statistics.median(found["before"]), 1e-6)
        cpu_ratio = statistics.fmean(found["after cpu"]) / max(statistics.fmean(found["before cpu"]), 1e-6)
        print(f"{rate:>8.0f}  ratio p50 after ÷ before {ratio:.2f}; CPU per sentence after ÷ before {cpu_ratio:.2f}")


def print_throughput(sentences: Sequence[str], voice: str, rounds: int = 1) -> None:
    """Pairs of sentences, each said one after another and with the second prepared ahead, alternately (so the
    machine's load drifts over both alike)."""
    from voicedesk.engine.model.kokoro_synth import KokoroSynthesizer

    synthesizer = KokoroSynthesizer.load()
    settings = TextSettings()
    memo = synthesizer.front_end.spoken_forms[voice[0]].normalize
    pairs = [tuple(sentences[i : i + 2]) for i in range(0, len(sentences) - 1, 2)]
    spent = {"one after another": 0.0, "next prepared ahead": 0.0}
    for number in range(rounds * len(pairs)):
        first, second = pairs[number % len(pairs)]
        order = list(spent) if number % 2 == 0 else list(reversed(spent))
        for variant in order:
            if isinstance(memo, MemoNormalize):
                memo.clear()
            started = time.perf_counter()
            if variant == "next prepared ahead":
                synthesizer.prepare_ahead(second, voice, settings)
            synthesizer.synthesize(first, voice, 1.0, settings=settings)
            synthesizer.synthesize(second, voice, 1.0, settings=settings)
            spent[variant] += time.perf_counter() - started
    said = 2 * rounds * len(pairs)
    print(f"\nThroughput through prepare + render ({said} sentences each way, {voice}, model as installed)")
    for variant, seconds in spent.items():
        print(f"  {variant:<22}{said / seconds:>8.3f} sentences/s")
    ratio = spent["one after another"] / spent["next prepared ahead"]
    print(f"  ratio prepared ahead ÷ one after another {ratio:.2f}")
