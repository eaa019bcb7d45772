"""The app's JSON files: written atomically, and a damaged one kept aside so nothing a person wrote is lost."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path


def read_json(path: Path, max_bytes: int) -> object:
    """Raises ``OSError`` as opening does, and ``ValueError`` with a short reason for a file that is unusable."""
    with path.open("rb") as stream:
        raw = stream.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise ValueError(f"it is larger than {max_bytes // 1024} KiB")
    try:
        return json.loads(raw.decode("utf-8"))
    except RecursionError:  # JSON nested thousands of levels deep
        raise ValueError("it is nested too deeply") from None


def write_json(path: Path, data: object, indent: int | None = None, sort_keys: bool = False) -> None:
    """Temp file + rename, so a crash never leaves half a file behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = json.dumps(data, indent=indent, sort_keys=sort_keys, ensure_ascii=False) + "\n"
    fd, temp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=path.suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(body)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def keep_aside(path: Path, move: bool = True) -> Path | None:
    """Moves (or copies) a damaged file to ``NAME.damaged-<time>.json``; None when it could not."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    kept = path.with_name(f"{path.stem}.damaged-{stamp}{path.suffix}")
    number = 1
    while kept.exists():  # two damaged files in one second: keep both
        number += 1
        kept = path.with_name(f"{path.stem}.damaged-{stamp}-{number}{path.suffix}")
    try:
        if move:
            os.replace(path, kept)
        else:
            shutil.copyfile(path, kept)
    except OSError:
        return None
    return kept
