"""Logging what clients control without letting them write the log.

Request paths, request ids, voices and text come from the network: ``escape`` makes any of them one printable,
bounded token (newlines, ANSI escapes and other control characters become ``\\n``/``\\x1b``), so a client can
neither forge log lines nor flood the log with one value. ``BadFrameLog`` reports unreadable frames and slowed
reads of all connections as counts at most once per interval, never a line (or a traceback) per frame.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from urllib.parse import parse_qsl, quote, urlencode

MAX_LOGGED_CHARS = 120
SUMMARY_INTERVAL_S = 10.0


def escape(value: object, limit: int = MAX_LOGGED_CHARS) -> str:
    text = value if isinstance(value, str) else str(value)
    cut = len(text) > limit
    text = text[:limit]
    escaped = text.encode("unicode_escape").decode("ascii") if not text.isprintable() else text
    return f"{escaped}…(+{len(value) - limit if isinstance(value, str) else 0} chars)" if cut else escaped


REDACTED = "[redacted]"
CREDENTIAL_KEYS = re.compile(
    r"token|key|secret|pass(word|wd)?|auth|credential|signature|sig$|session|jwt|bearer|cookie", re.IGNORECASE
)
"""Query parameters whose value is a credential by name (``token``, ``X-Amz-Signature``, ``api_key``, ...)."""
CREDENTIAL_VALUES = re.compile(
    r"^(?:eyJ[\w-]+\.[\w-]+\.?[\w-]*"  # a JWT
    r"|(?:AKIA|ASIA)[A-Z0-9]{12,}"  # an AWS access key id
    r"|(?=[\w+/=-]*\d)(?=[\w+/=-]*[A-Za-z])[\w+/=-]{24,})$"  # a long random-looking string: a key or a token
)
"""Values that look like a credential whatever their parameter is called."""
_QUERY = re.compile(r"\?([^\s\"']*)")


def redact_query(text: str) -> str:
    """Every query string in ``text`` with credential values replaced by ``[redacted]`` (paths are kept)."""

    def redact(match: re.Match[str]) -> str:
        pairs = parse_qsl(match.group(1), keep_blank_values=True)
        if not pairs:
            return match.group(0)
        secret = [bool(CREDENTIAL_KEYS.search(name) or CREDENTIAL_VALUES.match(value)) for name, value in pairs]
        if not any(secret):
            return match.group(0)
        kept = [(name, REDACTED if hide else value) for (name, value), hide in zip(pairs, secret, strict=True)]
        return "?" + urlencode(kept, safe="[]", quote_via=quote)

    return _QUERY.sub(redact, text) if "?" in text else text


class BadFrameLog:
    """Unreadable frames and slowed reads of all sessions together, logged as counts at most once per interval.

    One per server, not per connection: a client reconnecting to send junk would otherwise write a line per
    connection. What is held back is told when the interval is up, even if nothing more comes."""

    def __init__(self, log: logging.Logger, interval_s: float = SUMMARY_INTERVAL_S) -> None:
        self._log = log
        self._interval_s = interval_s
        self._bad = 0
        self._paced = 0
        self._sessions: set[str] = set()
        self._last_at: float | None = None
        self._flush_due = False

    def add(self, who: str, bad: int, paced: int) -> None:
        if not bad and not paced:
            return
        self._bad += bad
        self._paced += paced
        self._sessions.add(who)
        now = time.monotonic()
        if self._last_at is None or now - self._last_at >= self._interval_s:
            self._last_at = now
            self.flush()
        elif not self._flush_due:
            self._flush_due = True
            asyncio.get_running_loop().call_later(self._interval_s - (now - self._last_at), self._flush_later)

    def _flush_later(self) -> None:
        self._flush_due = False
        self._last_at = time.monotonic()
        self.flush()

    def flush(self) -> None:
        if self._bad or self._paced:
            self._log.log(
                logging.WARNING if self._bad else logging.INFO,
                "%d frame(s) could not be understood; %d read(s) slowed by the frame rate (none dropped); "
                "in %d session(s): %s",
                self._bad,
                self._paced,
                len(self._sessions),
                ", ".join(sorted(self._sessions)[:5]) + (", …" if len(self._sessions) > 5 else ""),
            )
        self._bad = self._paced = 0
        self._sessions.clear()


class ServerLogGuard(logging.Filter):
    """For uvicorn's own loggers: redacts credentials in query strings (uvicorn logs a WebSocket upgrade's path with
    its query, so ``?token=...`` would be written in clear), escapes every string argument (uvicorn logs the
    percent-decoded request path of WebSocket upgrades as is, so ``/x%0Aforged`` would write a line of its own) and
    lets one warning template
    through at most once per interval, saying how many were held back (``Invalid HTTP request received.`` once
    per malformed request would let a client write the log at the rate it opens connections)."""

    def __init__(self, interval_s: float = SUMMARY_INTERVAL_S) -> None:
        super().__init__()
        self._interval_s = interval_s
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and record.args:
            record.args = tuple(escape(redact_query(arg), 300) if isinstance(arg, str) else arg for arg in record.args)
        elif isinstance(record.msg, str) and "?" in record.msg:
            record.msg = redact_query(record.msg)
        if record.levelno < logging.WARNING or record.exc_info:
            return True
        key = str(record.msg)
        now = time.monotonic()
        last = self._last.get(key)
        if last is not None and now - last < self._interval_s:
            self._held[key] = self._held.get(key, 0) + 1
            return False
        self._last[key] = now
        held = self._held.pop(key, 0)
        if held:
            record.msg = f"{record.msg} (and {held} more like it in the last {now - (last or now):.0f} s)"
        return True


def guard_server_logs(names: tuple[str, ...] = ("uvicorn.error", "uvicorn.access")) -> None:
    """Installs one ``ServerLogGuard`` on each of uvicorn's loggers (once per process)."""
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, ServerLogGuard) for f in logger.filters):
            logger.addFilter(ServerLogGuard())
