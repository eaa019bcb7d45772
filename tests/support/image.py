"""What the endpoint image is built from: the repository files packaging/Dockerfile copies from the build context."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def image_sources(dockerfile: Path = REPO / "packaging" / "Dockerfile") -> set[Path]:
    """Every file a COPY or ADD takes from the context (not those copied from another stage)."""
    files: set[Path] = set()
    for line in dockerfile.read_text().replace("\\\n", " ").splitlines():
        words = line.split()
        if not words or words[0].upper() not in ("COPY", "ADD") or any(w.startswith("--from") for w in words):
            continue
        sources = [w for w in words[1:] if not w.startswith("--")][:-1]
        for source in sources:
            for match in REPO.glob(source.strip('"')):
                found = [match] if match.is_file() else match.rglob("*")
                files.update(p for p in found if p.is_file() and "__pycache__" not in p.parts)
    return files
