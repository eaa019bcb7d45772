"""Fixtures for the app's tests: a qasync loop on pytest-qt's QApplication, the real window, engine openers.

Qt needs a platform before the QApplication exists: tests/run.sh starts Xvfb (QT_QPA_PLATFORM=xcb); without
a display the window is drawn offscreen, which needs no system packages.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

if not os.environ.get("DISPLAY"):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# In-process windows do not grab global shortcuts, so their shortcuts are bound inside the window, where qtbot's
# key presses (Qt events, which an X11 listener never sees) reach them. test_desktop.py runs the real app in its
# own process with the global shortcuts on, and presses them with xdotool.
os.environ.setdefault("VOICEDESK_NO_GLOBAL_SHORTCUTS", "1")

from tests.app.helpers import opener_for


@pytest.fixture
def qloop(qapp) -> Iterator[asyncio.AbstractEventLoop]:
    """asyncio on Qt's event loop, as in the app (tests drive it with ``qloop.run_until_complete``)."""
    import qasync

    from app.ui.theme import apply_theme

    apply_theme(qapp)
    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    yield loop
    loop.close()
    asyncio.set_event_loop(None)


@pytest.fixture
def make_window(qtbot, qloop, synthesizer, tmp_path):
    """Builds the real MainWindow on a private settings file; shuts every one down after the test."""
    from app.ui.window import MainWindow

    windows = []

    def make(settings_path: Path | None = None, start: bool = True, **options) -> MainWindow:
        options.setdefault("engine_opener", opener_for(synthesizer))
        options.setdefault("history_path", tmp_path / "history.json")
        window = MainWindow(settings_path or tmp_path / "settings.json", **options)
        # Not qtbot.addWidget: pytest-qt would close the window before this fixture's teardown, starting the
        # app's shutdown on a loop that is no longer run. The teardown below shuts each window down fully.
        window.show()
        qtbot.waitExposed(window)
        if start:
            qloop.run_until_complete(window.start())
        windows.append(window)
        return window

    yield make
    for window in windows:
        qloop.run_until_complete(window.shutdown())
        window.close()
        window.deleteLater()
