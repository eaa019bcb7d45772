"""The offline Japanese set-up of docs/languages.md, from a fresh venv with only the downloaded folder.

tests/run.sh downloads the folder as the docs say (``pip download -d DIR`` of what
``languages.download_requirements`` names, ``.cache/offline-ja``). A fresh venv sees voicedesk and its other
dependencies but none of the Japanese packages (a view of this venv's site-packages without them), so
``voicedesk models import DIR --languages ja`` really installs them, with no network at all (``unshare -n``):
unidic-lite is a source package, built there with the folder's setuptools and wheel.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv
from collections.abc import Callable
from pathlib import Path

import pytest

from voicedesk.engine.model.languages import download_requirements

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
WHEELS = REPO / ".cache" / "offline-ja"
JAPANESE = re.compile(r"(fugashi|jaconv|mojimoji|pyopenjtalk|unidic)", re.IGNORECASE)


def fresh_venv(folder: Path) -> Path:
    """A new venv whose site-packages sees this one's, less the Japanese packages; returns its python."""
    venv.create(folder, with_pip=True)
    view = folder / "view"
    paths = []
    for index, entry in enumerate(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()):
        shown = view / str(index)
        shown.mkdir(parents=True)
        for item in Path(entry).iterdir():
            path_lines = item.suffix == ".pth" and not item.read_text().startswith("import")
            if not JAPANESE.match(item.name) and not path_lines:  # a path .pth: its folder is in sys.path too
                (shown / item.name).symlink_to(item)
        paths.append(str(shown))
    [site_packages] = (folder / "lib").glob("python3*/site-packages")
    (site_packages / "_view.pth").write_text(f"import site; [site.addsitedir(p) for p in {paths!r}]\n")
    return folder / "bin" / "python"


@pytest.fixture(scope="module")
def new_venv(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Path], Path]:
    """``fresh_venv`` made once (ensurepip is seconds of CPU), copied untouched for each test; returns its python."""
    template = fresh_venv(tmp_path_factory.mktemp("template") / "venv").parents[1]

    def copy(folder: Path) -> Path:
        shutil.copytree(template, folder, symlinks=True)
        return folder / "bin" / "python"

    return copy


def voicedesk(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    offline = (
        ["unshare", "-n"]
        if shutil.which("unshare") and subprocess.run(["unshare", "-n", "true"]).returncode == 0
        else []
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")} | {"PIP_CONFIG_FILE": os.devnull}
    return subprocess.run(
        [*offline, str(python), "-m", "voicedesk.engine.commands", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


@pytest.fixture(scope="module")
def wheels() -> Path:
    if not WHEELS.is_dir():
        pytest.fail(
            f"{WHEELS} is missing: tests/run.sh downloads it (pip download -d DIR {download_requirements('j')})"
        )
    return WHEELS


def test_the_documented_offline_japanese_set_up_works_from_the_folder_alone(wheels, new_venv, tmp_path):
    python = new_venv(tmp_path / "venv")
    status = voicedesk(python, "models", "status")
    assert re.search(r"ja +MISSING", status.stdout), status.stdout + status.stderr

    done = voicedesk(python, "models", "import", str(wheels), "--languages", "ja")
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"ja +ok", done.stdout), done.stdout
    said = voicedesk(python, "phonemes", "--voice", "jf_alpha", "今日は4月1日です。")
    assert said.returncode == 0, said.stderr
    assert said.stdout.split() == ["kʲoː", "βa", "ɕiɡaʦɨʦɨitaʨi", "desɨ."]


def test_a_folder_without_setuptools_says_why_pip_failed(wheels, new_venv, tmp_path):
    """unidic-lite cannot be built without setuptools and wheel in the folder: pip's own reason is shown, not its
    last line, with the download command that brings them."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    for item in wheels.iterdir():
        if not item.name.startswith(("setuptools", "wheel")):
            (folder / item.name).symlink_to(item)
    python = new_venv(tmp_path / "venv")
    done = voicedesk(python, "models", "import", str(folder), "--languages", "ja")
    assert done.returncode != 0
    assert "setuptools" in done.stderr and "No matching distribution" in done.stderr, done.stderr
    assert "setuptools wheel" in done.stderr  # the hint's download command brings them
