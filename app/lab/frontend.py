"""``voicedesk bench frontend``: what the text front-end costs per sentence, next to what G2P alone costs.

For each sentence of an agent/smart-home set it times, after a warm-up: the front-end alone (markup, spoken form,
lexicon) before the memo of NeMo's answers existed, with that memo empty for the sentence (new) and with the
sentence's stretches remembered (seen); misaki G2P on the raw text (what the engine did before the front-end); and
front-end + G2P (what ``KokoroSynthesizer.prepare`` does). It prints p50/p95 per sentence for each, over all
sentences and over the sentences with nothing to normalize (which skip NeMo), and the ratio front-end + G2P ÷ G2P
alone. Then the first sentence streamed at ``--rates`` tokens/s, before and after warming it while it arrives
(``frontend_first.py``), and with ``--throughput`` sentences/s through prepare + render without and with
``prepare_ahead``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

SENTENCES = (
    "Sure, I can help you with that.",
    "Here is what I found about your question.",
    "The meeting has been moved to next week.",
    "I turned off the lights in the kitchen.",
    "Let me know if there is anything else you need.",
    "Your package should arrive tomorrow afternoon.",
    "I have added milk and eggs to the shopping list.",
    "The front door is locked and the alarm is armed.",
    "Outside it is -5°C tonight.",
    "It is 21°C in the living room.",
    "Wind from the north at 20 km/h.",
    "Motion at the back door at 3:07 PM.",
    "The dryer uses 1,200 W right now.",
    "Your flight leaves on 12/03 at 6:45 AM.",
    "The total comes to $42.50 including tax.",
    "Battery is at 15%, so plug it in soon.",
    "Humidity in the bathroom is 68% and CO2 is at 800 ppm.",
    "Call Dr. Smith at 555-0123 before Mar. 17.",
    "- **Lights**: off in 3 rooms",
    "See [the dashboard](http://homeassistant.local:8123) for details 📊",
    "The washer used 1.5 kWh and 45 L of water.",
    "Noise in the nursery reached 60 dB at 2:15 AM.",
    "Preheat the oven to 180°C for 25 mins.",
    "Traffic on Main St. is slow, about 10-15 minutes longer.",
)


def register_bench(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "frontend",
        help="the text front-end's time per sentence (p50/p95) beside G2P alone",
        description=__doc__.split("\n\n", 1)[1].replace("\n", " ") if __doc__ else None,
    )
    parser.add_argument("--rounds", type=int, default=5, help="times each sentence is measured (default 5)")
    parser.add_argument("--voice-language", default="a", choices=("a", "b"), help="a: American, b: British")
    parser.add_argument(
        "--rates",
        type=float,
        nargs="*",
        default=[20.0, 80.0],
        help="tokens/s of the streamed first-sentence run (default 20 80; none: skip it)",
    )
    parser.add_argument("--stream-rounds", type=int, default=1, help="rounds of the streamed run (default 1)")
    parser.add_argument(
        "--throughput",
        action="store_true",
        help="also sentences/s through prepare + render without and with prepare_ahead (loads the model)",
    )
    parser.add_argument(
        "--throughput-sentences", type=int, default=6, help="sentences of the throughput run (default 6)"
    )
    parser.add_argument("--voice", default=None, help="voice of the throughput run (default af_heart / bf_emma)")
    parser.set_defaults(handler=run_frontend_bench)


def _timed(call: Callable[[], object], rounds: int) -> list[float]:
    found = []
    for _ in range(rounds):
        started = time.perf_counter()
        call()
        found.append((time.perf_counter() - started) * 1000)
    return found


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run_frontend_bench(args: argparse.Namespace) -> int:
    from kokoro import KPipeline

    from voicedesk.engine.model import kokoro_synth  # noqa: F401 - kokoro's known warnings, quiet
    from voicedesk.engine.model.prepared import prepare_pieces
    from voicedesk.engine.model.weights import REPO_ID, require_spacy_model
    from voicedesk.engine.text.frontend import load_front_end
    from voicedesk.engine.text.frontend.settings import TextSettings

    language = args.voice_language
    started = time.perf_counter()
    front_end = load_front_end()
    load_ms = (time.perf_counter() - started) * 1000
    for note in front_end.notes:
        print(f"note: {note}")
    require_spacy_model()
    pipeline = KPipeline(lang_code=language, repo_id=REPO_ID, model=False)
    settings = TextSettings()

    from voicedesk.app.lab.frontend_first import print_streamed, print_throughput, without_memo

    before_front_end = without_memo(front_end, language)
    memo = front_end.spoken_forms[language].normalize

    def front_before(text: str) -> object:
        return before_front_end.to_spoken(text, language, settings)

    def front_first_time(text: str) -> object:
        memo.clear()  # this sentence's stretches are new to the process: the cold case
        return front_end.to_spoken(text, language, settings)

    def front(text: str) -> object:
        return front_end.to_spoken(text, language, settings)

    def g2p(text: str) -> object:
        return list(pipeline.en_tokenize(pipeline.g2p(text)[1]))

    def both(text: str) -> object:
        return prepare_pieces(pipeline, front_first_time(text), language)

    for text in SENTENCES:  # warm-up: NeMo's and misaki's caches, markdown-it's parser
        both(text)
    english = front_end.spoken_forms.get(language)
    plain = [t for t in SENTENCES if english is not None and not english.needs_nemo(t) and "*" not in t]
    rows = []
    for label, sentences in (("all sentences", SENTENCES), ("nothing to normalize", plain)):
        stages = ("front-end before", "front-end new", "front-end seen", "G2P alone", "front-end + G2P")
        times = {name: [] for name in stages}
        for text in sentences:
            times["front-end before"] += _timed(lambda text=text: front_before(text), args.rounds)
            times["front-end new"] += _timed(lambda text=text: front_first_time(text), args.rounds)
            times["front-end seen"] += _timed(lambda text=text: front(text), args.rounds)
            times["G2P alone"] += _timed(lambda text=text: g2p(text), args.rounds)
            times["front-end + G2P"] += _timed(lambda text=text: both(text), args.rounds)
        rows.append((label, len(sentences), times))
    print(f"Text front-end cost per sentence (ms), {args.rounds} rounds; grammars loaded in {load_ms:.0f} ms")
    print(f"{'sentences':<22}{'n':>4}  {'stage':<17}{'p50':>8}{'p95':>8}{'mean':>8}")
    for label, count, times in rows:
        for name, values in times.items():
            print(
                f"{label:<22}{count:>4}  {name:<17}{_p(values, 0.5):>8.1f}{_p(values, 0.95):>8.1f}"
                f"{statistics.fmean(values):>8.1f}"
            )
        ratio = statistics.median(times["front-end + G2P"]) / statistics.median(times["G2P alone"])
        print(f"{label:<22}{count:>4}  {'ratio p50 (front-end + G2P ÷ G2P alone)':<33}{ratio:>5.2f}")
    print(
        "front-end before: every stretch through NeMo (no memo); new: memo empty for the sentence; seen: its "
        "stretches remembered from an earlier call; + G2P: new."
    )
    numbers = [t for t in SENTENCES if t not in plain]
    if args.rates:
        print_streamed(front_end, numbers, language, args.rates, args.stream_rounds)
    if args.throughput:
        voice = args.voice or ("af_heart" if language == "a" else "bf_emma")
        print_throughput(numbers[: args.throughput_sentences], voice)
    return 0
