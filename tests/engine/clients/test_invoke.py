"""The whole-request path: boto3's real sagemaker-runtime client → the stand-in (HTTP/1.1 + TLS) → the container."""

from __future__ import annotations

import base64

import pytest

from tests.support.stand_in import ENDPOINT, REGION, StandInThread, abort_connections
from voicedesk.endpoint.runner import ServerThread
from voicedesk.engine.clients.invoke import SseEvent, SseSplitter, WholeRequestClient, pcm_from_wav
from voicedesk.engine.engine_spec import EngineSpec
from voicedesk.engine.errors import ErrorCode, VoicedeskError
from voicedesk.engine.events import BYTES_PER_SAMPLE, SAMPLE_RATE


def client_for(stand_in: StandInThread, name: str = ENDPOINT) -> WholeRequestClient:
    return WholeRequestClient(name, REGION, endpoint_url=stand_in.url, ca_bundle=str(stand_in.ca_file))


@pytest.fixture(autouse=True)
def close_clients(monkeypatch: pytest.MonkeyPatch):
    """Closes every client a test made, so no idle TLS connection outlives it."""
    made: list[WholeRequestClient] = []
    original = WholeRequestClient.__init__

    def tracking_init(self: WholeRequestClient, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)  # type: ignore[arg-type]
        made.append(self)

    monkeypatch.setattr(WholeRequestClient, "__init__", tracking_init)
    yield
    for client in made:
        client.close()


def test_sse_splitter_is_independent_of_part_boundaries() -> None:
    stream = (
        b'event: audio_stream_start\ndata: {"type": "audio_stream_start"}\n\n'
        b': a comment\r\nevent: audio_chunk\r\ndata: {"type": "audio_chunk", "audio": "AAA="}\r\n\r\n'
        b'data: {"type": "audio_stream_end", "duration_s": 1.5}\n\n'
    )
    expected = [
        SseEvent("audio_stream_start", {"type": "audio_stream_start"}),
        SseEvent("audio_chunk", {"type": "audio_chunk", "audio": "AAA="}),
        SseEvent("audio_stream_end", {"type": "audio_stream_end", "duration_s": 1.5}),
    ]
    for size in range(1, len(stream) + 1):
        splitter = SseSplitter()
        events = [e for i in range(0, len(stream), size) for e in splitter.feed(stream[i : i + size])]
        assert events == expected, f"parts of {size} bytes"
        assert splitter.pending == b""


def test_wav_through_invoke_endpoint(stand_in: StandInThread) -> None:
    speech = client_for(stand_in).synthesize("Hello there, whole request.", request_id="r1")
    assert speech.invoked_variant == "AllTraffic"
    assert speech.duration_s > 0.2
    assert len(speech.pcm) % BYTES_PER_SAMPLE == 0
    assert "invoke" in stand_in.config.calls


def test_sse_through_invoke_endpoint_with_response_stream(stand_in: StandInThread) -> None:
    client = client_for(stand_in)
    events = list(client.stream("One sentence here. And a second one.", request_id="r2"))
    names = [e.event for e in events]
    assert names[0] == "audio_stream_start" and names[-1] == "audio_stream_end"
    assert names.count("audio_chunk") >= 2 and "error" not in names
    pcm = b"".join(base64.b64decode(e.data["audio"]) for e in events if e.event == "audio_chunk")
    assert events[-1].data["duration_s"] == pytest.approx(len(pcm) / (BYTES_PER_SAMPLE * SAMPLE_RATE), abs=1e-3)
    assert "response-stream" in stand_in.config.calls


def test_printed_environment_is_enough_for_boto3(stand_in: StandInThread, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in stand_in.server.environment(REGION, with_dummy_credentials=False).items():
        monkeypatch.setenv(name, value)
    client = WholeRequestClient.from_spec(EngineSpec(kind="sagemaker", target=ENDPOINT))
    assert client.context.endpoint_url == stand_in.url
    assert client.synthesize_streamed("Short one.").duration_s > 0


def test_unknown_endpoint(stand_in: StandInThread) -> None:
    with pytest.raises(VoicedeskError, match=r"There is no endpoint 'nope' in us-east-1"):
        client_for(stand_in, "nope").synthesize("Hi.")


def test_bad_credentials(stand_in: StandInThread, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAUNKNOWNKEY000000")
    with pytest.raises(VoicedeskError, match="UnrecognizedClientException") as caught:
        client_for(stand_in).synthesize("Hi.")
    assert caught.value.code == ErrorCode.UNAUTHORIZED


def test_container_rejection_is_a_model_error_with_its_message(stand_in: StandInThread) -> None:
    with pytest.raises(VoicedeskError, match=r"failed with HTTP 400: .*speed") as caught:
        client_for(stand_in).synthesize("Too fast.", speed=99.0)
    assert "CloudWatch" in caught.value.message


def test_untrusted_certificate(stand_in: StandInThread) -> None:
    client = WholeRequestClient(ENDPOINT, REGION, endpoint_url=stand_in.url)
    with pytest.raises(VoicedeskError, match="does not trust"):
        client.synthesize("Hi.")


def test_container_dying_mid_stream(make_container, make_stand_in) -> None:
    crashing: ServerThread = make_container()
    client = client_for(make_stand_in(crashing.http_url))
    stream = client.stream("First part is heard. Second part never comes. Nor the third.")
    with pytest.raises(VoicedeskError, match=r"ended the stream with an error: .*stopped mid-response"):
        for event in stream:
            if event.event == "audio_chunk":
                abort_connections(crashing)


def test_pcm_from_wav_rejects_what_is_not_ours() -> None:
    with pytest.raises(VoicedeskError, match="not a WAV file"):
        pcm_from_wav(b"<html>gateway error</html>")
