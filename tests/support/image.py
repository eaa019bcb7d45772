"""What the endpoint image is built from and what it runs, read from packaging/Dockerfile and packaging/serve.

``python -m tests.support.image`` prints the Dockerfile's COPY lines for the product's modules: the import closure
of what the image runs (tests/test_architecture.py fails until the Dockerfile has them); ``--write`` puts them there.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from tests.support.import_graph import LAYERS, REPO, closure, product_modules

DOCKERFILE = REPO / "packaging" / "Dockerfile"
SERVE_SCRIPT = REPO / "packaging" / "serve"
SOURCE_ROOT = "/src/"
"""Where the build stage puts the project it installs."""


def _instructions(dockerfile: Path) -> list[list[str]]:
    lines = dockerfile.read_text().replace("\\\n", " ").splitlines()
    return [line.split() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def copies(dockerfile: Path = DOCKERFILE) -> list[tuple[list[str], str]]:
    """Each COPY or ADD from the context (not from another stage): its sources and its target."""
    found = []
    for words in _instructions(dockerfile):
        if words[0].upper() in ("COPY", "ADD") and not any(w.startswith("--from") for w in words):
            *sources, target = [w.strip('"') for w in words[1:] if not w.startswith("--")]
            found.append((sources, target))
    return found


def missing_sources(dockerfile: Path = DOCKERFILE) -> list[str]:
    """COPY sources the context does not have (``docker build`` fails on them)."""
    return [source for sources, _target in copies(dockerfile) for source in sources if not any(REPO.glob(source))]


def image_files(dockerfile: Path = DOCKERFILE) -> dict[Path, str]:
    """Every file a COPY or ADD takes from the context, and where it lands."""
    files: dict[Path, str] = {}
    for sources, target in copies(dockerfile):
        for source in sources:
            for match in sorted(REPO.glob(source)):
                if match.is_file():
                    files[match] = target + match.name if target.endswith("/") else target
                    continue
                for path in match.rglob("*"):
                    if path.is_file() and "__pycache__" not in path.parts:
                        files[path] = target.rstrip("/") + "/" + path.relative_to(match).as_posix()
    return files


def image_sources(dockerfile: Path = DOCKERFILE) -> set[Path]:
    return set(image_files(dockerfile))


def image_runs(dockerfile: Path = DOCKERFILE, serve_script: Path = SERVE_SCRIPT) -> tuple[set[str], set[str]]:
    """The modules the image runs (``python -m X`` in a RUN line or in packaging/serve, its CMD) and the
    ``voicedesk`` commands its RUN lines call."""
    runs = " ".join(" ".join(words[1:]) for words in _instructions(dockerfile) if words[0].upper() == "RUN")
    modules = set(re.findall(r"python -m (voicedesk[\w.]*)", f"{runs}\n{serve_script.read_text()}"))
    return modules, set(re.findall(r"(?<![\w./-])voicedesk ([a-z][a-z-]*)", runs))


def console_script() -> str:
    """The module of the ``voicedesk`` command pip installs."""
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    return scripts["voicedesk"].split(":")[0]


def serve_closure() -> set[str]:
    """The modules the image needs: what it runs, the ``voicedesk`` dispatch and the commands its build calls, and
    everything they import at any level. The dispatch's other commands are left out: it says they are not installed."""
    from voicedesk.engine.commands import COMMANDS

    modules, commands = image_runs()
    command_modules = {c.module for c in COMMANDS if c.name in commands}
    return closure(modules | command_modules | {console_script()}, product_modules())


def copy_lines(modules: set[str]) -> str:
    """The Dockerfile's COPY instructions for ``modules``: one per folder, every file named."""
    known = product_modules()
    by_folder: dict[str, list[str]] = {}
    for name in modules:
        path = known[name].relative_to(REPO)
        by_folder.setdefault(path.parent.as_posix(), []).append(path.as_posix())
    blocks = []
    for folder in sorted(by_folder):
        line, lines = "COPY", []
        for word in [*sorted(by_folder[folder]), f"{SOURCE_ROOT}{folder}/"]:
            if len(line) + 1 + len(word) > 116:
                lines.append(line + " \\")
                line = "    "
            line += " " + word if line.strip() else word
        blocks.append("\n".join([*lines, line]))
    return "\n".join(blocks)


def shipped_modules(dockerfile: Path = DOCKERFILE) -> set[Path]:
    return {path for path in image_sources(dockerfile) if path.relative_to(REPO).parts[0] in LAYERS}


def write_copy_lines(dockerfile: Path = DOCKERFILE) -> None:
    """Replaces the Dockerfile's COPY instructions of product modules with ``copy_lines(serve_closure())``."""
    instruction = re.compile(r"^COPY (?:[^\n]*\\\n)*[^\n]*$", re.M)
    product = tuple(f"{SOURCE_ROOT}{top}/" for top in LAYERS)
    text = dockerfile.read_text()
    spans = [m.span() for m in instruction.finditer(text) if m.group().split()[-1].startswith(product)]
    if not spans:
        raise SystemExit(f"{dockerfile} has no COPY of voicedesk's modules to replace")
    new = text[: spans[0][0]] + copy_lines(serve_closure()) + text[spans[-1][1] :]
    dockerfile.write_text(new)


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--write"]:
        write_copy_lines()
    else:
        print(copy_lines(serve_closure()))
