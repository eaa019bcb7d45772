"""The request fields mean the same on every transport: the WebSocket codec (and the session core behind it), the
HTTP parser and Wyoming get the same values and agree, field by field, on what they accept (and as what) and on the
error code of what they refuse; the WebSocket and HTTP on its message too (one home: engine/request_fields.py)."""

from __future__ import annotations

import json

import pytest
from wyoming.event import Event as WyomingEvent

from voicedesk.endpoint.speech.request import check_budget, parse_invocation
from voicedesk.endpoint.wyoming.catalog import VoiceCatalog
from voicedesk.endpoint.wyoming.conversation import PROGRAM_NAME, Reply, TtsConversation, build_info
from voicedesk.engine.errors import ErrorCode, VoicedeskError
from voicedesk.engine.events import Error, SessionConfig
from voicedesk.engine.limits import SessionLimits
from voicedesk.engine.protocol import ProtocolError, SynthesizeRequest, decode_command
from voicedesk.engine.request_fields import check_fresh
from voicedesk.engine.session import SessionCore
from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker

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
    ("speed", 9),
    ("voice", "af_heart"),
    ("voice", 5),
    ("voice", ""),
    ("voice", "af_heart:0.5," * 40),
]
LIMITS = SessionLimits()
TEXTS = ["Hi.", "", "   ", 5, None, ["Hi."], "x" * LIMITS.max_message_chars, "x" * (LIMITS.max_message_chars + 1)]
"""The text to speak, as every transport takes it (a whole request's ``text``; Wyoming's ``synthesize``)."""
WYOMING_VOICES = ["af_heart", 5, "", "af_heart:0.5," * 40]
CATALOG = VoiceCatalog.build(["af_heart"], "af_heart")


def _websocket(field: str, value: object) -> tuple[str, object]:
    """The codec, then the session core that takes the whole request (it checks the text and the speed)."""
    try:
        request = decode_command(json.dumps({"text": "Hi.", field: value}))
    except ProtocolError as exc:
        return "refused", exc.code, exc.message
    assert isinstance(request, SynthesizeRequest)
    core = SessionCore(IncrementalSentenceChunker(), SessionConfig(), LIMITS)
    events = core.synthesize(request.text, 0.0, request.voice, request.speed, request.request_id)
    if errors := [e for e in events if isinstance(e, Error)]:
        return "refused", errors[0].code, errors[0].message
    return "accepted", getattr(request, field)


def _http(field: str, value: object) -> tuple[str, object]:
    try:
        request = parse_invocation(json.dumps({"text": "Hi.", field: value}).encode(), LIMITS)
        check_budget(request, LIMITS)
    except VoicedeskError as exc:
        return "refused", exc.code, exc.message
    return "accepted", getattr(request, field)


def _wyoming(text: object, voice: object = None) -> tuple[str, object]:
    conversation = TtsConversation(build_info(CATALOG, "local", "1"), CATALOG, PROGRAM_NAME, LIMITS.max_message_chars)
    data: dict[str, object] = {} if text is None else {"text": text}
    if voice is not None:
        data["voice"] = {"name": voice}
    actions = conversation.client_event(WyomingEvent("synthesize", data))
    errors = [a.event for a in actions if isinstance(a, Reply) and a.event.type == "error"]
    return ("refused", errors[0].data["code"]) if errors else ("accepted", text if voice is None else voice)


@pytest.mark.parametrize(("field", "value"), CASES, ids=[f"{f}={str(v)[:20]}" for f, v in CASES])
def test_websocket_and_http_agree_on_every_request_field(field, value):
    assert _websocket(field, value) == _http(field, value)


@pytest.mark.parametrize("text", TEXTS, ids=lambda t: repr(t)[:20])
def test_websocket_http_and_wyoming_agree_on_the_text(text):
    assert _websocket("text", text) == _http("text", text)
    assert _websocket("text", text)[:2] == _wyoming(text)


@pytest.mark.parametrize("voice", WYOMING_VOICES, ids=lambda v: repr(v)[:20])
def test_websocket_http_and_wyoming_agree_on_the_voice(voice):
    websocket, http, wyoming = _websocket("voice", voice), _http("voice", voice), _wyoming("Hi.", voice)
    assert websocket == http and websocket[:2] == wyoming


def test_a_config_and_a_request_body_read_the_text_options_alike():
    """Any case, on both (the WebSocket's ``config`` took only lower case before)."""
    body = {"text": "Hi.", "markup": "Markdown", "urls": "SKIP", "emoji": "Name"}
    config = decode_command(json.dumps({"type": "config", **body}))
    assert config.text_change == parse_invocation(json.dumps(body).encode(), LIMITS).text_change
    assert (config.markup, config.urls, config.emoji) == ("markdown", "skip", "name")
    with pytest.raises(ProtocolError) as websocket:
        decode_command(json.dumps({"type": "config", "markup": "html"}))
    with pytest.raises(VoicedeskError) as http:
        parse_invocation(json.dumps({"text": "Hi.", "markup": "html"}).encode(), LIMITS)
    assert websocket.value.message == http.value.message
    assert websocket.value.message == "'markup' must be one of auto, plain, markdown, ssml; got 'html'."


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


@pytest.mark.parametrize(
    "text",
    ["9,876,543,210 " * 1_280, "🎉🎈🎂 " * 4_490],
    ids=["digits", "emoji"],
)
def test_the_compute_budget_is_counted_on_what_is_read_not_on_the_length(text):
    """About 17,900 characters of digits or emoji: under 20 minutes by their length (15 a second), far more as
    read ("nine billion, eight hundred seventy six million, …"; "party popper, balloon, …"): refused before any
    synthesis on every transport, as ``budget_exceeded``."""
    assert len(text) / 15 < LIMITS.max_request_audio_s  # the rule before let it through
    assert _websocket("text", text) == _http("text", text)
    assert _websocket("text", text)[:2] == _wyoming(text) == ("refused", ErrorCode.BUDGET_EXCEEDED)
    prose = "The living room lights are on and the heating is set to twenty one degrees. " * 200  # 15,200 chars
    assert _websocket("text", prose) == _http("text", prose) == ("accepted", prose)


def test_a_clients_value_is_named_as_json_writes_it():
    from voicedesk.engine.request_fields import describe

    assert [describe(v) for v in (None, True, False, 5, [1], {"a": 1})] == [
        "null",
        "true",
        "false",
        "5",
        "a JSON array",
        "a JSON object",
    ]
    with pytest.raises(ProtocolError, match=r"got true\.$"):
        decode_command(json.dumps({"text": True}))
