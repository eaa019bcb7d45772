"""Where voicedesk keeps its own data (model extras, compiled grammars, history): one folder every part shares."""

from __future__ import annotations

import os
from pathlib import Path

DATA_DIR_ENV = "VOICEDESK_DATA_DIR"


def data_dir() -> Path:
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        return Path(override)
    from platformdirs import user_data_path  # not needed for --help

    return user_data_path("voicedesk", appauthor=False)
