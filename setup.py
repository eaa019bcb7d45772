"""Which of voicedesk's package folders this checkout has (the rest of the build is in pyproject.toml).

A clone has app/, engine/ and endpoint/; the endpoint image copies only the modules ``voicedesk serve`` runs
(packaging/Dockerfile), so the desktop app, the lab (app/lab/) and the folders serve never imports are not in it.
Installed, the folders are voicedesk.app, voicedesk.engine and voicedesk.endpoint, so they never collide with anyone
else's ``app`` or ``engine``.
"""

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
