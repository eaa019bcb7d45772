"""Where the container's model comes from: baked into the image, or SageMaker model data in /opt/ml/model.

SageMaker unpacks the model's ``ModelDataUrl`` tarball into ``/opt/ml/model`` (read-only). Three layouts work:

- a Hugging Face hub cache (``models--hexgrad--Kokoro-82M/...`` at the top): read in place (``HF_HUB_CACHE``);
- an ``HF_HOME`` (``hub/models--hexgrad--Kokoro-82M/...``): read in place (``HF_HOME``);
- a flat folder like the hub repository (``config.json``, ``kokoro-v1_0.pth``, ``voices/*.pt``, optionally
  spaCy's wheel): checked and imported into the image's writable cache, exactly as ``voicedesk models import``.

With none of these, the weights baked into the image at build time are used.
"""

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


def prepare_model_dir(environ: MutableMapping[str, str] = os.environ, cache_dir: Path | None = None) -> None:
    """Imports a flat model folder into the writable cache (blocking: run it in the model loader)."""
    folder = model_dir(environ)
    if detect_layout(folder) != "flat":
        return
    from engine.model_import import import_dir

    log.info("importing the model files in %s into the Hugging Face cache", folder)
    import_dir(folder, cache_dir=cache_dir, report=log.info)
