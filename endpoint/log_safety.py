"""Logging what clients control without letting them write the log.

Request paths, request ids, voices and text come from the network: ``escape`` makes any of them one printable,
bounded token (newlines, ANSI escapes and other control characters become ``\\n``/``\\x1b``), so a client can
neither forge log lines nor flood the log with one value. ``BadFrameLog`` reports a connection's unreadable or
throttled frames as a count at most once per interval, never a traceback per frame.
"""

from __future__ import annotations

import logging
import time

MAX_LOGGED_CHARS = 120
SUMMARY_INTERVAL_S = 10.0


def escape(value: object, limit: int = MAX_LOGGED_CHARS) -> str:
    text = value if isinstance(value, str) else str(value)
    cut = len(text) > limit
    text = text[:limit]
    escaped = text.encode("unicode_escape").decode("ascii") if not text.isprintable() else text
    return f"{escaped}…(+{len(value) - limit if isinstance(value, str) else 0} chars)" if cut else escaped


class BadFrameLog:
    def __init__(self, log: logging.Logger, who: str, interval_s: float = SUMMARY_INTERVAL_S) -> None:
        self._log = log
        self._who = who
        self._interval_s = interval_s
        self._logged_bad = 0
        self._logged_dropped = 0
        self._bad = 0
        self._dropped = 0
        self._last_at: float | None = None

    def update(self, bad_total: int, dropped_total: int) -> None:
        self._bad, self._dropped = bad_total, dropped_total
        if self._bad == self._logged_bad and self._dropped == self._logged_dropped:
            return
        now = time.monotonic()
        if self._last_at is None or now - self._last_at >= self._interval_s:
            self._last_at = now
            self.flush()

    def flush(self) -> None:
        bad = self._bad - self._logged_bad
        dropped = self._dropped - self._logged_dropped
        if bad or dropped:
            self._log.warning(
                "session %s: %d frame(s) could not be understood, %d dropped by the rate limit", self._who, bad, dropped
            )
        self._logged_bad, self._logged_dropped = self._bad, self._dropped
