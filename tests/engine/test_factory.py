"""Opening engines: an install without the local engine's parts says what to install when the local engine is picked."""

from __future__ import annotations

import subprocess
import sys


def test_picking_the_local_engine_without_torch_names_the_extra_to_install():
    # None in sys.modules is how Python marks a module that cannot be imported: this process has no torch.
    script = (
        "import asyncio, sys\n"
        "sys.modules['torch'] = None\n"
        "from voicedesk.engine.engine_spec import EngineSpec\n"
        "from voicedesk.engine.errors import UsageError\n"
        "from voicedesk.engine.factory import open_engine\n"
        "try:\n"
        "    asyncio.run(open_engine(EngineSpec('local')))\n"
        "except UsageError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert "The local engine needs torch, which this install does not have." in result.stdout, result.stderr
    assert "pip install 'voicedesk[local]'" in result.stdout
