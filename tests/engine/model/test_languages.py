"""Language set-up: what each language needs, how its readiness is told, and what happens when it is missing."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from voicedesk.engine.errors import VoicedeskError, VoiceError
from voicedesk.engine.model import languages
from voicedesk.engine.model.languages import EXTRA_NAMES, LANGUAGES, language_status, parse_languages

REPO = Path(__file__).resolve().parents[3]


def test_pyproject_extras_are_the_language_table():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for code, extra in EXTRA_NAMES.items():
        assert extras[extra] == list(LANGUAGES[code].packages)
    assert extras["languages"] == [f"voicedesk[{','.join(EXTRA_NAMES.values())}]"]
    assert {c for c, lang in LANGUAGES.items() if lang.packages} == set(EXTRA_NAMES)


def test_the_test_command_installs_every_language():
    assert '".[all,test,languages]"' in (REPO / "tests" / "run.sh").read_text()


def test_every_language_is_ready_on_the_test_machine():
    not_ready = {s.language.tag: s.missing for s in languages.languages_status() if not s.ready}
    assert not_ready == {}


@pytest.mark.parametrize(
    ("given", "codes"),
    [
        ("ja,zh,es", ["j", "z", "e"]),
        ("en", ["a", "b"]),
        ("pt-br, fr", ["p", "f"]),
        ("JA", ["j"]),
        ("all", list(LANGUAGES)),
        ("j,z", ["j", "z"]),
    ],
)
def test_languages_are_named_as_people_write_them(given, codes):
    assert parse_languages(given) == codes


def test_an_unknown_language_names_the_known_ones():
    with pytest.raises(VoicedeskError, match=r"Unknown language .de.; use any of: en, es, fr, hi, it, ja, pt, zh"):
        parse_languages("ja,de")


def test_a_missing_module_makes_its_language_not_ready_with_the_fix(monkeypatch):
    monkeypatch.setitem(sys.modules, "jieba", None)  # as on a machine without it
    status = language_status("z")
    assert not status.ready
    assert status.missing == ("Python module jieba",)
    assert "voicedesk models fetch --languages zh" in status.fix
    assert "voicedesk models import DIR --languages zh" in status.fix
    assert languages.missing_packages(["z", "e"]) == list(LANGUAGES["z"].packages)
    assert language_status("e").ready


def test_an_unidic_without_its_dictionary_shadows_unidic_lite(monkeypatch, tmp_path):
    fake = tmp_path / "unidic"
    fake.mkdir()
    (fake / "__init__.py").write_text("DICDIR = __file__  # installed, its dictionary never downloaded\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    status = language_status("j")
    assert not status.ready
    assert "pip uninstall unidic" in status.missing[0]


def test_a_voice_of_a_language_not_set_up_is_refused_with_the_command_that_fixes_it(synthesizer, monkeypatch, tmp_path):
    import torch

    from tests.support.fake_hf_cache import random_voice_pack
    from voicedesk.engine.model.kokoro_synth import KokoroSynthesizer

    voice = tmp_path / "jf_alpha.pt"
    torch.save(random_voice_pack(5), voice)
    monkeypatch.setitem(sys.modules, "fugashi", None)  # as on a machine without it
    fresh = KokoroSynthesizer(synthesizer.model, synthesizer.repo_id)  # no pipelines built yet
    with pytest.raises(VoiceError) as refused:
        fresh.check_voice(str(voice))
    assert "Japanese is not set up on this machine: missing Python module fugashi." in refused.value.message
    assert "voicedesk models fetch --languages ja" in refused.value.message
    catalog = {v.name: v for v in fresh.voice_catalog()}
    assert not catalog["jf_alpha"].language_ready and catalog["af_heart"].usable
    assert "af_heart" in fresh.list_voices()


def test_models_status_lists_each_language(monkeypatch, capsys):
    from voicedesk.engine.model.models_cli import main

    monkeypatch.setitem(sys.modules, "jieba", None)
    main(["status"])
    out = capsys.readouterr().out
    assert "    ja     ok       Japanese" in out
    assert (
        "    zh     MISSING  Mandarin Chinese: Python module jieba; fix: `voicedesk models fetch --languages zh`"
        in (out)
    )


def test_import_of_languages_already_set_up_installs_nothing_and_reports_them_ready(hf_home, tmp_path, capsys):
    from voicedesk.engine.model.models_cli import main

    assert main(["import", str(tmp_path), "--languages", "ja,zh"]) == 0  # an empty folder: nothing to install
    out = capsys.readouterr().out
    assert "Installing" not in out
    assert "    ja     ok       Japanese" in out and "    zh     ok       Mandarin Chinese" in out


def test_installing_reports_what_pip_says_when_the_wheels_are_missing(monkeypatch, tmp_path):
    from voicedesk.engine.model.languages import install_language_packages

    monkeypatch.setattr(languages, "missing_packages", lambda codes: ["voicedesk-no-such-wheel==1"])
    monkeypatch.setattr(languages, "language_status", lambda code: languages.LanguageStatus(LANGUAGES[code], ("x",)))
    with pytest.raises(VoicedeskError) as failed:  # the real pip, kept off the network by --no-index
        install_language_packages(["z"], wheel_dir=tmp_path, report=lambda _line: None)
    assert "pip could not install voicedesk-no-such-wheel==1" in failed.value.message
    assert f"Put what they need in {tmp_path}" in (failed.value.advice or "")
    assert "No matching distribution found for voicedesk-no-such-wheel==1" in failed.value.message  # pip's reason


@pytest.mark.parametrize(("code", "extra"), list(EXTRA_NAMES.items()))
def test_the_image_locks_each_language_within_the_extras_ranges(code, extra):
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    def pins(path: Path) -> dict[str, str]:
        lines = [line.split("#")[0].strip().rstrip("\\").strip() for line in path.read_text().splitlines()]
        found = [Requirement(line) for line in lines if line and not line.startswith("--")]
        return {canonicalize_name(r.name): next(iter(r.specifier)).version for r in found}

    wanted = pins(REPO / "packaging" / f"requirements-lang-{extra}.in")
    locked = pins(REPO / "packaging" / f"requirements-lang-{extra}.txt")
    ranges = {canonicalize_name(r.name): r.specifier for r in map(Requirement, LANGUAGES[code].packages)}
    assert set(wanted) == set(ranges)
    for name, version in wanted.items():
        assert locked[name] == version and version in ranges[name], name
    endpoint = pins(REPO / "packaging" / "requirements-endpoint.txt")
    assert all(endpoint[n] == v for n, v in locked.items() if n in endpoint)  # one numpy in the image
    dockerfile = (REPO / "packaging" / "Dockerfile").read_text()
    assert f"packaging/requirements-lang-{extra}.txt" in dockerfile and "ARG LANGUAGES=" in dockerfile
