"""Python's cyclic garbage collector, run on Qt's thread only.

The collector normally runs on whichever thread happens to allocate when a threshold is crossed: a model worker,
PortAudio's callback, a shortcut listener. If the garbage it frees holds a Qt object (a window's helpers, a
widget, an object with a running timer), that object is destroyed on the wrong thread, and Qt later delivers an
event or a timer to freed memory: a segfault far from its cause. So automatic collection is turned off and the
same thresholds are checked from a timer on Qt's thread (the approach pyqtgraph's ``GarbageCollector`` takes).
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer


class MainThreadGarbageCollector(QObject):
    def __init__(self, parent: QObject | None = None, interval_ms: int = 500) -> None:
        super().__init__(parent)
        self._thresholds = gc.get_threshold()
        self._timer = QTimer(self, interval=interval_ms)
        self._timer.timeout.connect(self.check)

    def start(self) -> None:
        gc.disable()
        self._timer.start()

    def stop(self) -> None:
        """Collects what is left, here, and gives collection back to Python."""
        self._timer.stop()
        gc.collect()
        gc.enable()

    def check(self) -> None:
        counts = gc.get_count()
        if counts[0] > self._thresholds[0]:
            generation = 0
            if counts[1] > self._thresholds[1]:
                generation = 2 if counts[2] > self._thresholds[2] else 1
            gc.collect(generation)
