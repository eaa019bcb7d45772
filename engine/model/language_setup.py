"""Setting a language up: its G2P packages from PyPI (``models fetch``) or a folder of wheels (``models import``),
installed with pip into the running Python, so nothing is downloaded when a voice is first used.

Offline: ``pip download -d DIR fugashi jaconv mojimoji pyopenjtalk-plus unidic-lite setuptools wheel`` on a
connected machine, then ``voicedesk models import DIR --languages ja`` (``--no-index``: what DIR lacks is reported,
not fetched)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from voicedesk.engine.errors import ErrorCode, VoicedeskError
from voicedesk.engine.model import languages

BUILD_PACKAGES = ("setuptools", "wheel")
"""What pip needs in DIR to build a source package (unidic-lite) without the network."""


def download_requirements(codes: Iterable[str]) -> list[str]:
    """What ``pip download -d DIR`` must fetch for those languages' offline set-up."""
    return [*dict.fromkeys(p for c in codes for p in languages.LANGUAGES[c].packages), *BUILD_PACKAGES]


def pip_reason(output: str) -> str:
    """pip's own reason: its error lines, not its last line ("note: This error originates from a subprocess")."""
    lines = [line.strip(" │╰─>×") for line in output.splitlines()]
    errors = [line for line in lines if line.startswith(("ERROR:", "error:")) or "No matching distribution" in line]
    return " ".join(dict.fromkeys(errors or lines[-3:])).strip()


def pip_command(packages: Iterable[str], wheel_dir: Path | None = None) -> list[str]:
    command = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--quiet"]
    if wheel_dir is not None:
        command += ["--no-index", "--find-links", str(wheel_dir)]
    return [*command, *packages]


def install_language_packages(
    codes: Iterable[str],
    wheel_dir: Path | None = None,
    report: Callable[[str], None] = print,
    run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run,
) -> list[str]:
    """Installs the packages of the languages not ready; raises ``VoicedeskError`` with pip's reason when pip fails."""
    codes = list(codes)
    packages = languages.missing_packages(codes)
    if not packages:
        return []
    names = ", ".join(languages.LANGUAGES[c].name for c in codes if not languages.language_status(c).ready)
    source = f"the wheels in {wheel_dir}" if wheel_dir is not None else "PyPI"
    report(f"Installing the G2P packages for {names} from {source}: {' '.join(packages)}")
    if wheel_dir is not None and not Path(wheel_dir).is_dir():
        raise VoicedeskError(ErrorCode.WEIGHTS_MISSING, f"{wheel_dir} is not a folder of wheels.")
    command = pip_command(packages, wheel_dir)
    try:
        done = run(command, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise VoicedeskError(ErrorCode.WEIGHTS_MISSING, f"Could not run pip ({exc}).") from exc
    if done.returncode != 0:
        wanted = download_requirements(c for c in codes if not languages.language_status(c).ready)
        hint = (
            f"Put what they need in {wheel_dir} (`pip download -d DIR {' '.join(wanted)}` on a machine with "
            "internet), then run the command again."
            if wheel_dir is not None
            else f"Install them yourself with `pip install {' '.join(packages)}`, or check the network."
        )
        raise VoicedeskError(
            ErrorCode.WEIGHTS_MISSING,
            f"pip could not install {' '.join(packages)}: {pip_reason(done.stderr + done.stdout) or 'no reason given'}",
            hint,
        )
    import importlib

    importlib.invalidate_caches()
    still = [languages.LANGUAGES[c].name for c in codes if not languages.language_status(c).ready]
    if still:
        raise VoicedeskError(
            ErrorCode.WEIGHTS_MISSING,
            f"pip installed {' '.join(packages)}, but {', '.join(still)} is still not ready: "
            + "; ".join(languages.not_ready_message(languages.language_status(c)) for c in codes),
        )
    return packages


def voices_of(codes: Iterable[str]) -> list[str]:
    from voicedesk.engine.model.voices import KNOWN_VOICES

    wanted = set(codes)
    return [v for v in KNOWN_VOICES if v[0] in wanted]
