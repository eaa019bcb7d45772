"""Where Kokoro's files come from: the Hugging Face cache, read without network.

Loading never downloads (an unreachable hub costs ~23 s of retries per file): a missing file raises
``WeightsMissingError`` naming the fix. spaCy's ``en_core_web_sm`` is not on PyPI, so its wheel comes from the hub
through the same cache and is unpacked into our data folder, never site-packages."""

from __future__ import annotations

import importlib
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from huggingface_hub import constants, hf_hub_download, try_to_load_from_cache
from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError, OfflineModeIsEnabled

from voicedesk.engine.errors import ConnectionFailed, ErrorCode, VoicedeskError, WeightsMissingError
from voicedesk.engine.model.languages import (
    SPACY_PACKAGE,
    activate_spacy_model_dir,
    spacy_model_dir,
    spacy_model_location,
)
from voicedesk.engine.model.voices import ENGLISH_VOICES, KNOWN_VOICES

REPO_ID = "hexgrad/Kokoro-82M"
CONFIG_FILE = "config.json"
MODEL_FILES = {"hexgrad/Kokoro-82M": "kokoro-v1_0.pth", "hexgrad/Kokoro-82M-v1.1-zh": "kokoro-v1_1-zh.pth"}
SPACY_REPO_ID = "spacy/en_core_web_sm"
SPACY_WHEEL = "en_core_web_sm-any-py3-none-any.whl"
DEFAULT_FETCH_VOICES = ENGLISH_VOICES

FETCH_COMMAND = "voicedesk models fetch"
IMPORT_COMMAND = "voicedesk models import DIR"
REACHABILITY_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class ModelFiles:
    config: Path
    model: Path


def model_file_name(repo_id: str = REPO_ID) -> str:
    try:
        return MODEL_FILES[repo_id]
    except KeyError:
        raise VoicedeskError(
            ErrorCode.WEIGHTS_MISSING,
            f"Unknown Kokoro repository {repo_id!r}; use one of: {', '.join(MODEL_FILES)}.",
        ) from None


def voice_file_name(name: str) -> str:
    return f"voices/{name}.pt"


def hub_cache_dir(cache_dir: str | Path | None = None) -> Path:
    return Path(cache_dir) if cache_dir is not None else Path(constants.HF_HUB_CACHE)


def is_offline() -> bool:
    return bool(constants.HF_HUB_OFFLINE)


def fix_hint() -> str:
    """The command(s) that bring missing files, worded for this machine's network situation."""
    if is_offline():
        return (
            f"This machine is offline (HF_HUB_OFFLINE is set): copy the files from a machine that has them "
            f"and run `{IMPORT_COMMAND}`, or unset HF_HUB_OFFLINE and run `{FETCH_COMMAND}`."
        )
    return f"Run `{FETCH_COMMAND}` (downloads from huggingface.co), or `{IMPORT_COMMAND}` on an offline machine."


# ---- lookups (never touch the network) -----------------------------------------------------------------


def cached_file(filename: str, repo_id: str = REPO_ID, cache_dir: str | Path | None = None) -> Path | None:
    found = try_to_load_from_cache(repo_id, filename, cache_dir=str(hub_cache_dir(cache_dir)))
    return Path(found) if isinstance(found, str) else None


def cached_vocab(repo_id: str = REPO_ID, cache_dir: str | Path | None = None) -> frozenset[str] | None:
    """The model's phoneme vocabulary from the cached config.json (None: not fetched, or unreadable)."""
    import json

    config = cached_file(CONFIG_FILE, repo_id, cache_dir)
    try:
        return frozenset(json.loads(config.read_text(encoding="utf-8"))["vocab"]) if config else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def snapshot_dir(repo_id: str = REPO_ID, cache_dir: str | Path | None = None) -> Path | None:
    """The cache folder of the revision ``main`` points to, if any."""
    from huggingface_hub.file_download import repo_folder_name

    repo = hub_cache_dir(cache_dir) / repo_folder_name(repo_id=repo_id, repo_type="model")
    try:
        revision = (repo / "refs" / "main").read_text().strip()
    except OSError:
        return None
    folder = repo / "snapshots" / revision
    return folder if folder.is_dir() else None


def local_voice_names(repo_id: str = REPO_ID, cache_dir: str | Path | None = None) -> list[str]:
    """Voice packs present in the cache's current snapshot (known Kokoro voices and imported ones)."""
    folder = snapshot_dir(repo_id, cache_dir)
    if folder is None or not (folder / "voices").is_dir():
        return []
    return sorted(p.stem for p in (folder / "voices").glob("*.pt") if p.is_file())


def require_file(
    filename: str, repo_id: str = REPO_ID, cache_dir: str | Path | None = None, what: str | None = None
) -> Path:
    path = cached_file(filename, repo_id, cache_dir)
    if path is None:
        label = what or filename
        raise WeightsMissingError(
            f"Kokoro's {label} ({repo_id}/{filename}) is not in the Hugging Face cache at {hub_cache_dir(cache_dir)}.",
            fix_hint(),
        )
    return path


def require_model_files(repo_id: str = REPO_ID, cache_dir: str | Path | None = None) -> ModelFiles:
    missing = [f for f in (CONFIG_FILE, model_file_name(repo_id)) if cached_file(f, repo_id, cache_dir) is None]
    if missing:
        names = " and ".join(f"{repo_id}/{f}" for f in missing)
        raise WeightsMissingError(
            f"The Kokoro model is not installed: {names} missing from the Hugging Face cache at "
            f"{hub_cache_dir(cache_dir)}.",
            fix_hint(),
        )
    return ModelFiles(
        config=require_file(CONFIG_FILE, repo_id, cache_dir),
        model=require_file(model_file_name(repo_id), repo_id, cache_dir),
    )


# ---- the spaCy pipeline -----------------------------------------------------------------------------------


def require_spacy_model() -> Path:
    """Checks the G2P's spaCy pipeline is loadable, so misaki never tries ``spacy.cli.download``."""
    location = spacy_model_location()
    if location is None:
        raise WeightsMissingError(
            f"The English G2P needs spaCy's {SPACY_PACKAGE} pipeline, which is not installed "
            f"(looked in this Python's packages and {spacy_model_dir()}).",
            fix_hint(),
        )
    return location


def check_spacy_wheel(wheel: Path) -> None:
    """Raises ``WeightsMissingError`` unless ``wheel`` is a wheel of the spaCy pipeline."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            names = archive.namelist()
    except (OSError, zipfile.BadZipFile) as exc:
        raise WeightsMissingError(f"{wheel} is not a readable wheel (zip) file: {exc}.") from exc
    has_package = any(n.startswith(f"{SPACY_PACKAGE}/") for n in names)
    has_metadata = any(n.split("/")[0].endswith(".dist-info") for n in names)
    if not (has_package and has_metadata):
        raise WeightsMissingError(
            f"{wheel} is not a wheel of spaCy's {SPACY_PACKAGE} pipeline (no {SPACY_PACKAGE}/ package or "
            f".dist-info inside). Use {SPACY_WHEEL} from huggingface.co/{SPACY_REPO_ID}."
        )


def install_spacy_wheel(wheel: Path, target: Path | None = None) -> Path:
    """Unpacks the pipeline's wheel into ``target`` (default ``spacy_model_dir()``); returns the package dir."""
    check_spacy_wheel(wheel)
    target = target or spacy_model_dir()
    target.parent.mkdir(parents=True, exist_ok=True)
    # Unpack next to the target and swap it in, so an interrupted install never leaves half a pipeline.
    staging = Path(tempfile.mkdtemp(prefix=".spacy-", dir=target.parent))
    try:
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(staging)
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    importlib.invalidate_caches()
    activate_spacy_model_dir()
    return target / SPACY_PACKAGE


# ---- fetching (the only place that downloads) -----------------------------------------------------------


def resolve_fetch_voices(voices: str | Iterable[str] | None) -> list[str]:
    """``None`` → the English voices; ``"all"`` → every Kokoro voice; else a comma list or iterable."""
    if voices is None:
        return list(DEFAULT_FETCH_VOICES)
    names = [v.strip() for v in voices.split(",")] if isinstance(voices, str) else [v.strip() for v in voices]
    names = [n for n in names if n]
    if names == ["all"]:
        return list(KNOWN_VOICES)
    return list(dict.fromkeys(names))


def fetch(
    voices: str | Iterable[str] | None = None,
    repo_id: str = REPO_ID,
    cache_dir: str | Path | None = None,
    spacy: bool = True,
    report: Callable[[str], None] = print,
) -> list[Path]:
    """Downloads config, weights, voices and the spaCy pipeline into the cache (files already there are kept)."""
    names = resolve_fetch_voices(voices)
    unknown = [n for n in names if n not in KNOWN_VOICES]
    if repo_id == REPO_ID and unknown:
        raise VoicedeskError(
            ErrorCode.UNKNOWN_VOICE,
            f"Not Kokoro-82M voices: {', '.join(unknown)}. Known voices: {', '.join(KNOWN_VOICES)} (or --voices all).",
        )
    wanted = [(repo_id, CONFIG_FILE), (repo_id, model_file_name(repo_id))]
    wanted += [(repo_id, voice_file_name(n)) for n in names]
    need_spacy = spacy and spacy_model_location() is None
    if need_spacy:
        wanted.append((SPACY_REPO_ID, SPACY_WHEEL))
    paths: list[Path] = []
    reachable = False
    for repo, filename in wanted:
        cached = cached_file(filename, repo, cache_dir)
        if cached is not None:
            paths.append(cached)
            continue
        if not reachable:
            _check_reachable(repo, filename)
            reachable = True
        report(f"Downloading {repo}/{filename}")
        paths.append(_download(repo, filename, cache_dir))
    if need_spacy:
        package = install_spacy_wheel(paths[-1])
        report(f"Installed spaCy's {SPACY_PACKAGE} pipeline in {package.parent}")
    return paths


def _check_reachable(repo_id: str, filename: str) -> None:
    """One quick request before downloading: hf_hub_download retries a dead connection for ~23 s."""
    if is_offline():
        raise WeightsMissingError(
            f"Cannot download {repo_id}/{filename}: HF_HUB_OFFLINE is set.",
            f"Unset it to download, or copy the files from another machine and run `{IMPORT_COMMAND}`.",
        )
    from huggingface_hub import HfApi

    try:
        HfApi().model_info(repo_id, timeout=REACHABILITY_TIMEOUT_S)
    except HfHubHTTPError:
        pass  # the server answers; let the download report what it says about the file
    except Exception as exc:  # the HTTP library's own errors differ across huggingface_hub releases
        raise ConnectionFailed(
            f"Cannot reach {constants.ENDPOINT} to download {repo_id}/{filename} ({type(exc).__name__}: {exc}). "
            f"Check the network or proxy settings, or on an offline machine run `{IMPORT_COMMAND}`.",
        ) from exc


def _download(repo_id: str, filename: str, cache_dir: str | Path | None) -> Path:
    try:
        return Path(hf_hub_download(repo_id, filename, cache_dir=str(hub_cache_dir(cache_dir))))
    except (OfflineModeIsEnabled, LocalEntryNotFoundError) as exc:
        raise ConnectionFailed(
            f"Could not reach huggingface.co to download {repo_id}/{filename} ({type(exc).__name__}). "
            f"Check the network or proxy settings, or on an offline machine run `{IMPORT_COMMAND}`.",
        ) from exc
    except HfHubHTTPError as exc:
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if status == 404:
            raise VoicedeskError(
                ErrorCode.WEIGHTS_MISSING,
                f"{repo_id} has no file {filename} on huggingface.co; check the name "
                "(`voicedesk models status` lists the known voices).",
            ) from exc
        raise ConnectionFailed(f"Downloading {repo_id}/{filename} failed: {exc}. Try again later.") from exc
    except Exception as exc:  # connection drops, disk full: the HTTP library's errors vary by release
        raise ConnectionFailed(
            f"Downloading {repo_id}/{filename} failed ({type(exc).__name__}: {exc}). Check the network and "
            f"the free disk space in {hub_cache_dir(cache_dir)}, then run the command again.",
        ) from exc


# ---- what is here ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FileStatus:
    label: str
    repo_id: str
    filename: str
    path: Path | None

    @property
    def present(self) -> bool:
        return self.path is not None

    @property
    def size(self) -> int | None:
        return self.path.stat().st_size if self.path is not None else None


@dataclass(frozen=True, slots=True)
class ModelsStatus:
    cache_dir: Path
    offline: bool
    files: tuple[FileStatus, ...]
    """config, model, then one entry per voice pack present or known."""
    spacy_model: Path | None
    spacy_dir: Path

    @property
    def model_ready(self) -> bool:
        return all(f.present for f in self.files if not f.filename.startswith("voices/"))

    @property
    def voices_present(self) -> list[str]:
        return [Path(f.filename).stem for f in self.voice_files if f.present]

    @property
    def voice_files(self) -> list[FileStatus]:
        return [f for f in self.files if f.filename.startswith("voices/")]

    @property
    def ready(self) -> bool:
        return self.model_ready and self.spacy_model is not None and bool(self.voices_present)


def models_status(repo_id: str = REPO_ID, cache_dir: str | Path | None = None) -> ModelsStatus:
    files = [
        FileStatus("config", repo_id, CONFIG_FILE, cached_file(CONFIG_FILE, repo_id, cache_dir)),
        FileStatus(
            "weights", repo_id, model_file_name(repo_id), cached_file(model_file_name(repo_id), repo_id, cache_dir)
        ),
    ]
    names = list(dict.fromkeys([*KNOWN_VOICES, *local_voice_names(repo_id, cache_dir)]))
    for name in names:
        filename = voice_file_name(name)
        files.append(FileStatus("voice", repo_id, filename, cached_file(filename, repo_id, cache_dir)))
    return ModelsStatus(
        cache_dir=hub_cache_dir(cache_dir),
        offline=is_offline(),
        files=tuple(files),
        spacy_model=spacy_model_location(),
        spacy_dir=spacy_model_dir(),
    )
