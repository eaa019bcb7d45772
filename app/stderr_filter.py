"""Keeps ALSA's underrun lines and the AWS CRT's late completions out of the terminal: a Python ALSA handler would
take the GIL in PortAudio's real-time thread, so fd 2 goes through a pipe whose reader drops ALSA's lines."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from concurrent.futures import InvalidStateError
from typing import Any

CHATTER = (b"ALSA lib ",)  # lines starting with these are dropped


class StderrFilter:
    def __init__(self, drop: tuple[bytes, ...] = CHATTER) -> None:
        self._drop = drop
        self._saved: int | None = None
        self._reader: threading.Thread | None = None
        self.dropped = 0

    def start(self) -> StderrFilter:
        if self._saved is not None:
            return self
        read_end, write_end = os.pipe()
        self._saved = os.dup(2)
        os.dup2(write_end, 2)
        os.close(write_end)
        self._reader = threading.Thread(target=self._pass_on, args=(read_end, self._saved), daemon=True)
        self._reader.start()
        return self

    def stop(self) -> None:
        if self._saved is None:
            return
        saved, self._saved = self._saved, None
        os.dup2(saved, 2)  # the pipe's last write end closes here
        if self._reader is not None:
            self._reader.join(timeout=2.0)
        os.close(saved)

    def _pass_on(self, read_end: int, target: int) -> None:
        pending = b""
        with contextlib.suppress(OSError), os.fdopen(read_end, "rb", buffering=0) as pipe:
            while chunk := pipe.read(4096):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    self._write(line + b"\n", target)
        if pending:
            self._write(pending, target)

    def _write(self, line: bytes, target: int) -> None:
        if line.startswith(self._drop):
            self.dropped += 1
            return
        with contextlib.suppress(OSError):
            os.write(target, line)


def quiet_late_completions() -> None:
    """The CRT completes futures from its own threads, hitting ones already cancelled: drops just those reports."""
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        error = unraisable.exc_value
        if isinstance(error, InvalidStateError) and str(error).startswith("CANCELLED"):
            return
        previous(unraisable)

    sys.unraisablehook = hook
