"""`voicedesk app` from the command line: the real entry point opens the window, runs, and closes cleanly on
SIGTERM, saving its settings (a separate process, drawn offscreen)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from voicedesk.app.settings import AppSettings, save_settings


def test_voicedesk_app_starts_and_closes_cleanly_on_sigterm(tmp_path):
    settings = AppSettings()
    settings.engine.kind = "websocket"  # nothing to load: the launch itself is what is tested
    settings.engine.websocket_url = "ws://127.0.0.1:9"
    settings.engine.failover_to_local = False
    path = tmp_path / "settings.json"
    save_settings(settings, path)
    before = path.stat().st_mtime_ns
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    process = subprocess.Popen(
        [sys.executable, "-m", "voicedesk.engine.commands", "app", "--settings", str(path)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # The window saves its settings once it is up and its event loop runs (the output device is chosen).
        deadline = time.monotonic() + 60
        while path.stat().st_mtime_ns == before:
            assert process.poll() is None, process.stderr.read()
            assert time.monotonic() < deadline, "the app did not come up within 60 s"
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        code = process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
    errors = process.stderr.read()
    assert code == 0, errors
    assert "Traceback" not in errors
    saved = json.loads(path.read_text())
    # kept, in the one form every part of the app uses (app.urls.engine_url)
    assert saved["engine"]["kind"] == "websocket"
    assert saved["engine"]["websocket_url"] == "ws://127.0.0.1:9/invocations-bidirectional-stream"
