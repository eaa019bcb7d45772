"""``voicedesk`` (or ``voicedesk app``): the desktop app on Qt's event loop, with asyncio running on it (qasync)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from pathlib import Path

from voicedesk.engine.errors import UsageError


def register(subparsers: argparse._SubParsersAction) -> None:
    """The default command, registered without importing Qt."""
    parser = subparsers.add_parser("app", help="open the desktop app (the default)")
    add_app_arguments(parser)
    parser.set_defaults(handler=run_app)


def add_app_arguments(parser: argparse.ArgumentParser) -> None:
    settings_help = "settings file to use (default: settings.json in the user's config folder)"
    parser.add_argument("--settings", type=Path, metavar="PATH", help=settings_help)
    history_help = "history file to use (default: history.json in voicedesk's data folder)"
    parser.add_argument("--history", type=Path, metavar="PATH", help=history_help)
    from voicedesk.app.house.cli import add_input_arguments

    add_input_arguments(parser)  # announcements from the house into the window's queue (docs/house.md)


def require_display(environ: dict[str, str] | None = None, platform: str = sys.platform) -> None:
    """Fails with advice instead of Qt's abort ("no Qt platform plugin could be initialized") on a headless Linux."""
    env = os.environ if environ is None else environ
    if not platform.startswith("linux") or env.get("QT_QPA_PLATFORM"):
        return
    if not (env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")):
        raise UsageError(
            "The desktop app needs a graphical session, and this one has no display (DISPLAY and WAYLAND_DISPLAY "
            "are unset). On a headless machine use `voicedesk say` or `voicedesk serve`, or run the app under "
            "Xvfb (`xvfb-run voicedesk`)."
        )


def run_app(args: argparse.Namespace) -> int:
    require_display()
    from voicedesk.app.stderr_filter import StderrFilter, quiet_late_completions

    StderrFilter().start()  # ALSA's underrun lines stay out of the terminal; the latency panel counts underruns
    quiet_late_completions()
    import qasync
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from voicedesk.app.settings import default_settings_path
    from voicedesk.app.ui.gc_guard import MainThreadGarbageCollector
    from voicedesk.app.ui.theme import apply_theme
    from voicedesk.app.ui.window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("voicedesk")
    app.setApplicationDisplayName("voicedesk")
    apply_theme(app)
    MainThreadGarbageCollector(app).start()
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    settings_path = getattr(args, "settings", None) or default_settings_path()
    from voicedesk.app.house.cli import house_inputs_from_args

    house = house_inputs_from_args(args)
    window = MainWindow(settings_path, history_path=getattr(args, "history", None), house=house)
    closed = asyncio.Event()
    app.lastWindowClosed.connect(closed.set)
    window.shut_down.connect(closed.set)  # the window hides first and shuts down after
    # Ctrl+C in the terminal (or a TERM from a session manager) closes the window the normal way, so the
    # settings are saved and the engines and the audio stream are shut down.
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: QTimer.singleShot(0, window.close))
    window.show()

    async def main() -> None:
        window.spawn(window.start())
        await closed.wait()
        await window.shutdown()  # the same shutdown the close started: settings saved, engines and audio closed

    loop.set_exception_handler(_quiet_late_errors)
    loop.run_until_complete(main())
    _exit_now()


def _quiet_late_errors(loop: asyncio.AbstractEventLoop, context: dict) -> None:
    """The AWS CRT completes futures cancelled when a SageMaker stream closed: logged, not a traceback."""
    error = context.get("exception")
    if isinstance(error, asyncio.InvalidStateError):
        logging.getLogger(__name__).debug("late completion ignored: %s", context.get("message"), exc_info=error)
        return
    loop.default_exception_handler(context)


def _exit_now() -> None:
    """All is saved; waiting for a model load on a worker thread kept the process alive after the window went."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
