"""Speech-to-text models: faster-whisper's Whisper models in the Hugging Face cache, found without network; ``voicedesk
models fetch --stt NAME`` downloads one once and checks it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from voicedesk.engine.errors import ConnectionFailed, UsageError, WeightsMissingError

DEFAULT_STT_MODEL = "small.en"


def fetch_advice(name: str) -> str:
    if Path(name).expanduser().is_dir():
        return (
            "Point the setting at a folder with a faster-whisper (CTranslate2) model, or run "
            f"`voicedesk models fetch --stt {DEFAULT_STT_MODEL}`."
        )
    return f"Run `voicedesk models fetch --stt {name}` (downloads it once)."


def stt_model_dir(name: str) -> Path:
    """The model's folder (never downloads)."""
    folder = Path(name).expanduser()
    if folder.is_dir():
        return folder
    from faster_whisper.utils import download_model

    repo = _known(name)
    try:
        return Path(download_model(repo, local_files_only=True))
    except Exception as exc:  # huggingface_hub's "not in the cache" errors differ across releases
        raise WeightsMissingError(
            f"The speech-to-text model {name!r} is not on this machine ({type(exc).__name__}).", fetch_advice(name)
        ) from None


def fetch_stt_model(name: str, report: Callable[[str], None] = print) -> Path:
    """Downloads ``name`` into the cache (files already there and intact are kept); returns its folder."""
    from faster_whisper.utils import download_model
    from huggingface_hub import HfApi, constants, hf_hub_download

    if constants.HF_HUB_OFFLINE:
        raise WeightsMissingError(
            f"Cannot download {name!r}: HF_HUB_OFFLINE is set.", "Unset it and run the command again."
        )
    report(f"Fetching the speech-to-text model {name} from {constants.ENDPOINT}")
    try:
        folder = Path(download_model(_known(name)))
        repo = folder.parent.parent.name.removeprefix("models--").replace("--", "/")
        check = HfApi().verify_repo_checksums(repo, cache_dir=constants.HF_HUB_CACHE)
        for bad in check.mismatches:
            report(f"Damaged: {bad['path']}; downloading it again")
            hf_hub_download(repo, bad["path"], revision=check.revision, force_download=True)
    except (UsageError, WeightsMissingError):
        raise
    except Exception as exc:  # the HTTP library's errors vary by release
        raise ConnectionFailed(
            f"Downloading the speech-to-text model {name!r} failed ({type(exc).__name__}: {exc}).",
            "Check the network, the proxy settings and the free disk space, then run the command again.",
        ) from None
    report(f"Speech-to-text model {name}: {folder} ({len(check.mismatches)} file(s) repaired)")
    return folder


def _known(name: str) -> str:
    from faster_whisper import available_models

    if "/" in name or name in available_models():
        return name
    raise UsageError(
        f"Unknown speech-to-text model {name!r}.",
        f"Use one of {', '.join(available_models())}, or a hub id (owner/name).",
    )
