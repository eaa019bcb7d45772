"""The wire codec: every client message both ways, frame kinds, malformed input, the AWS sample's flow."""

from __future__ import annotations

import json

import pytest

from voicedesk.engine.errors import WIRE_CODES, ErrorCode, LocalErrorCode
from voicedesk.engine.events import (
    Audio,
    Cancelled,
    Closed,
    Error,
    Flushed,
    RequestFinished,
    RequestStarted,
    SentenceFinished,
    SentenceStarted,
    WordTiming,
)
from voicedesk.engine.protocol import (
    Cancel,
    ClientProtocol,
    Close,
    Configure,
    Flush,
    ProtocolError,
    SendText,
    ServerProtocol,
    SynthesizeRequest,
    decode_command,
    encode_command,
)

COMMANDS = [
    SynthesizeRequest("Hello there.", voice="af_heart", speed=1.2, request_id="r1"),
    SynthesizeRequest("Hi."),
    SendText("Hello, wor"),
    Flush(),
    Flush("batch-7"),
    Cancel(),
    Configure(voice="am_adam"),
    Configure(speed=0.8),
    Configure(max_buffer_delay_ms=400),
    Close(),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: type(c).__name__)
def test_every_command_round_trips_as_text_and_as_binary_frame(command):
    frame = encode_command(command)
    assert decode_command(frame) == command
    # SageMaker delivers request parts as binary frames unless the client set DataType=UTF8.
    assert decode_command(frame.encode("utf-8")) == command


def test_sample_client_request_has_no_type_field():
    body = json.loads(encode_command(SynthesizeRequest("Hello.", voice="af_heart", request_id="x")))
    assert body == {"text": "Hello.", "voice": "af_heart", "request_id": "x"}


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ("{not json", ErrorCode.BAD_JSON),
        (b"\xff\xfe{}", ErrorCode.BAD_JSON),
        ("[1, 2]", ErrorCode.BAD_MESSAGE),
        ('{"type": "dance"}', ErrorCode.UNKNOWN_TYPE),
        ('{"type": "text"}', ErrorCode.BAD_MESSAGE),
        ('{"type": "text", "text": 5}', ErrorCode.BAD_MESSAGE),
        ('{"voice": "af_heart"}', ErrorCode.BAD_MESSAGE),
        ('{"text": "hi", "speed": "fast"}', ErrorCode.BAD_SPEED),
        ('{"text": "hi", "speed": true}', ErrorCode.BAD_SPEED),
        ('{"type": "config", "voice": 3}', ErrorCode.BAD_MESSAGE),
        ('{"type": "config", "max_buffer_delay_ms": "5"}', ErrorCode.BAD_MESSAGE),
        # Hostile input: nothing of it may become an `internal` error or echo a huge value back.
        ('{"text": "hi", "speed": ' + "9" * 400 + "}", ErrorCode.BAD_SPEED),
        ('{"text": "hi", "speed": ' + "9" * 5000 + "}", ErrorCode.BAD_JSON),
        ("[" * 100_000 + "]" * 100_000, ErrorCode.BAD_JSON),
        ('{"a": ' * 50_000 + "1" + "}" * 50_000, ErrorCode.BAD_JSON),
        ('{"text": "hi", "request_id": "' + "x" * 300 + '"}', ErrorCode.BAD_MESSAGE),
        ('{"text": "hi", "request_id": {"a": 1}}', ErrorCode.BAD_MESSAGE),
        ('{"text": "hi", "voice": "' + "v" * 5000 + '"}', ErrorCode.BAD_MESSAGE),
        ('{"type": "' + "t" * 5000 + '"}', ErrorCode.UNKNOWN_TYPE),
    ],
    ids=lambda value: value[:40] if isinstance(value, str) else None,
)
def test_malformed_frames_raise_a_structured_error(frame, code):
    with pytest.raises(ProtocolError) as caught:
        decode_command(frame, max_frame_bytes=10**6)
    assert caught.value.code == code
    assert 10 < len(caught.value.message) < 240
    assert caught.value.to_event().code == code


def test_oversized_frame_is_refused_before_parsing():
    frame = json.dumps({"type": "text", "text": "a" * 2000})
    with pytest.raises(ProtocolError) as caught:
        decode_command(frame, max_frame_bytes=1000)
    assert caught.value.code == ErrorCode.FRAME_TOO_LARGE
    assert "1,000" in caught.value.message


def test_request_id_survives_into_errors_of_bad_requests():
    with pytest.raises(ProtocolError) as caught:
        decode_command('{"text": 1, "request_id": "abc"}')
    assert caught.value.request_id == "abc"


def _decode_all(frames):
    return [json.loads(f) if isinstance(f, str) else f for f in frames]


def test_server_answers_a_whole_request_like_the_aws_sample():
    server = ServerProtocol()
    request = server.receive('{"text": "Hello there. Bye now.", "request_id": "r1"}')
    assert request == SynthesizeRequest("Hello there. Bye now.", request_id="r1")
    pcm = b"\x01\x00" * 2400  # 0.1 s
    out = []
    for event in [
        RequestStarted("r1"),
        SentenceStarted(0, "Hello there."),
        Audio(0, pcm),
        SentenceFinished(0, 0.1),
        SentenceStarted(1, "Bye now."),
        Audio(1, pcm),
        SentenceFinished(1, 0.1),
        RequestFinished("r1", 0.2, 0.5),
        RequestFinished("r2", 0.05, 0.7, cancelled=True),
    ]:
        out.extend(server.send(event))
    frames = _decode_all(out)
    kinds = [f["type"] if isinstance(f, dict) else "audio" for f in frames]
    assert kinds == [
        "synthesis_start",
        "sentence_start",
        "audio",
        "sentence_end",
        "sentence_start",
        "audio",
        "sentence_end",
        "synthesis_complete",
        "synthesis_complete",
    ]
    assert frames[0]["request_id"] == "r1"
    assert frames[-2] == {"type": "synthesis_complete", "request_id": "r1", "total_duration_s": 0.2, "elapsed_s": 0.5}
    assert frames[-1]["cancelled"] is True and frames[-1]["request_id"] == "r2"


def test_streaming_flush_and_control_events_encode_as_documented():
    server = ServerProtocol()
    frames = _decode_all(
        server.send(Flushed(3, "b1"))
        + server.send(Flushed(4, "b2", cancelled=True))
        + server.send(Cancelled(4))
        + server.send(Error(ErrorCode.UNKNOWN_VOICE, "no such voice", seq=2))
        + server.send(Closed())
    )
    assert frames == [
        {"type": "flushed", "last_seq": 3, "request_id": "b1"},
        {"type": "flushed", "last_seq": 4, "request_id": "b2", "cancelled": True},
        {"type": "cancelled", "last_seq": 4},
        {"type": "error", "code": "unknown_voice", "message": "no such voice", "request_id": None, "seq": 2},
        {"type": "closed", "reason": "closed"},
    ]


def test_client_decodes_what_the_server_encodes():
    server, client = ServerProtocol(), ClientProtocol()
    words = (WordTiming("Hello", 0.0, 0.25), WordTiming("there", 0.25, 0.6))
    pcm = b"\x10\x00" * 100
    sent = [
        SentenceStarted(5, "Hello there."),
        Audio(5, pcm),
        SentenceFinished(5, 0.6, words, 0.05),
        Flushed(5, None),
        RequestStarted("r9"),
        RequestFinished("r9", 0.6, 1.25),
        Flushed(6, "f", cancelled=True),
        Cancelled(5),
        Error(ErrorCode.BUFFER_FULL, "full"),
        Closed("closed"),
    ]
    received = []
    for event in sent:
        for frame in server.send(event):
            received.extend(client.receive(frame))
    assert received == sent
    assert client.bytes_received == server.bytes_sent


def test_client_reports_garbage_from_the_server_as_the_servers_fault_instead_of_crashing():
    client = ClientProtocol()
    for frame in ["not json", '{"type": "sentence_start"}', "[" * 100_000, '{"type": "sentence_end", "seq": 1e999}']:
        (error,) = client.receive(frame)
        assert error.code == LocalErrorCode.SERVER_PROTOCOL, frame
        assert error.code not in WIRE_CODES
    assert client.receive('{"type": "something_new"}') == []
