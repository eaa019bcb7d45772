"""Checking the URLs the app connects to, and whether a secret may travel to one (pure): unencrypted only to
loopback, or to a host the person confirmed this session (never in the settings file, so an edit cannot pre-approve)."""

from __future__ import annotations

from urllib.parse import urlsplit

from voicedesk.endpoint.hosting import is_loopback
from voicedesk.engine.errors import UsageError

AGENT_SCHEMES = ("http", "https")
ENGINE_SCHEMES = ("ws", "wss")
PLAIN_SCHEMES = ("http", "ws")
MAX_URL_CHARS = 2048


def url_problem(url: str, schemes: tuple[str, ...]) -> str | None:
    if not isinstance(url, str) or not url.strip():
        return "it is empty"
    if len(url) > MAX_URL_CHARS:
        return f"it is longer than {MAX_URL_CHARS} characters"
    if any(c.isspace() or ord(c) < 32 for c in url.strip()):
        return "it contains spaces or control characters"
    try:
        parts = urlsplit(url.strip())
    except ValueError as exc:
        return f"it cannot be read ({exc})"
    try:
        port = parts.port  # raises on a port that is not a number in range
    except ValueError:
        return "the port must be a number from 1 to 65535"
    if parts.scheme.lower() not in schemes:
        return f"it must start with {' or '.join(s + '://' for s in schemes)}"
    if not parts.hostname:
        return "it names no host"
    if parts.username or parts.password:
        return "it carries a user name or password (give secrets through the environment instead)"
    del port
    return None


def check_url(url: str, schemes: tuple[str, ...], what: str, example: str) -> str:
    problem = url_problem(url, schemes)
    if problem is not None:
        raise UsageError(f"The {what} {url!r} is not usable: {problem}. Example: {example}")
    return url.strip()


def engine_url(text: str) -> str:
    """The one form of an engine's address (``normalize_url``: ``host:port`` → ``ws://host:port/invocations-…``);
    text that is not one is kept as typed, for the card to say why."""
    from voicedesk.engine.clients.websocket import normalize_url  # the websocket client stays unloaded until needed

    text = text.strip()
    try:
        url = normalize_url(text)
    except UsageError:
        return text
    return url if url_problem(url, ENGINE_SCHEMES) is None else text


def host_of(url: str) -> str:
    try:
        return (urlsplit(url.strip()).hostname or "").lower()
    except ValueError:
        return ""


def secret_needs_consent(url: str) -> bool:
    try:
        scheme = urlsplit(url.strip()).scheme.lower()
    except ValueError:
        return True
    return scheme in PLAIN_SCHEMES and not is_loopback(host_of(url))


class SecretConsent:
    def __init__(self) -> None:
        self._allowed: set[str] = set()
        self._refused: set[str] = set()

    def decided(self, url: str) -> bool | None:
        """True: allowed; False: refused; None: not asked yet (or not needed: then True)."""
        if not secret_needs_consent(url):
            return True
        host = host_of(url)
        if host in self._allowed:
            return True
        if host in self._refused:
            return False
        return None

    def record(self, url: str, allowed: bool) -> None:
        host = host_of(url)
        (self._allowed if allowed else self._refused).add(host)
        (self._refused if allowed else self._allowed).discard(host)
