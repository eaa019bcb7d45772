"""Which of voicedesk's package folders this checkout has (the rest of the build is in pyproject.toml).

The endpoint image copies only the modules ``voicedesk serve`` runs (packaging/Dockerfile), so the app and lab folders
may be absent. Installed, they are voicedesk.app/.engine/.endpoint, so they never collide with another ``app``."""

from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
TOPS = [top for top in ("app", "engine", "endpoint") if (HERE / top).is_dir()]

setup(
    package_dir={f"voicedesk.{top}": top for top in TOPS},
    packages=sorted(
        "voicedesk." + ".".join(init.parent.relative_to(HERE).parts)
        for top in TOPS
        for init in (HERE / top).rglob("__init__.py")
    ),
)
