"""Python's cyclic garbage collector, run on Qt's thread only (as pyqtgraph's ``GarbageCollector`` does): run on
whichever thread allocates, it would destroy Qt objects there, a segfault far from its cause."""

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
