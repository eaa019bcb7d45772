"""``voicedesk phonemes TEXT|-``: what the model will receive for a text, without running the model.

stdout holds one line per model call (each chunk the session would cut, then each piece of at most 510 phonemes)
with exactly the phoneme string ``KModel`` gets, and nothing else, so it can be diffed and piped. ``--explain``
writes to stderr the spoken text of each chunk and every rule that changed something. Only the G2P is built (no
weights are loaded), so it works before `voicedesk models fetch` has fetched a voice.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from dataclasses import replace
from pathlib import Path

from voicedesk.engine.model.voices import DEFAULT_VOICE


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
        "--voice", default=DEFAULT_VOICE, help=f"the voice (its language decides; default {DEFAULT_VOICE})"
    )
    parser.add_argument(
        "--lexicon", type=Path, metavar="FILE", help="a JSON lexicon file applied after the spoken form"
    )
    parser.add_argument(
        "--markup", choices=("auto", "plain", "markdown", "ssml"), default="auto", help="how to read markup"
    )
    parser.add_argument("--urls", choices=("speak", "skip"), default="speak", help="URLs and e-mail addresses")
    parser.add_argument("--code", choices=("skip", "read"), default="skip", help="markdown code spans and blocks")
    parser.add_argument("--emoji", choices=("drop", "name"), default="drop", help="emoji: dropped or named")
    parser.add_argument(
        "--explain", action="store_true", help="write the spoken text and each rule that changed it to stderr"
    )
    parser.set_defaults(handler=run_phonemes)


def chunks_of(text: str, language: str | None = None) -> list[tuple[str, bool]]:
    """The chunks a session speaks this text in with a voice of ``language``, each with whether it continues a
    line (``engine.text.chunk_markup``); SSML stays whole: its elements must not be cut."""
    if text.lstrip().startswith("<speak"):
        return [(text.strip(), False)]
    from voicedesk.engine.text.chunk_markup import LineStarts
    from voicedesk.engine.text.chunker import IncrementalSentenceChunker

    chunker, lines = IncrementalSentenceChunker(language=language), LineStarts()
    lines.fed(text)
    chunks = [c for c in [*chunker.feed(text), chunker.flush()] if c and c.strip()]
    return [(chunk, not lines.begins_line(chunk)) for chunk in chunks]


def run_phonemes(args: argparse.Namespace) -> int:
    from voicedesk.engine.errors import UsageError
    from voicedesk.engine.model.prepared import prepare_pieces
    from voicedesk.engine.model.voices import language_of, parse_voice_spec
    from voicedesk.engine.text.frontend import load_front_end
    from voicedesk.engine.text.frontend.lexicon import EMPTY_LEXICON, load_lexicon_file
    from voicedesk.engine.text.frontend.settings import TextSettings

    text = sys.stdin.read() if args.text == "-" else args.text
    if not text.strip():
        raise UsageError("Nothing to read: TEXT is empty.", "Give the text as an argument, or '-' and pipe it in.")
    language = language_of(parse_voice_spec(args.voice)[0].source)
    lexicon = load_lexicon_file(args.lexicon) if args.lexicon else EMPTY_LEXICON
    settings = TextSettings(args.markup, args.urls, args.code, args.emoji, lexicon)
    front_end = load_front_end()
    pipeline = _g2p_pipeline(language)
    for note in front_end.notes:
        print(f"note: {note}", file=sys.stderr)
    for chunk, continues_line in chunks_of(text, language):
        spoken = front_end.to_spoken(chunk, language, replace(settings, continues_line=continues_line))
        if args.explain:
            print(f"chunk:  {chunk}", file=sys.stderr)
            print(f"spoken: {pipeline.g2p.spoken(spoken.text)}", file=sys.stderr)
            for change in spoken.changes:
                print(f"  {change.rule}: {change.source!r} -> {change.spoken!r}", file=sys.stderr)
        for piece in prepare_pieces(pipeline, spoken, language):
            print(piece.phonemes)
    sys.stdout.flush()
    return 0


def _g2p_pipeline(language: str):  # kokoro is imported here, not when the command is registered
    """The language's ``KPipeline`` without a model, built exactly as the synthesizer builds it (the spoken forms
    and vocabulary of other languages included): G2P only (misaki, spaCy), no weights needed."""
    from voicedesk.engine.model import (
        kokoro_synth,  # noqa: F401 - silences kokoro's known start-up warnings
        weights,
    )
    from voicedesk.engine.model.g2p_pipelines import G2PPipelines

    # Some G2P libraries print notices on import (pyopenjtalk-plus: "ONNX Runtime is not installed"); stdout is only
    # for phonemes, so they go to stderr.
    with contextlib.redirect_stdout(sys.stderr):
        return G2PPipelines(weights.REPO_ID, False, weights.cached_vocab()).get(language)
