"""Logging what clients control without letting them write the log: ``escape`` makes a client's value one printable,
bounded token, so it can neither forge lines nor flood; ``CountLog`` reports what clients cause as counts."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from urllib.parse import unquote

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
    r"token|key|secret|pass(word|wd)?|pwd|auth|credential|signature|sig$|^code$|session|jwt|bearer|cookie",
    re.IGNORECASE,
)
"""Query parameters whose value is a credential by name (``token``, ``X-Amz-Signature``, ``api_key``, ...)."""
CREDENTIAL_VALUES = re.compile(
    r"^(?:eyJ[\w-]+\.[\w-]+\.?[\w-]*"  # a JWT
    r"|(?:AKIA|ASIA)[A-Z0-9]{12,}"  # an AWS access key id
    r"|(?=[\w+/=-]*\d)(?=[\w+/=-]*[A-Za-z])[\w+/=-]{24,})$"  # a long random-looking string: a key or a token
)
"""Values that look like a credential whatever their parameter is called."""
_QUERY = re.compile(r"\?([^\s\"']*)")
_PAIR = re.compile(r"([^&;?=]+)=([^&;?]*)")
REFUSED = frozenset({401, 403})
"""Statuses of requests refused for their credentials: their whole query is redacted (a token may hide anywhere)."""


def redact_query(text: str, whole: bool = False) -> str:
    """``text`` with credential values in query strings ``[redacted]`` (``whole``: the entire query)."""

    def secret(name: str, value: str) -> bool:
        return bool(CREDENTIAL_KEYS.search(unquote(name)) or CREDENTIAL_VALUES.match(unquote(value)))

    def redact(match: re.Match[str]) -> str:
        if whole:
            return "?" + REDACTED if match.group(1) else match.group(0)
        return "?" + _PAIR.sub(
            lambda pair: f"{pair.group(1)}={REDACTED}" if secret(*pair.groups()) else pair.group(0), match.group(1)
        )

    return _QUERY.sub(redact, text) if "?" in text else text


class CountLog:
    """Counts of what clients cause, of all connections together, logged at most once per interval (a client
    reconnecting to send junk would write a line each time); held-back counts are told when the interval is up.
    ``say(counts, who)`` writes the line."""

    def __init__(self, say: Callable[[dict[str, int], set[str]], None], interval_s: float = SUMMARY_INTERVAL_S) -> None:
        self._say = say
        self._interval_s = interval_s
        self._counts: dict[str, int] = {}
        self._who: set[str] = set()
        self._last_at: float | None = None
        self._flush_due = False

    def add(self, counts: dict[str, int], who: str | None = None) -> None:
        counts = {key: n for key, n in counts.items() if n}
        if not counts:
            return
        for key, n in counts.items():
            self._counts[key] = self._counts.get(key, 0) + n
        if who is not None:
            self._who.add(who)
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
        if self._counts:
            self._say(self._counts, self._who)
        self._counts, self._who = {}, set()


def bad_frame_log(log: logging.Logger) -> CountLog:
    """Unreadable frames and slowed reads of every WebSocket session (``add({"bad": n, "paced": m}, session)``)."""

    def say(counts: dict[str, int], who: set[str]) -> None:
        bad = counts.get("bad", 0)
        log.log(
            logging.WARNING if bad else logging.INFO,
            "%d frame(s) could not be understood; %d read(s) slowed by the frame rate (none dropped); "
            "in %d session(s): %s",
            bad,
            counts.get("paced", 0),
            len(who),
            ", ".join(sorted(who)[:5]) + (", …" if len(who) > 5 else ""),
        )

    return CountLog(say)


def refusal_log(log: logging.Logger) -> CountLog:
    """Refused connections by reason (``add({reason: 1})``)."""
    return CountLog(
        lambda counts, _: log.warning(
            "refused new connections: %s", ", ".join(f"{n} by the {reason}" for reason, n in counts.items())
        )
    )


PER_CONNECTION = frozenset({"connection open", "connection closed", '%s - "WebSocket %s" [accepted]'})
"""uvicorn's INFO lines for every WebSocket, refused ones too: limited like warnings."""


class ServerLogGuard(logging.Filter):
    """For uvicorn's own loggers: redacts ``?token=`` in logged paths, escapes every string argument (uvicorn logs a
    WebSocket path percent-decoded) and lets each warning template through once per interval with a count of those held
    back."""

    def __init__(self, interval_s: float = SUMMARY_INTERVAL_S) -> None:
        super().__init__()
        self._interval_s = interval_s
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and record.args:
            whole = record.args[-1] in REFUSED  # uvicorn's lines end with the status
            record.args = tuple(
                escape(redact_query(arg, whole), 300) if isinstance(arg, str) else arg for arg in record.args
            )
        elif isinstance(record.msg, str) and "?" in record.msg:
            record.msg = redact_query(record.msg)
        if (record.levelno < logging.WARNING and record.msg not in PER_CONNECTION) or record.exc_info:
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


def guard_server_logs(names: tuple[str, ...] = ("uvicorn.error", "uvicorn.access", "phonemizer")) -> None:
    """Installs one ``ServerLogGuard`` on each of uvicorn's loggers and the espeak fallback's (once per process)."""
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, ServerLogGuard) for f in logger.filters):
            logger.addFilter(ServerLogGuard())
