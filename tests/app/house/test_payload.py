"""What an input may send (shared by MQTT and HTTP): JSON announcements and plain text, and the reasons a payload
is refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from voicedesk.app.console.announcement import Priority, Request, Source
from voicedesk.app.house.payload import MAX_TEXT_CHARS, PayloadError, parse_payload


def test_a_full_json_announcement():
    raw = b'{"text": " Leak! ", "voice": "am_adam", "priority": "URGENT", "chime": "alert", "ttl_s": 30, "id": "x1"}'
    assert parse_payload(raw, Source.MQTT, frozenset({"alert"})) == Request(
        "Leak!", Priority.URGENT, "am_adam", "alert", 30.0, "x1", Source.MQTT
    )


def test_plain_text_is_a_normal_announcement():
    assert parse_payload("  The mail is here. ", Source.HTTP) == Request("The mail is here.", source=Source.HTTP)


@pytest.mark.parametrize("text", ["[Siobhan](/ʃɪvˈɔn/) is at the door.", "[1, 2, 3] go!", "null", "true"])
def test_only_a_json_object_is_json_anything_else_is_plain_text(text):
    """A name fixed inline in plain text (``[Name](/phonemes/) …``) was refused as bad JSON."""
    assert parse_payload(text.encode(), Source.MQTT) == Request(text, source=Source.MQTT)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ('{"text": true}', "'text' must be a string"),
        ('{"text": "x", "ttl_s": true}', "'ttl_s' must be a number"),
        ('{"text": "x", "ttl_s": 1e9}', "at most 86400"),
        ('{"text": "x", "voice": 3}', "'voice' must be a string"),
        ('{"text": "' + "a" * (MAX_TEXT_CHARS + 1) + '"}', f"at most {MAX_TEXT_CHARS}"),
        ('{"text": "x", "id": "' + "i" * 200 + '"}', "longer than 128"),
    ],
)
def test_refusals_say_what_was_wrong(raw, reason):
    with pytest.raises(PayloadError, match=reason.replace("(", r"\(")):
        parse_payload(raw, Source.MQTT)


@given(st.binary(max_size=300))
def test_any_bytes_either_parse_or_are_refused_with_a_reason(raw):
    try:
        request = parse_payload(raw, Source.MQTT, frozenset({"ding"}))
    except PayloadError as exc:
        assert str(exc)
    else:
        assert request.text.strip() and len(request.text) <= MAX_TEXT_CHARS
