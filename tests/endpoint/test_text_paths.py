"""One sentence, five paths, the same phonemes: the local engine, `serve` over WebSocket, the SageMaker stand-in,
the OpenAI route (official ``openai`` client) and Wyoming (the ``wyoming`` library's client), each with the
session's pronunciation lexicon applied.

What the model received is read two ways, both real: ``sentence_end.phonemes`` (asked for with ``config``
``phonemes: true``; the synthesizer's own ``SynthesisResult.phonemes``), and, for the routes that carry no such
field (OpenAI, Wyoming), the server's synthesizer seen through ``Recording``, which keeps what the real
synthesizer returned and changes nothing.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import openai
import pytest
from wyoming.tts import Synthesize, SynthesizeVoice

from tests.endpoint.wyoming.conftest import client_of, read_until, running_wyoming
from tests.support.endpoint import GUARD_S, server_settings
from tests.support.stand_in import ENDPOINT, REGION, collect_until, is_flushed
from voicedesk.endpoint.runner import ServerThread
from voicedesk.engine.engine_spec import EngineSpec
from voicedesk.engine.events import SentenceFinished, SessionConfig
from voicedesk.engine.factory import open_engine
from voicedesk.engine.local import LocalEngine
from voicedesk.engine.text.frontend.lexicon import parse_lexicon
from voicedesk.engine.text.frontend.settings import TextSettings

pytestmark = pytest.mark.slow  # six syntheses on the random-weight model, a server, the stand-in

SENTENCE = "Please tell Nguyen the lights are off."
LEXICON = [{"word": "Nguyen", "phonemes": "wˈɪn"}]
CONFIG = SessionConfig(voice="af_heart", text=TextSettings(lexicon=parse_lexicon(LEXICON)), report_phonemes=True)


class Recording:
    """The real synthesizer, with a note of what each call gave the model (``SynthesisResult.phonemes``)."""

    def __init__(self, inner: object) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self.phonemes: list[str] = []

    def synthesize(self, text, voice, speed, should_stop=None, **settings):  # type: ignore[no-untyped-def]
        result = self._inner.synthesize(text, voice, speed, should_stop, **settings)  # type: ignore[attr-defined]
        with self._lock:
            self.phonemes.append(result.phonemes)
        return result

    def take(self) -> list[str]:
        with self._lock:
            taken, self.phonemes = self.phonemes, []
        return taken

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


@pytest.fixture(scope="module")
def recording(synthesizer) -> Recording:
    return Recording(synthesizer)


@pytest.fixture(scope="module")
def recorded_server(recording: Recording) -> Iterator[ServerThread]:
    from voicedesk.endpoint.server import create_app

    with ServerThread(create_app(recording, server_settings(idle_timeout_s=120))) as running:  # type: ignore[arg-type]
        yield running


async def spoken_phonemes(engine, config: SessionConfig = CONFIG) -> list[str]:  # type: ignore[no-untyped-def]
    """The phonemes each sentence's ``sentence_end`` reports, through the engine's own session."""
    session = await engine.open_session(config)
    try:
        await session.send_text(SENTENCE)
        await session.flush("f")
        got = await collect_until(session.events(), is_flushed("f"))
    finally:
        await session.aclose()
    return [e.phonemes for e in got.of(SentenceFinished)]


async def test_one_sentence_gives_the_same_phonemes_on_every_path(
    synthesizer, recording: Recording, recorded_server: ServerThread, make_stand_in, aws_env
) -> None:
    local = LocalEngine(synthesizer)
    try:
        plain = await spoken_phonemes(local, SessionConfig(voice="af_heart", report_phonemes=True))
        expected = await spoken_phonemes(local)
    finally:
        await local.aclose()
    assert len(expected) == 1 and "wˈɪn" in expected[0], expected
    assert plain != expected  # the entry changed what the model received

    recording.take()
    websocket = await open_engine(EngineSpec(kind="websocket", target=recorded_server.ws_url))
    try:
        assert await spoken_phonemes(websocket) == expected
    finally:
        await websocket.aclose()
    assert recording.take() == expected  # what the server's synthesizer made is what sentence_end said

    stand_in = make_stand_in(recorded_server.http_url)
    options = {"endpoint_url": stand_in.url, "ca_file": str(stand_in.ca_file)}
    sagemaker = await open_engine(EngineSpec(kind="sagemaker", target=ENDPOINT, options=options, region=REGION))
    try:
        assert await spoken_phonemes(sagemaker) == expected
    finally:
        await sagemaker.aclose()
    assert recording.take() == expected

    client = openai.OpenAI(base_url=recorded_server.http_url + "/v1", api_key="unused", max_retries=0, timeout=GUARD_S)
    speech = await asyncio.to_thread(
        client.audio.speech.create,
        model="kokoro",
        voice="af_heart",
        input=SENTENCE,
        response_format="pcm",
        extra_body={"lexicon": LEXICON},
    )
    assert len(speech.content) > 0
    assert recording.take() == expected

    wyoming_engine = LocalEngine(recording)  # type: ignore[arg-type]
    try:
        async with running_wyoming(wyoming_engine, lexicon=parse_lexicon(LEXICON)) as server:
            recording.take()  # the voice probe's own sentences
            async with client_of(server) as wyoming_client:
                await wyoming_client.write_event(Synthesize(SENTENCE, voice=SynthesizeVoice("af_heart")).event())
                await read_until(wyoming_client, "audio-stop")
    finally:
        await wyoming_engine.aclose()
    assert recording.take() == expected


async def test_a_bad_entry_is_refused_on_the_wire_naming_it(recorded_server: ServerThread) -> None:
    from websockets.asyncio.client import connect

    from voicedesk.engine.protocol import BIDI_PATH

    async with connect(recorded_server.ws_url + BIDI_PATH) as ws:
        await ws.send('{"type": "config", "lexicon": [{"word": "Siobhan", "phonemes": "ʃɪvˈɔn"}, {"word": "Aoife"}]}')
        reply = await asyncio.wait_for(ws.recv(), GUARD_S)
    assert '"code":"bad_lexicon"' in reply and "lexicon entry 1 ('Aoife')" in reply
    client = openai.OpenAI(base_url=recorded_server.http_url + "/v1", api_key="unused", max_retries=0, timeout=GUARD_S)
    with pytest.raises(openai.BadRequestError) as caught:
        await asyncio.to_thread(
            client.audio.speech.create,
            model="kokoro",
            voice="af_heart",
            input=SENTENCE,
            extra_body={"lexicon": [{"word": "Siobhan", "phonemes": "ʃ1"}]},
        )
    assert caught.value.code == "bad_lexicon" and "lexicon entry 0 ('Siobhan')" in str(caught.value)
