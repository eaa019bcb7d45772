"""The request fields mean the same on every transport: the WebSocket codec and the HTTP parser get the same values
and agree, field by field, on what they accept (and as what) and on the error code of what they refuse."""

from __future__ import annotations

import json

import pytest

from voicedesk.endpoint.speech_request import parse_invocation
from voicedesk.engine.errors import ErrorCode, VoicedeskError
from voicedesk.engine.protocol import ProtocolError, SynthesizeRequest, decode_command
from voicedesk.engine.request_fields import check_fresh
from voicedesk.engine.session_limits import SessionLimits

SENT_AT = 1796200000.5
CASES = [
    ("request_id", "r-18"),
    ("request_id", 7),
    ("request_id", 7.5),
    ("request_id", True),
    ("request_id", ["r"]),
    ("request_id", "x" * 201),
    ("request_timestamp", SENT_AT),
    ("request_timestamp", 1796200000),
    ("request_timestamp", SENT_AT * 1000),  # milliseconds: the WebSocket used to take them as a fresh request
    ("request_timestamp", 0),
    ("request_timestamp", -5),
    ("request_timestamp", "yesterday"),
    ("request_timestamp", True),
    ("sample_rate", 16000),
    ("sample_rate", 16000.0),
    ("sample_rate", 16000.5),
    ("sample_rate", "16000"),
    ("sample_rate", True),
    ("speed", 1.25),
    ("speed", "fast"),
    ("speed", False),
]


def _websocket(field: str, value: object) -> tuple[str, object]:
    try:
        request = decode_command(json.dumps({"text": "Hi.", field: value}))
    except ProtocolError as exc:
        return "refused", exc.code
    assert isinstance(request, SynthesizeRequest)
    return "accepted", getattr(request, field)


def _http(field: str, value: object) -> tuple[str, object]:
    try:
        request = parse_invocation(json.dumps({"text": "Hi.", field: value}).encode(), SessionLimits())
    except VoicedeskError as exc:
        return "refused", exc.code
    return "accepted", getattr(request, field)


@pytest.mark.parametrize(("field", "value"), CASES, ids=[f"{f}={str(v)[:20]}" for f, v in CASES])
def test_websocket_and_http_agree_on_every_request_field(field, value):
    assert _websocket(field, value) == _http(field, value)


def test_a_millisecond_timestamp_is_refused_with_advice_on_both():
    with pytest.raises(ProtocolError, match=r"looks like milliseconds; send epoch seconds"):
        decode_command(json.dumps({"text": "Hi.", "request_timestamp": SENT_AT * 1000}))
    with pytest.raises(VoicedeskError, match=r"looks like milliseconds; send epoch seconds"):
        parse_invocation(json.dumps({"text": "Hi.", "request_timestamp": SENT_AT * 1000}).encode(), SessionLimits())


def test_staleness_is_measured_from_the_send_time():
    check_fresh(SENT_AT, SENT_AT + 56, 56)
    check_fresh(None, SENT_AT + 1000, 56)
    with pytest.raises(VoicedeskError, match=r"sent 57.0 s ago") as refused:
        check_fresh(SENT_AT, SENT_AT + 57, 56)
    assert refused.value.code == ErrorCode.REQUEST_STALE
