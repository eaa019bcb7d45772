"""Warms the front-end's memo on a thread of its own while a sentence is still arriving, so its numbers and units are
ready when it ends. One thread, only the newest fragment waits; a hint that never changes a result."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from voicedesk.engine.text.frontend import complete_words
from voicedesk.engine.text.frontend.settings import TextSettings

log = logging.getLogger(__name__)

Warm = Callable[[str, str, TextSettings], object]
"""``(text, voice, settings)`` → the front-end warmed for that text (``FrontEnd.warm`` in the voice's language)."""


class FrontEndWarmer:
    def __init__(self, warm: Warm) -> None:
        self._warm = warm
        self._lock = threading.Condition()
        self._next: tuple[str, str, TextSettings] | None = None
        self._last: tuple[str, str, TextSettings] | None = None
        self._running = False
        self.warmed = 0
        """Fragments warmed (for tests and benchmarks)."""

    def hint(self, text: str, voice: str, settings: TextSettings) -> None:
        """Warms ``text``'s complete words soon on the warmer's thread; returns at once."""
        text = complete_words(text)
        if not text.strip():
            return
        job = (text, voice, settings)
        with self._lock:
            if job == self._last or job == self._next:
                return
            self._next = job
            if self._running:
                return
            self._running = True
        threading.Thread(target=self._run, name="voicedesk-warm", daemon=True).start()

    def _run(self) -> None:
        while True:
            with self._lock:
                job, self._next = self._next, None
                if job is None:
                    self._running = False
                    self._lock.notify_all()
                    return
                self._last = job
            try:
                self._warm(*job)
            except Exception as exc:  # a hint: the sentence itself will meet (and report) any real problem
                log.debug("warming the front-end for %r failed: %s", job[0][:40], exc)
            with self._lock:
                self.warmed += 1

    def wait_idle(self, timeout_s: float) -> bool:
        """Waits until nothing is being warmed or waiting to be; False if ``timeout_s`` passed first."""
        with self._lock:
            return self._lock.wait_for(lambda: not self._running, timeout_s)
