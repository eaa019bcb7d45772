"""The console from anywhere on the desktop: the real app in its own process under the X server (Xvfb), global
shortcuts pressed with xdotool (real X key events, seen through pynput's X11 listener), the sound watched on the
private null sink. A saved phrase starts from its shortcut, the stop shortcut cuts it, the history file says so,
and the app quits cleanly, with no traceback (issue 13, bug 8). Also: the tray's state mapping."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.support.audio_capture import SinkCapture, require_null_sink
from voicedesk.app.engines import EngineState
from voicedesk.app.hotkeys import unavailable_reason
from voicedesk.app.phrases import Phrase, pynput_hotkey
from voicedesk.app.settings import AppSettings, save_settings

LONG = "This announcement is long on purpose. It goes on and on. The stop shortcut cuts it short. Still talking."


def test_shortcuts_are_spelled_for_the_library_and_bare_keys_are_refused():
    assert pynput_hotkey("Ctrl+Alt+1") == "<ctrl>+<alt>+1"
    assert pynput_hotkey("Ctrl+Shift+F5") == "<ctrl>+<shift>+<f5>"
    assert pynput_hotkey("Meta+Space") == "<cmd>+<space>"
    for bad in ("Q", "Ctrl+", "Ctrl+Alt", "Hyper+1", ""):
        assert pynput_hotkey(bad) is None, bad


def test_wayland_and_headless_sessions_say_why_there_are_no_global_shortcuts():
    wayland = unavailable_reason({"XDG_SESSION_TYPE": "wayland", "WAYLAND_DISPLAY": "wayland-0"}, "linux")
    assert "Wayland" in wayland and "tray" in wayland
    assert "no X display" in unavailable_reason({}, "linux")
    assert unavailable_reason({"DISPLAY": ":0"}, "linux") is None


def test_the_tray_shows_speaking_idle_and_the_engines_health():
    from voicedesk.app.ui.tray_icon import tray_look

    idle = tray_look(False, 0, False, "WebSocket", EngineState.READY, "Connected")
    assert (idle.activity, idle.health) == ("idle", "ok")
    busy = tray_look(True, 2, True, "WebSocket", EngineState.DISCONNECTED, "Disconnected")
    assert (busy.activity, busy.health) == ("speaking", "down")
    assert busy.tooltip.splitlines() == ["voicedesk — speaking", "2 waiting (paused)", "WebSocket: Disconnected"]
    assert tray_look(False, 0, False, "Local", EngineState.LOADING, "Loading").health == "busy"


def test_without_a_system_tray_the_window_says_so(make_window):
    from PySide6.QtWidgets import QSystemTrayIcon

    window = make_window(start=False)
    window.desktop.apply()
    text = window.sidebar.desktop.tray_status.text()
    if QSystemTrayIcon.isSystemTrayAvailable():
        assert "Tray icon on" in text
    else:
        assert "no system tray" in text  # a bare X server (Xvfb) has none
    assert window.desktop.tray.look is not None and window.desktop.tray.look.activity == "idle"


@pytest.mark.slow
@pytest.mark.audio
def test_global_shortcuts_speak_a_phrase_and_stop_it_from_outside_the_window(tmp_path, hf_home):
    sink = require_null_sink()
    if os.environ.get("QT_QPA_PLATFORM") != "xcb" or not shutil.which("xdotool"):
        if os.environ.get("VOICEDESK_REQUIRE_AUDIO") == "1":
            pytest.fail("needs the X server and xdotool that tests/run.sh provides")
        pytest.skip("needs an X server (Xvfb) and xdotool")
    settings = AppSettings()
    settings.phrases = [Phrase("Long", LONG, shortcut="Ctrl+Alt+1")]
    settings.desktop.stop_shortcut = "Ctrl+Alt+S"
    path = tmp_path / "settings.json"
    history = tmp_path / "history.json"
    save_settings(settings, path)
    before = path.stat().st_mtime_ns
    env = {k: v for k, v in os.environ.items() if k != "VOICEDESK_NO_GLOBAL_SHORTCUTS"}
    command = [
        sys.executable,
        "-m",
        "voicedesk.engine.commands",
        "app",
        "--settings",
        str(path),
        "--history",
        str(history),
    ]
    with SinkCapture(sink) as capture:
        process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
        try:
            wait_for(lambda: path.stat().st_mtime_ns != before, process, "the window to come up")
            press("ctrl+alt+1")
            wait_for(lambda: _loud(capture), process, "the phrase to be heard")
            press("ctrl+alt+s")
            wait_for(lambda: _entries(history), process, "the history entry")
            process.send_signal(signal.SIGTERM)
            code = process.wait(60)
        finally:
            if process.poll() is None:
                process.kill()
    errors = process.stderr.read()
    assert code == 0, errors
    (entry,) = _entries(history)
    assert entry["origin"] == "Phrase · Long" and entry["state"] == "cut"
    assert LONG.startswith(entry["text"].rstrip(". ")) or entry["text"] == ""
    assert "Traceback" not in errors


def press(keys: str) -> None:
    subprocess.run(["xdotool", "key", "--clearmodifiers", keys], check=True, timeout=10)


def wait_for(condition, process, what: str, within_s: float = 180.0) -> None:
    deadline = time.monotonic() + within_s
    while not condition():
        if process.poll() is not None:
            raise AssertionError(f"the app exited while waiting for {what}: {process.stderr.read()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _loud(capture: SinkCapture) -> bool:
    samples = np.fromfile(capture.path, dtype="<f4")
    return samples.size > 0 and float(np.abs(samples).max()) > 0.01


def _entries(history) -> list[dict]:
    try:
        return json.loads(history.read_text())["entries"]
    except (FileNotFoundError, ValueError, KeyError):
        return []
