"""Where the container's model comes from: baked into the image, or SageMaker model data in /opt/ml/model.

Model data is data, never code: whoever can write the S3 object could put a wheel there, so nothing from it is
imported, unpacked or put on ``sys.path``, and weights load with ``weights_only=True``."""

from __future__ import annotations

import logging
import os
from collections.abc import MutableMapping
from pathlib import Path
from typing import Literal

log = logging.getLogger(__name__)

MODEL_DIR_ENV = "VOICEDESK_MODEL_DIR"
SAGEMAKER_MODEL_DIR = "/opt/ml/model"
HUB_REPO_FOLDER = "models--hexgrad--Kokoro-82M"
FLAT_MARKERS = ("config.json", "kokoro-v1_0.pth", "voices")

Layout = Literal["hub", "hf_home", "flat"]


def model_dir(environ: MutableMapping[str, str] = os.environ) -> Path:
    return Path(environ.get(MODEL_DIR_ENV) or SAGEMAKER_MODEL_DIR)


def detect_layout(folder: Path) -> Layout | None:
    if (folder / HUB_REPO_FOLDER).is_dir():
        return "hub"
    if (folder / "hub" / HUB_REPO_FOLDER).is_dir():
        return "hf_home"
    if any((folder / marker).exists() for marker in FLAT_MARKERS):
        return "flat"
    return None


def configure_hub_cache(environ: MutableMapping[str, str] = os.environ) -> Layout | None:
    """Points the Hugging Face cache at the model data when it is a cache; call before huggingface_hub loads."""
    folder = model_dir(environ)
    layout = detect_layout(folder)
    if layout == "hub":
        environ["HF_HUB_CACHE"] = str(folder)
    elif layout == "hf_home":
        environ["HF_HOME"] = str(folder)
        environ.pop("HF_HUB_CACHE", None)
    # The container never downloads: weights come from the image or the model data.
    environ.setdefault("HF_HUB_OFFLINE", "1")
    log.info("model data: %s", f"{folder} ({layout} layout)" if layout else "none; using the weights in the image")
    return layout


CODE_SUFFIXES = (".whl", ".py", ".pyc", ".so", ".egg")
"""Files that are (or carry) code; model data needs none."""


def code_files(folder: Path) -> list[Path]:
    """What in the model data looks like code, to be ignored and reported."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.name.endswith(CODE_SUFFIXES))


def prepare_model_dir(environ: MutableMapping[str, str] = os.environ, cache_dir: Path | None = None) -> None:
    """Imports a flat model folder's Kokoro files into the writable cache (blocking); code found there is reported,
    never imported."""
    folder = model_dir(environ)
    for path in code_files(folder):
        log.warning(
            "ignoring %s in the model data: the container never loads code from model data (its spaCy pipeline "
            "is installed in the image)",
            path,
        )
    if detect_layout(folder) != "flat":
        return
    from voicedesk.engine.errors import WeightsMissingError
    from voicedesk.engine.model.model_import import find_importable, validate, write_to_cache
    from voicedesk.engine.model.weights import REPO_ID, cached_file

    plan = find_importable(folder)
    plan.spacy_wheel = None
    if not plan.kokoro:
        return
    log.info("importing the model files in %s into the Hugging Face cache", folder)
    validate(plan)
    write_to_cache(plan.kokoro, REPO_ID, cache_dir)
    for repo_path in plan.kokoro:
        if cached_file(repo_path, REPO_ID, cache_dir) is None:
            raise WeightsMissingError(f"Imported {repo_path}, but the Hugging Face cache does not see it.")
        log.info("imported %s/%s", REPO_ID, repo_path)
