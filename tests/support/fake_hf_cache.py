"""A Hugging Face cache holding a Kokoro-82M look-alike, so the real loading code runs offline.

It holds the real ``config.json`` (``tests/assets/kokoro-config.json``), a ``kokoro-v1_0.pth`` of seeded random
weights in the checkpoint format ``KModel`` loads (a dict of state dicts: bert, bert_encoder, predictor,
text_encoder, decoder), and seeded random voice packs ``af_heart``, ``am_adam``, ``bf_emma`` of shape
[510, 1, 256]. Durations are pinned to ``PINNED_FRAMES`` frames per token (a random duration head gives 25
frames, i.e. 0.6 s per phoneme): ``duration_proj`` outputs a constant logit, so every token lasts exactly
3 × 600 samples whatever the input.

The layout is the one ``hf_hub_download`` reads with ``HF_HUB_OFFLINE=1``:
``$HF_HOME/hub/models--hexgrad--Kokoro-82M/refs/main`` (a revision) and ``snapshots/<revision>/<files>``.
Building takes ~10 s and 330 MB, so it is done once per ``BUILDER_VERSION`` and reused (a stamp file).

    python -m tests.support.fake_hf_cache [DIR]    # build into DIR (an HF_HOME; default .cache/test-hf)
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import math
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

BUILDER_VERSION = 1
"""Bump when the cache's content changes; caches with another stamp are rebuilt."""

REPO_ID = "hexgrad/Kokoro-82M"
MODEL_FILE = "kokoro-v1_0.pth"
REVISION = hashlib.sha1(b"voicedesk fake hexgrad/Kokoro-82M").hexdigest()
FAKE_VOICES = ("af_heart", "am_adam", "bf_emma")
PINNED_FRAMES = 3
SAMPLES_PER_FRAME = 600
SEED = 1234
REPO_ROOT = Path(__file__).resolve().parents[2]
CONFIG_ASSET = REPO_ROOT / "tests" / "assets" / "kokoro-config.json"
DEFAULT_HF_HOME = REPO_ROOT / ".cache" / "test-hf"
"""Where the test suite keeps it (gitignored); ``VOICEDESK_TEST_HF_HOME`` overrides."""
STAMP_NAME = "voicedesk-fake-cache.json"
CHECKPOINT_KEYS = ("bert", "bert_encoder", "predictor", "text_encoder", "decoder")


def default_hf_home() -> Path:
    override = os.environ.get("VOICEDESK_TEST_HF_HOME")
    return Path(override) if override else DEFAULT_HF_HOME


def snapshot_path(hf_home: Path) -> Path:
    return hf_home / "hub" / "models--hexgrad--Kokoro-82M" / "snapshots" / REVISION


def _stamp() -> dict[str, object]:
    return {
        "version": BUILDER_VERSION,
        "config_sha256": hashlib.sha256(CONFIG_ASSET.read_bytes()).hexdigest(),
        "voices": list(FAKE_VOICES),
        "pinned_frames": PINNED_FRAMES,
        "seed": SEED,
    }


def is_built(hf_home: Path) -> bool:
    try:
        return json.loads((hf_home / STAMP_NAME).read_text()) == _stamp()
    except (OSError, ValueError):
        return False


def ensure_fake_hf_cache(hf_home: Path) -> Path:
    """Builds the cache into ``hf_home`` unless an up-to-date one is there. Safe across processes."""
    hf_home = Path(hf_home).resolve()
    if is_built(hf_home):
        return hf_home
    hf_home.parent.mkdir(parents=True, exist_ok=True)
    with _exclusive(hf_home.parent / f".{hf_home.name}.lock"):
        if is_built(hf_home):  # another process built it while we waited
            return hf_home
        staging = Path(tempfile.mkdtemp(prefix=f".{hf_home.name}-", dir=hf_home.parent))
        try:
            _build(staging)
            (staging / STAMP_NAME).write_text(json.dumps(_stamp(), indent=2))
            if hf_home.exists():
                old = hf_home.with_name(f".{hf_home.name}-old")
                shutil.rmtree(old, ignore_errors=True)
                hf_home.rename(old)
                shutil.rmtree(old, ignore_errors=True)
            staging.rename(hf_home)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return hf_home


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def pin_durations(model: object, frames: int = PINNED_FRAMES) -> None:
    """Every token then lasts ``frames`` frames: sum over max_dur of sigmoid(logit(frames/max_dur)) = frames."""
    import torch

    layer = model.predictor.duration_proj.linear_layer  # type: ignore[attr-defined]
    max_dur = layer.out_features
    p = frames / max_dur
    with torch.no_grad():
        layer.weight.zero_()
        layer.bias.fill_(math.log(p / (1 - p)))


def random_voice_pack(seed: int) -> object:
    import torch

    generator = torch.Generator().manual_seed(seed)
    return torch.randn((510, 1, 256), generator=generator, dtype=torch.float32) * 0.5


def _build(hf_home: Path) -> None:
    import torch
    from kokoro import KModel

    config = json.loads(CONFIG_ASSET.read_text())
    snapshot = snapshot_path(hf_home)
    (snapshot / "voices").mkdir(parents=True)
    ref = hf_home / "hub" / "models--hexgrad--Kokoro-82M" / "refs" / "main"
    ref.parent.mkdir(parents=True)
    ref.write_text(REVISION)  # read verbatim by huggingface_hub: no newline
    shutil.copyfile(CONFIG_ASSET, snapshot / "config.json")

    empty = hf_home / "empty.pth"
    torch.save({}, empty)
    torch.manual_seed(SEED)
    model = KModel(repo_id=REPO_ID, config=config, model=str(empty))
    empty.unlink()
    pin_durations(model)
    torch.save({key: getattr(model, key).state_dict() for key in CHECKPOINT_KEYS}, snapshot / MODEL_FILE)
    for index, name in enumerate(FAKE_VOICES):
        torch.save(random_voice_pack(SEED + 1 + index), snapshot / "voices" / f"{name}.pt")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "hf_home",
        type=Path,
        nargs="?",
        default=default_hf_home(),
        help="folder to use as HF_HOME (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    path = ensure_fake_hf_cache(args.hf_home)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
