"""An agent streaming one word per ``send_text`` as fast as it can, through our own clients to a real server (the
test-only fast synthesizer behind uvicorn): every word spoken, in order, ``flushed`` answered, no error; the
client's outbox joined the words queued behind a send in flight (fewer frames, the same text).

Over the WebSocket engine directly, and over the SageMaker engine (the real HTTP/2 SDK) through the stand-in.
"""

from __future__ import annotations

from tests.support.fast_synth import start_fast_server
from tests.support.stand_in import ENDPOINT, REGION, TEST_KEY_ID, TEST_SECRET, collect_until, is_closed, is_flushed
from voicedesk.app.lab.paced_synth import PacedSynthesizer
from voicedesk.app.lab.sagemaker_local.auth import CredentialCheck
from voicedesk.engine.clients.sagemaker import SageMakerEngine
from voicedesk.engine.clients.websocket import WebSocketEngine, WebSocketSettings
from voicedesk.engine.engine_spec import EngineSpec
from voicedesk.engine.events import Audio, Error
from voicedesk.engine.protocol import BIDI_PATH

WORDS = [f"w{i}" for i in range(1_500)]
FLOW = {"frames_per_s": 300.0, "frame_burst": 100}


async def _stream_words(engine) -> tuple[object, list]:  # type: ignore[no-untyped-def]
    session = await engine.open_session()
    for word in WORDS:
        await session.send_text(word + " ")
    await session.flush("end")
    got = await collect_until(session.events(), is_flushed("end"))
    await session.close()
    await collect_until(session.events(), is_closed)
    return session.channel, got.events


def _check(synthesizer: PacedSynthesizer, channel, events: list) -> None:  # type: ignore[no-untyped-def]
    assert not [e for e in events if isinstance(e, Error)]
    assert any(isinstance(e, Audio) for e in events)
    assert " ".join(call.text for call in synthesizer.calls).split() == WORDS
    outbox = channel.outbox
    assert outbox.frames_queued == len(WORDS) + 2  # the words, flush, close
    assert outbox.frames_sent < outbox.frames_queued  # fragments queued behind a send were joined


async def test_our_websocket_client_streaming_1500_words_loses_none() -> None:
    synthesizer = PacedSynthesizer(2_000.0)
    running = start_fast_server(synthesizer, **FLOW)
    try:
        engine = WebSocketEngine(WebSocketSettings(url=running.ws_url + BIDI_PATH))
        channel, events = await _stream_words(engine)
    finally:
        running.stop()
    _check(synthesizer, channel, events)


async def test_our_sagemaker_client_streaming_1500_words_through_the_stand_in_loses_none(make_stand_in) -> None:
    synthesizer = PacedSynthesizer(2_000.0)
    running = start_fast_server(synthesizer, **FLOW)
    try:
        stand_in = make_stand_in(running.http_url, credentials=CredentialCheck({TEST_KEY_ID: TEST_SECRET}))
        options = {"endpoint_url": stand_in.url, "ca_file": str(stand_in.ca_file)}
        spec = EngineSpec(kind="sagemaker", target=ENDPOINT, region=REGION, options=options)
        engine = SageMakerEngine.from_spec(spec)
        try:
            channel, events = await _stream_words(engine)
        finally:
            await engine.aclose()
    finally:
        running.stop()
    _check(synthesizer, channel, events)
