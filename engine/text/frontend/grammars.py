"""NeMo's English grammars (the front-end's I/O adapter): built ahead of time by ``voicedesk models fetch`` (30-60 s on
2 cores), loaded at start-up, never built on a request."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading
from importlib import metadata
from pathlib import Path

from voicedesk.engine.paths import data_dir as default_data_dir
from voicedesk.engine.text.frontend.english import EnglishSpokenForm, Normalize
from voicedesk.engine.text.frontend.memo import MemoNormalize

log = logging.getLogger(__name__)

NEMO_LOGGER = "NeMo-text-processing"
"""It logs an INFO line per sentence ("Skipping post-processing ..."): only its warnings pass."""
FAR_FILES = ("en_tn_True_deterministic_cased__tokenize.far", "en_tn_True_deterministic_verbalizer.far")
_lock = threading.Lock()


def nemo_version() -> str | None:
    try:
        return metadata.version("nemo-text-processing")
    except metadata.PackageNotFoundError:
        return None


GRAMMAR_DIR_ENV = "VOICEDESK_TEXT_GRAMMARS"
"""Overrides where the grammars live (the test suite keeps its own copy; an image may bake them anywhere)."""


def grammar_dir(data_dir: Path | None = None) -> Path:
    override = os.environ.get(GRAMMAR_DIR_ENV)
    if override and data_dir is None:
        return Path(override)
    if data_dir is None:
        data_dir = default_data_dir()
    return Path(data_dir) / "text-grammars" / f"nemo-{nemo_version() or 'none'}-en"


def grammars_built(directory: Path | None = None) -> bool:
    directory = directory or grammar_dir()
    return all((directory / name).is_file() for name in FAR_FILES)


def _below_warning(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.WARNING


def _quiet_nemo() -> None:
    """A filter, not a level: ``Normalizer.normalize`` sets its logger back to INFO on every call."""
    nemo_logger = logging.getLogger(NEMO_LOGGER)
    if _below_warning not in nemo_logger.filters:
        nemo_logger.addFilter(_below_warning)
    for handler in nemo_logger.handlers:
        if _below_warning not in handler.filters:
            handler.addFilter(_below_warning)


def _normalizer(directory: Path) -> object:
    _quiet_nemo()
    from nemo_text_processing.text_normalization.normalize import Normalizer

    normalizer = Normalizer(input_case="cased", lang="en", cache_dir=str(directory))
    _quiet_nemo()  # its logger is created on import; set it again once it exists
    return normalizer


def build_grammars(directory: Path | None = None) -> Path:
    """Compiles the grammars into ``directory`` unless they are there (safe across processes: a file lock)."""
    directory = directory or grammar_dir()
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock, contextlib.ExitStack():
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not grammars_built(directory):
            log.warning("Building the English text-normalization grammars in %s (about a minute, once)", directory)
            _normalizer(directory)
    return directory


def whitelist() -> frozenset[str]:
    """The written forms NeMo's TTS whitelist knows (``Dr.``, ``Mar.``, ``vs.``): they need the normalizer."""
    import nemo_text_processing

    path = Path(nemo_text_processing.__file__).parent / "text_normalization/en/data/whitelist/tts.tsv"
    found: set[str] = set()
    with contextlib.suppress(OSError):
        for line in path.read_text(encoding="utf-8").splitlines():
            written = line.split("\t", 1)[0].strip()
            if written and " " not in written:
                found.add(written)
    return frozenset(found)


def load_english(directory: Path | None = None) -> tuple[EnglishSpokenForm, str | None]:
    """The English spoken form with NeMo when its grammars are built; else the pre-rules and ``basic_normalize``."""
    from voicedesk.engine.text.frontend.english import basic_normalize

    if nemo_version() is None:
        return EnglishSpokenForm(basic_normalize, normalizer_name="basic reader"), (
            "nemo-text-processing is not installed: only numbers, times, degrees, percent and prices are read out "
            "(a basic reader); install voicedesk's `local` extra for the full text normalizer."
        )
    directory = directory or grammar_dir()
    if not grammars_built(directory):
        return EnglishSpokenForm(basic_normalize, normalizer_name="basic reader"), (
            f"The English text-normalization grammars are not built ({directory}): only numbers, times, degrees, "
            "percent and prices are read out (a basic reader). Build them with `voicedesk models fetch` (or "
            "`voicedesk models grammars`)."
        )
    with _lock:
        normalizer = _normalizer(directory)
    normalize: Normalize = MemoNormalize(_bound(normalizer))
    return EnglishSpokenForm(normalize, whitelist()), None


def _bound(normalizer: object) -> Normalize:
    def normalize(text: str) -> str:
        return normalizer.normalize(text, punct_post_process=True)  # type: ignore[attr-defined]

    return normalize


if __name__ == "__main__":  # the test-asset step and image builds: python -m voicedesk.engine.text.frontend.grammars
    print(build_grammars())
