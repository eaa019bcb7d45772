"""The endpoint image's install: only the modules packaging/Dockerfile copies (the import closure of what the image
runs), installed the way the image does (pip, no dependencies fetched), still has the `voicedesk` command, runs
`serve`, and says what to install for the commands whose part it leaves out."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from tests.support.image import SOURCE_ROOT, image_files


@pytest.mark.slow
def test_the_image_sources_install_a_voicedesk_that_serves_and_names_what_is_missing(tmp_path):
    source = tmp_path / "src"
    for path, target in image_files().items():
        if target.startswith(SOURCE_ROOT) and not target.startswith(SOURCE_ROOT + "packaging/"):
            (source / target.removeprefix(SOURCE_ROOT)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, source / target.removeprefix(SOURCE_ROOT))
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    # The suite's installed libraries (setuptools, Starlette, ...) under the new environment, as the image's lock is.
    libraries = [p for p in sys.path if p.endswith("site-packages")]
    site_packages = Path(sysconfig.get_path("purelib", vars={"base": str(env_dir), "platbase": str(env_dir)}))
    (site_packages / "zz_libraries.pth").write_text("\n".join(libraries) + "\n")
    python = env_dir / "bin" / "python"
    install = [python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index", str(source)]
    subprocess.run(install, check=True, capture_output=True, timeout=300)
    voicedesk = env_dir / "bin" / "voicedesk"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([voicedesk, *args], capture_output=True, text=True, timeout=120, cwd=tmp_path)

    helped = run("--help")
    assert helped.returncode == 0, helped.stderr
    assert "serve          run the streaming speech endpoint" in helped.stdout
    assert "say            (not installed: needs voicedesk[desktop])" in helped.stdout
    assert run("serve", "--help").returncode == 0
    assert run("models", "--help").returncode == 0  # the build's `voicedesk models fetch`
    deploy = run("deploy", "status")  # deploy tooling is not in the image
    assert deploy.returncode == 2 and "(voicedesk.endpoint.deploy is missing)" in deploy.stderr
    for command in (["say", "hello"], [], ["bench", "engine"]):
        refused = run(*command)
        assert refused.returncode == 2
        assert "is not available in this install (voicedesk.app is missing)" in refused.stderr
        assert "pip install 'voicedesk[" in refused.stderr
    lab = subprocess.run([python, "-c", "import voicedesk.app.lab"], capture_output=True, text=True, cwd=tmp_path)
    assert "No module named 'voicedesk.app'" in lab.stderr
