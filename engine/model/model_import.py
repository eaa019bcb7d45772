"""``voicedesk models import DIR``: fill the Hugging Face cache from a folder, for machines without internet. Every
file is checked before anything is written, then copied into the layout ``hf_hub_download`` reads offline."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from huggingface_hub.file_download import repo_folder_name

from voicedesk.engine.errors import VoiceError, WeightsMissingError
from voicedesk.engine.model.voices import check_voice_pack
from voicedesk.engine.model.weights import (
    CONFIG_FILE,
    REPO_ID,
    SPACY_PACKAGE,
    SPACY_REPO_ID,
    SPACY_WHEEL,
    cached_file,
    check_spacy_wheel,
    hub_cache_dir,
    install_spacy_wheel,
    model_file_name,
    voice_file_name,
)

CHECKPOINT_KEYS = ("bert", "bert_encoder", "predictor", "text_encoder", "decoder")
CONFIG_KEYS = ("vocab", "n_token", "plbert", "istftnet", "hidden_dim", "style_dim")


@dataclass
class ImportPlan:
    """Files found in the source folder, keyed by their path inside the hub repository."""

    kokoro: dict[str, Path] = field(default_factory=dict)
    spacy_wheel: Path | None = None


@dataclass(frozen=True, slots=True)
class ImportResult:
    imported: tuple[str, ...]
    snapshot: Path
    spacy_package: Path | None


def find_importable(source: Path, repo_id: str = REPO_ID, allow_empty: bool = False) -> ImportPlan:
    if not source.is_dir():
        raise WeightsMissingError(f"{source} is not a folder; give the folder that holds the Kokoro files.")
    plan = ImportPlan()
    model_name = model_file_name(repo_id)
    for name in (CONFIG_FILE, model_name):
        if (source / name).is_file():
            plan.kokoro[name] = source / name
    voice_files = [p for p in source.glob("*.pt")] + [p for p in (source / "voices").glob("*.pt")]
    for path in sorted(voice_files):
        if path.is_file():
            plan.kokoro[voice_file_name(path.stem)] = path
    wheels = sorted(p for p in source.glob("*.whl") if p.name.startswith(f"{SPACY_PACKAGE}-"))
    if len(wheels) > 1:
        raise WeightsMissingError(
            f"{source} holds several {SPACY_PACKAGE} wheels ({', '.join(w.name for w in wheels)}); keep one."
        )
    plan.spacy_wheel = wheels[0] if wheels else None
    if not plan.kokoro and plan.spacy_wheel is None and not allow_empty:
        raise WeightsMissingError(
            f"Nothing to import in {source}: expected {CONFIG_FILE}, {model_name}, voices/<name>.pt "
            f"and/or {SPACY_WHEEL} (as in huggingface.co/{repo_id} and huggingface.co/{SPACY_REPO_ID})."
        )
    return plan


def validate_config(path: Path) -> None:
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WeightsMissingError(f"{path} is not a readable JSON file: {exc}.") from exc
    missing = [k for k in CONFIG_KEYS if not isinstance(config, dict) or k not in config]
    if missing:
        raise WeightsMissingError(
            f"{path} is not Kokoro's config.json (missing {', '.join(missing)}); take it from {REPO_ID}."
        )


def validate_checkpoint(path: Path) -> None:
    import torch

    try:
        # mmap: checks a 330 MB checkpoint without reading it all into memory.
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception as exc:  # torch raises many kinds for a bad file; all mean "not loadable"
        raise WeightsMissingError(f"{path} is not a loadable torch checkpoint: {exc}.") from exc
    if not isinstance(state, dict):
        raise WeightsMissingError(f"{path} holds a {type(state).__name__}, not Kokoro's dict of state dicts.")
    missing = [k for k in CHECKPOINT_KEYS if not isinstance(state.get(k), dict)]
    if missing:
        raise WeightsMissingError(
            f"{path} is not a Kokoro checkpoint: it lacks the parts {', '.join(missing)} "
            f"(expected {', '.join(CHECKPOINT_KEYS)})."
        )


def validate_voice(path: Path) -> None:
    import torch

    try:
        pack = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # as in validate_checkpoint
        raise VoiceError(f"{path} is not a loadable voice pack: {exc}.") from exc
    check_voice_pack(pack, str(path))


def validate(plan: ImportPlan, repo_id: str = REPO_ID) -> None:
    for repo_path, path in plan.kokoro.items():
        if repo_path == CONFIG_FILE:
            validate_config(path)
        elif repo_path == model_file_name(repo_id):
            validate_checkpoint(path)
        else:
            validate_voice(path)
    if plan.spacy_wheel is not None:
        check_spacy_wheel(plan.spacy_wheel)


def import_dir(
    source: str | Path,
    repo_id: str = REPO_ID,
    cache_dir: str | Path | None = None,
    spacy_target: Path | None = None,
    report: Callable[[str], None] = print,
    languages_only: bool = False,
) -> ImportResult:
    """Validates everything in ``source``, then copies it into the cache; nothing is written on a bad file.
    ``languages_only``: a folder of language wheels alone is no error."""
    source = Path(source).expanduser()
    plan = find_importable(source, repo_id, allow_empty=languages_only)
    validate(plan, repo_id)
    snapshot = hub_cache_dir(cache_dir)
    if plan.kokoro:
        snapshot = write_to_cache(plan.kokoro, repo_id, cache_dir)
        for repo_path in plan.kokoro:
            report(f"Imported {repo_id}/{repo_path}")
            if cached_file(repo_path, repo_id, cache_dir) is None:  # the layout is ours to get right
                raise WeightsMissingError(f"Imported {repo_path}, but the Hugging Face cache does not see it.")
    package = None
    if plan.spacy_wheel is not None:
        wheel_snapshot = write_to_cache({SPACY_WHEEL: plan.spacy_wheel}, SPACY_REPO_ID, cache_dir)
        package = install_spacy_wheel(wheel_snapshot / SPACY_WHEEL, spacy_target)
        report(f"Installed spaCy's {SPACY_PACKAGE} pipeline in {package.parent}")
    return ImportResult(tuple(plan.kokoro), snapshot, package)


def write_to_cache(files: dict[str, Path], repo_id: str, cache_dir: str | Path | None = None) -> Path:
    """Copies ``files`` (repo path → source) into the snapshot ``main`` names; returns the snapshot folder."""
    repo = hub_cache_dir(cache_dir) / repo_folder_name(repo_id=repo_id, repo_type="model")
    ref = repo / "refs" / "main"
    revision = ref.read_text().strip() if ref.is_file() else None
    if not revision or not (repo / "snapshots" / revision).is_dir():
        revision = _content_revision(files)
    snapshot = repo / "snapshots" / revision
    for repo_path, path in files.items():
        target = snapshot / repo_path
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".importing")
        shutil.copyfile(path, partial)
        os.replace(partial, target)
        # An earlier online lookup may have recorded the file as absent for this revision.
        (repo / ".no_exist" / revision / repo_path).unlink(missing_ok=True)
    ref.parent.mkdir(parents=True, exist_ok=True)
    # huggingface_hub reads the ref verbatim: no trailing newline.
    ref.write_text(revision)
    return snapshot


def _content_revision(files: dict[str, Path]) -> str:
    digest = hashlib.sha1(usedforsecurity=False)
    for repo_path in sorted(files):
        with files[repo_path].open("rb") as f:
            digest.update(repo_path.encode() + b"\0" + hashlib.file_digest(f, "sha256").digest())
    return digest.hexdigest()
