"""What a house input may ask for (a JSON object or plain text), shared by MQTT and HTTP so both refuse alike."""

from __future__ import annotations

import json
import math

from voicedesk.app.console.announcement import Priority, Request, Source

MAX_TEXT_CHARS = 2_000  # an announcement is a sentence or a few (``voicedesk say`` reads books)
MAX_TTL_S = 24 * 3600.0
FIELDS = ("text", "voice", "priority", "chime", "ttl_s", "id")
EXAMPLE = '{"text": "The washer is done.", "priority": "normal"}'


class PayloadError(ValueError):
    """Its message goes back to the sender."""


def parse_payload(raw: bytes | str, source: Source, chimes: frozenset[str] | None = None) -> Request:
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PayloadError(f"the payload is not UTF-8 text (byte {exc.start}); send UTF-8") from None
    stripped = raw.strip()
    if stripped.startswith("{"):  # only an object is an announcement in JSON: "[Name](/nˈeɪm/) is here." is text
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise PayloadError(
                f"the payload looks like JSON but is not valid JSON ({exc.msg} at character {exc.pos}); "
                f"send e.g. {EXAMPLE}, or plain text"
            ) from None
        return request_from_json(data, source, chimes)
    return Request(_text(stripped), source=source)


def request_from_json(data: dict, source: Source, chimes: frozenset[str] | None = None) -> Request:
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise PayloadError(f"unknown field(s) {', '.join(map(repr, unknown))}; the fields are {', '.join(FIELDS)}")
    if "text" not in data:
        raise PayloadError(f"the payload has no 'text'; send e.g. {EXAMPLE}")
    text = _text(_string(data, "text"))
    voice = _string(data, "voice", "").strip()
    try:
        priority = Priority.parse(_string(data, "priority", "normal"))
    except ValueError as exc:
        raise PayloadError(str(exc)) from None
    chime = data.get("chime")
    if chime is not None:
        chime = _string(data, "chime").strip()
        if chimes is not None and chime not in chimes:
            raise PayloadError(f"unknown chime {chime!r}: use one of {', '.join(sorted(chimes))}")
    ttl = data.get("ttl_s")
    if ttl is not None:
        if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not math.isfinite(ttl):
            raise PayloadError(f"'ttl_s' must be a number of seconds, not {ttl!r}")
        if not 0 < ttl <= MAX_TTL_S:
            raise PayloadError(f"'ttl_s' must be above 0 and at most {MAX_TTL_S:.0f} seconds, not {ttl}")
        ttl = float(ttl)
    item_id = _string(data, "id", "").strip()
    if len(item_id) > 128:
        raise PayloadError("'id' is longer than 128 characters")
    return Request(text, priority, voice, chime, ttl, item_id, source)


def _string(data: dict, key: str, default: str | None = None) -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise PayloadError(f"'{key}' must be a string, not {json.dumps(value)}")
    return value


def _text(text: str) -> str:
    text = text.strip()
    if not text:
        raise PayloadError("the announcement is empty: send the text to say")
    if len(text) > MAX_TEXT_CHARS:
        raise PayloadError(f"the text has {len(text)} characters; an announcement may have at most {MAX_TEXT_CHARS}")
    return text


def parse_listen(raw: bytes | str) -> bool:
    """A listen command: True to start (``start``, Home Assistant's button ``PRESS``, or nothing), False to stop."""
    word = (raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw).strip().lower()
    if word in ("", "start", "press", "on"):
        return True
    if word in ("stop", "off"):
        return False
    raise PayloadError(f"a listen command is 'start' or 'stop', not {word[:40]!r}")
