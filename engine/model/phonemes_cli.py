"""``voicedesk phonemes TEXT|-``: the exact phoneme strings ``KModel`` will get for a text, without the model, so it
starts in about a second and works before any voice is fetched."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from voicedesk.engine.model.voices import DEFAULT_VOICE
from voicedesk.engine.text.frontend.settings import (
    CODE_CHOICES,
    EMOJI_CHOICES,
    MARKUP_CHOICES,
    URL_CHOICES,
    TextSettings,
)

if TYPE_CHECKING:
    from voicedesk.engine.text.frontend.spoken import SpokenText


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "phonemes",
        help="print the phonemes the model receives for TEXT ('-': stdin), one line per model call",
        description="Runs the text front-end (markup, spoken form, lexicon) and the G2P exactly as a session "
        "would, and prints one line per model call holding the phoneme string the model receives. "
        "Inline overrides: [Siobhan](/ʃɪvˈɔn/).",
    )
    parser.add_argument("text", help="the text, or '-' to read it from stdin")
    parser.add_argument(
        "--lines", action="store_true", help="each line of stdin is a text of its own: one output line each"
    )
    parser.add_argument(
        "--voice", default=DEFAULT_VOICE, help=f"the voice (its language decides; default {DEFAULT_VOICE})"
    )
    parser.add_argument(
        "--lexicon", type=Path, metavar="FILE", help="a JSON lexicon file applied after the spoken form"
    )
    parser.add_argument("--markup", choices=MARKUP_CHOICES, default="auto", help="how to read markup")
    parser.add_argument("--urls", choices=URL_CHOICES, default="speak", help="URLs and e-mail addresses")
    parser.add_argument(
        "--code", choices=CODE_CHOICES, default="inline", help="markdown code: spans only (default), none or all"
    )
    parser.add_argument("--emoji", choices=EMOJI_CHOICES, default="drop", help="emoji: dropped or named")
    parser.add_argument(
        "--explain", action="store_true", help="write the spoken text and each rule that changed it to stderr"
    )
    parser.set_defaults(handler=run_phonemes)


def chunks_of(text: str, language: str | None = None) -> list[tuple[str, bool]]:
    """The chunks a session speaks this text in, each with whether it continues a line; SSML stays whole."""
    if text.lstrip().startswith("<speak"):
        return [(text.strip(), False)]
    from voicedesk.engine.text.chunk_markup import LineStarts
    from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker

    chunker, lines = IncrementalSentenceChunker(language=language), LineStarts()
    lines.fed(text)
    chunks = [c for c in [*chunker.feed(text), chunker.flush()] if c and c.strip()]
    return [(chunk, not lines.begins_line(chunk)) for chunk in chunks]


def _texts(args: argparse.Namespace) -> Iterable[str]:
    from voicedesk.engine.errors import UsageError

    if args.lines:
        if args.text != "-":
            raise UsageError("--lines reads its texts from stdin.", "Give '-' as TEXT and pipe the lines in.")
        return (line.rstrip("\n") for line in sys.stdin)
    text = sys.stdin.read() if args.text == "-" else args.text
    if not text.strip():
        raise UsageError("Nothing to read: TEXT is empty.", "Give the text as an argument, or '-' and pipe it in.")
    return (text,)


def run_phonemes(args: argparse.Namespace) -> int:
    from voicedesk.engine.model.prepared import prepare_pieces
    from voicedesk.engine.model.voices import language_of, parse_voice_spec
    from voicedesk.engine.text.frontend.lexicon import EMPTY_LEXICON, load_lexicon_file

    language = language_of(parse_voice_spec(args.voice)[0].source)
    lexicon = load_lexicon_file(args.lexicon) if args.lexicon else EMPTY_LEXICON
    settings = TextSettings(args.markup, args.urls, args.code, args.emoji, lexicon)
    texts = _texts(args)
    with _front_end_process() as front_end:
        notes = front_end.submit(_notes)  # NeMo's grammars load there while the G2P loads here
        pipeline = g2p_pipeline(language)
        for note in notes.result():
            print(f"note: {note}", file=sys.stderr)
        for text in texts:
            calls = []
            for chunk, spoken in front_end.submit(_spoken, text, language, settings).result():
                if args.explain:
                    print(f"chunk:  {chunk}", file=sys.stderr)
                    print(f"spoken: {pipeline.g2p.spoken(spoken.text)}", file=sys.stderr)
                    for change in spoken.changes:
                        print(f"  {change.rule}: {change.source!r} -> {change.spoken!r}", file=sys.stderr)
                calls.extend(piece.phonemes for piece in prepare_pieces(pipeline, spoken, language))
            if args.lines:
                print("\t".join(calls), flush=True)
            else:
                print(*calls, sep="\n")
    sys.stdout.flush()
    return 0


def _front_end_process():
    """A process of its own for the front-end (NeMo and spaCy load on a core each); forked where safe, else spawned."""
    import multiprocessing
    import threading
    from concurrent.futures import ProcessPoolExecutor

    method = "fork" if sys.platform == "linux" and threading.active_count() == 1 else "spawn"
    return ProcessPoolExecutor(1, mp_context=multiprocessing.get_context(method))


def _notes() -> tuple[str, ...]:
    from voicedesk.engine.text.frontend import shared_front_end

    return shared_front_end().notes


def _spoken(text: str, language: str, settings: TextSettings) -> list[tuple[str, SpokenText]]:
    from voicedesk.engine.text.frontend import shared_front_end

    front_end = shared_front_end()
    return [
        (chunk, front_end.to_spoken(chunk, language, replace(settings, continues_line=continues)))
        for chunk, continues in chunks_of(text, language)
    ]


def g2p_pipeline(language: str):
    """The language's G2P as a session builds and wraps it, without a model or weights (English: misaki alone)."""
    from voicedesk.engine.model import weights
    from voicedesk.engine.model.g2p_pipelines import G2PPipelines, LanguageG2P

    pipelines = G2PPipelines(weights.REPO_ID, False, weights.cached_vocab())
    if language not in "ab":
        from voicedesk.engine.model import kokoro_synth  # noqa: F401 - silences kokoro's known start-up warnings

        # Some G2P libraries print notices on import (pyopenjtalk-plus: "ONNX Runtime is not installed"); stdout
        # is only for phonemes, so they go to stderr.
        with contextlib.redirect_stdout(sys.stderr):
            return pipelines.get(language)
    from voicedesk.engine.model.english_g2p import EnglishG2P

    weights.require_spacy_model()  # otherwise misaki would try spacy.cli.download (network)
    try:
        english = EnglishG2P(british=language == "b")
    except ImportError:  # a spaCy that needs torch after all: the session's way, slower
        return pipelines.get(language)
    english.g2p = LanguageG2P(language, english.g2p, pipelines.vocab, other=pipelines.other_g2p)
    return english
