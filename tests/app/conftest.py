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

from tests.app.helpers import opener_for, where_tasks_wait

LOOP_WAIT_LIMIT_S = 200.0
"""Longer than any one wait a test makes (``until`` gives up at 120 s), shorter than pytest-timeout's 300 s."""


@pytest.fixture
def qloop(qapp) -> Iterator[asyncio.AbstractEventLoop]:
    """asyncio on Qt's event loop, as in the app (tests drive it with ``qloop.run_until_complete``).

    In the app the loop runs for the window's whole life. Here Qt also runs between two ``run_until_complete``
    calls (qtbot's clicks, qasync's own last pass of events), and an asyncio callback run then must still see
    its loop as the running one, or a background task (the health check's HTTP request) fails with "no running
    event loop". So the loop stays marked running for the whole test."""
    import qasync

    from voicedesk.app.ui.theme import apply_theme

    class AppLikeLoop(qasync.QEventLoop):
        def run_until_complete(self, future):
            """Bounded: while Qt's C++ loop waits, no Python runs, so pytest-timeout's signal never lands and a
            wait that never ends would hang the whole run (CI's did, in a window's shutdown)."""
            return super().run_until_complete(self._bounded(future))

        async def _bounded(self, future):
            try:
                return await asyncio.wait_for(future, LOOP_WAIT_LIMIT_S)
            except TimeoutError:
                raise TimeoutError(
                    f"a wait on the Qt loop did not end within {LOOP_WAIT_LIMIT_S:.0f} s; the tasks stopped:\n"
                    + where_tasks_wait(self)
                ) from None

        def run_forever(self):
            try:
                return super().run_forever()
            finally:
                asyncio.events._set_running_loop(self)

    from voicedesk.app.ui.gc_guard import MainThreadGarbageCollector

    apply_theme(qapp)
    collector = MainThreadGarbageCollector(qapp)  # as in the app: Qt objects are only ever freed on Qt's thread
    collector.start()
    loop = AppLikeLoop(qapp)
    asyncio.set_event_loop(loop)
    asyncio.events._set_running_loop(loop)
    yield loop
    asyncio.events._set_running_loop(None)
    loop.close()
    asyncio.set_event_loop(None)
    collector.stop()  # this test's windows and loop are freed here, on Qt's thread
    collector.deleteLater()


@pytest.fixture
def make_window(qtbot, qloop, synthesizer, tmp_path):
    """Builds the real MainWindow on a private settings file; shuts every one down after the test."""
    from voicedesk.app.ui.window import MainWindow

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
