"""Suite-wide set-up: an offline Hugging Face cache holding a random-weight Kokoro, and one shared synthesizer.

The environment below is set when pytest imports this file, before any test module imports huggingface_hub
(which reads it once, at import): every test, and every subprocess a test starts, sees the fake cache
(``tests/support/fake_hf_cache.py``) and no network. The cache itself is built on first use and reused by
later runs (``.cache/test-hf``, stamped with the builder's version).

Set ``VOICEDESK_TEST_DEVICE=cuda`` to run the model tests on a GPU.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tests.support.fake_hf_cache import REPO_ROOT, default_hf_home, ensure_fake_hf_cache

TEST_HF_HOME = default_hf_home()
TEST_DATA_DIR = REPO_ROOT / ".cache" / "test-data"
TEST_GRAMMARS_DIR = REPO_ROOT / ".cache" / "text-grammars"
"""NeMo's compiled English grammars (tests/run.sh builds them once; the ``text_grammars`` fixture if it did not)."""

os.environ["HF_HOME"] = str(TEST_HF_HOME)
for _override in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):  # these would win over HF_HOME
    os.environ.pop(_override, None)
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
# voicedesk's own data folder (unpacked spaCy pipeline, settings): never the developer's real one.
os.environ["VOICEDESK_DATA_DIR"] = str(TEST_DATA_DIR)
os.environ["VOICEDESK_TEXT_GRAMMARS"] = str(TEST_GRAMMARS_DIR)
# platformdirs' folders (the app's settings, the learnt loudness): a fresh set per process, so no test writes the
# developer's own, none inherits what an earlier run learnt, and the two workers never share them.
_USER_FOLDERS = Path(tempfile.mkdtemp(prefix="voicedesk-tests-user-"))
atexit.register(shutil.rmtree, _USER_FOLDERS, ignore_errors=True)
for _variable in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
    os.environ[_variable] = str(_USER_FOLDERS / _variable.removeprefix("XDG_").removesuffix("_HOME").lower())

if "huggingface_hub" in sys.modules:  # a plugin imported it first: its constants would point elsewhere
    from huggingface_hub import constants as _hf_constants

    if Path(_hf_constants.HF_HUB_CACHE) != TEST_HF_HOME / "hub" or not _hf_constants.HF_HUB_OFFLINE:
        raise RuntimeError(
            "huggingface_hub was imported before tests/conftest.py could point it at the offline test cache; "
            "run pytest without plugins that import it."
        )

import pytest  # noqa: E402 - after the environment, on purpose

from tests.support import parallel  # noqa: E402

_machine_share: parallel.MachineShare | None = None
if not parallel.worker():
    # A run started in the background (CI, `nohup … &`) inherits SIGINT ignored; tests/run.sh's time limit interrupts
    # pytest with it, so that it still reports what ran.
    signal.signal(signal.SIGINT, signal.default_int_handler)
if parallel.worker():
    # headless.sh's display and sound server: each worker gets its own instead, before anything opens them
    if os.environ.get("QT_QPA_PLATFORM") == "xcb":
        parallel.start_own_display()
    if os.environ.get("VOICEDESK_TEST_SINK"):
        parallel.start_own_pulseaudio()


def pytest_configure(config: pytest.Config) -> None:
    global _machine_share
    if parallel.worker() and config.option.basetemp:  # xdist gives each worker <the run's basetemp>/popen-gwN
        _machine_share = parallel.MachineShare(Path(config.option.basetemp).parent)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    """Under xdist, an ``alone`` test runs with no other test beside it (``tests/support/parallel.py``)."""
    if _machine_share is None:
        return (yield)
    with _machine_share.hold(alone=item.get_closest_marker("alone") is not None, test=item.nodeid):
        return (yield)


TEST_DEVICE = os.environ.get("VOICEDESK_TEST_DEVICE", "cpu")


@pytest.fixture(scope="session")
def hf_home() -> Path:
    """The fake HF_HOME (built on first use); pass it to subprocesses as HF_HOME with HF_HUB_OFFLINE=1."""
    return ensure_fake_hf_cache(TEST_HF_HOME)


@pytest.fixture(scope="session")
def text_grammars() -> Path:
    """NeMo's English grammars, built once per machine (about a minute) unless tests/run.sh already did."""
    from voicedesk.engine.text.frontend.grammars import build_grammars

    return build_grammars(TEST_GRAMMARS_DIR)


@pytest.fixture(scope="session")
def synthesizer(hf_home: Path, text_grammars: Path) -> Iterator[object]:
    """The real ``KokoroSynthesizer.load`` through the fake cache, once per test run.

    Random weights: its audio is noise of the right length. Call ``torch.manual_seed`` right before a
    synthesis whose samples a test compares (the vocoder adds random noise); durations are pinned.
    """
    import torch

    # pytest-xdist's workers each get one thread, so two workers on two cores do not fight over them.
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    torch.set_num_threads(max(1, min(2, (os.cpu_count() or 1) // workers)))
    from voicedesk.engine.model.kokoro_synth import KokoroSynthesizer

    yield KokoroSynthesizer.load(device=TEST_DEVICE)


# Suite-wide fixtures from the support modules (after the environment above: they import the endpoint): the one
# shared endpoint server, and the SageMaker stand-in with its AWS environment.
from tests.support.endpoint import make_server, server  # noqa: E402, F401
from tests.support.stand_in import (  # noqa: E402, F401
    aws_env,
    container,
    make_container,
    make_stand_in,
    stand_in,
    stand_in_state,
)
