"""``voicedesk models fetch | status | import DIR``: get Kokoro's files onto this machine and check them."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from voicedesk.engine.errors import VoicedeskError

if TYPE_CHECKING:
    from voicedesk.engine.model.weights import ModelsStatus


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "models",
        help="download, check or import Kokoro's model files",
        description="Kokoro's weights, voices and the G2P's spaCy pipeline live in the Hugging Face cache "
        "(HF_HOME). Fetch them online, import them from a folder offline, and check what is there.",
    )
    actions = parser.add_subparsers(dest="models_command", metavar="ACTION", required=True)

    fetch = actions.add_parser(
        "fetch",
        help="download the model, voices and spaCy pipeline (with progress bars)",
        description="Downloads config.json, kokoro-v1_0.pth and voice packs from huggingface.co/hexgrad/Kokoro-82M "
        "and spaCy's en_core_web_sm from huggingface.co/spacy/en_core_web_sm, then builds the English "
        "text-normalization grammars (NeMo; about a minute, once). Files already there are kept.",
    )
    fetch.add_argument(
        "--voices",
        default=None,
        metavar="NAMES",
        help="comma-separated voice names (af_heart,am_adam), or 'all' for every language "
        "(default: all American and British English voices)",
    )
    fetch.add_argument(
        "--languages",
        default=None,
        metavar="LANGS",
        help="comma-separated languages to set up (en, ja, zh, es, fr, hi, it, pt, or all): installs each one's "
        "G2P packages from PyPI and downloads its voices, so nothing is fetched when a voice is first used",
    )
    fetch.add_argument(
        "--stt",
        default=None,
        metavar="NAME",
        help="instead, download a speech-to-text model for listening (faster-whisper's names: tiny.en, base.en, "
        "small.en, small, medium, large-v3, ... or a hub id owner/name); damaged files are fetched again",
    )
    fetch.set_defaults(handler=run_fetch)

    status = actions.add_parser(
        "status",
        help="show what is installed and what is missing (exit status 1 when not ready)",
    )
    status.add_argument("--all-voices", action="store_true", help="list every Kokoro voice, downloaded or not")
    status.set_defaults(handler=run_status)

    import_ = actions.add_parser(
        "import",
        help="copy model files from a folder (e.g. a USB stick) into the cache, for offline machines",
        description="DIR holds config.json, kokoro-v1_0.pth, voices/*.pt (or *.pt next to the model) and "
        "optionally en_core_web_sm-*.whl, as downloaded from huggingface.co on another machine. Everything is "
        "checked before anything is copied.",
    )
    import_.add_argument("folder", type=Path, metavar="DIR")
    import_.add_argument(
        "--languages",
        default=None,
        metavar="LANGS",
        help="also install these languages' G2P packages from the wheels in DIR (pip install --no-index); "
        "make them on a machine with internet with `pip download -d DIR PACKAGES` (status lists the packages)",
    )
    import_.set_defaults(handler=run_import)
    return parser


def run_fetch(args: argparse.Namespace) -> int:
    from voicedesk.engine.model import languages, weights

    if getattr(args, "stt", None):
        from voicedesk.engine.model.stt_models import fetch_stt_model

        fetch_stt_model(args.stt)
        return 0
    voices = args.voices
    codes = languages.parse_languages(args.languages) if getattr(args, "languages", None) else []
    if codes:
        languages.install_language_packages(codes)
        named = weights.resolve_fetch_voices(voices) if voices else []
        from voicedesk.engine.model.voices import KNOWN_VOICES

        voices = ",".join(dict.fromkeys([*named, *(v for v in KNOWN_VOICES if v[0] in codes)]))
    weights.fetch(voices=voices)
    from voicedesk.engine.text.frontend.grammars import build_grammars, nemo_version

    if nemo_version() is not None:  # the spoken form's compiled grammars, so no request ever waits for them
        print(f"Text-normalization grammars: {build_grammars()}")
    print("Done.", end=" ")
    return run_status(argparse.Namespace(all_voices=False), header=False)


def run_status(args: argparse.Namespace, header: bool = True) -> int:
    from voicedesk.engine.model import weights

    status = weights.models_status()
    print(format_status(status, all_voices=args.all_voices, header=header))
    return 0 if status.ready else 1


def run_import(args: argparse.Namespace) -> int:
    from voicedesk.engine.model import languages
    from voicedesk.engine.model.model_import import import_dir

    codes = languages.parse_languages(args.languages) if getattr(args, "languages", None) else []
    if codes:
        languages.install_language_packages(codes, wheel_dir=args.folder.expanduser())
    import_dir(args.folder, languages_only=bool(codes))
    return run_status(argparse.Namespace(all_voices=False), header=False)


def format_status(status: ModelsStatus, all_voices: bool = False, header: bool = True) -> str:
    from voicedesk.engine.model import weights
    from voicedesk.engine.model.voices import KNOWN_VOICES

    lines = []
    if header:
        network = "HF_HUB_OFFLINE is set: no downloads" if status.offline else "downloads allowed"
        lines.append(f"Hugging Face cache: {status.cache_dir} ({network})")
    missing: list[str] = []
    for entry in status.files:
        if entry.filename.startswith("voices/"):
            continue
        if entry.present:
            lines.append(f"  {entry.label:<8} ok       {_size(entry.size):>9}  {entry.path}")
        else:
            lines.append(f"  {entry.label:<8} MISSING             {entry.repo_id}/{entry.filename}")
            missing.append(entry.filename)
    present = status.voices_present
    known_present = [v for v in present if v in KNOWN_VOICES]
    custom = [v for v in present if v not in KNOWN_VOICES]
    summary = f"{len(known_present)} of {len(KNOWN_VOICES)} Kokoro voices"
    if custom:
        summary += f" + {len(custom)} of your own"
    lines.append(f"  {'voices':<8} {'ok' if present else 'MISSING':<8} {summary}: {', '.join(present) or 'none'}")
    if not present:
        missing.append("voice packs")
    if all_voices:
        for entry in status.voice_files:
            mark = "ok" if entry.present else "-"
            lines.append(f"    {Path(entry.filename).stem:<16} {mark:<3} {_size(entry.size) if entry.present else ''}")
    if status.spacy_model is not None:
        lines.append(f"  {'G2P':<8} ok       spaCy {weights.SPACY_PACKAGE} at {status.spacy_model}")
    else:
        lines.append(f"  {'G2P':<8} MISSING  spaCy {weights.SPACY_PACKAGE} (unpacked into {status.spacy_dir})")
        missing.append(f"spaCy {weights.SPACY_PACKAGE}")
    lines += format_languages()
    if status.ready:
        lines.append("Ready: the local engine can start.")
    else:
        lines.append(f"Not ready: missing {', '.join(missing)}.")
        lines.append(f"Fix: {weights.fix_hint()}")
    return "\n".join(lines)


def format_languages() -> list[str]:
    """One line per language: ready, or what is missing and the command that sets it up."""
    from voicedesk.engine.model import languages

    lines = ["  languages:"]
    for status in languages.languages_status():
        lang = status.language
        if status.ready:
            lines.append(f"    {lang.tag:<6} ok       {lang.name}")
        else:
            packages = f" (pip packages: {' '.join(lang.packages)})" if lang.packages else ""
            lines.append(
                f"    {lang.tag:<6} MISSING  {lang.name}: {', '.join(status.missing)}; fix: {status.fix}{packages}"
            )
    return lines


def _size(size: int | None) -> str:
    if size is None:
        return ""
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="voicedesk")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["models", *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.handler(args) or 0)
    except VoicedeskError as exc:
        print(f"voicedesk: {exc.message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
