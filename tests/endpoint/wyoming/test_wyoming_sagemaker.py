"""``voicedesk wyoming --engine sagemaker NAME``: Home Assistant's client speaking through a SageMaker endpoint.

Every byte takes the real path: the ``wyoming`` client → the Wyoming server → the HTTP/2 SageMaker SDK (SigV4,
event stream, TLS) → the local SageMaker stand-in → the real container → Kokoro (random weights).
"""

from __future__ import annotations

import pytest
from wyoming.info import Describe, Info
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeVoice

from tests.endpoint.wyoming.conftest import client_of, kinds, read_until
from tests.engine.clients.test_sagemaker_engine import spec_for
from tests.support.fake_hf_cache import FAKE_VOICES
from tests.support.net import free_port
from tests.support.stand_in import StandInThread
from voicedesk.endpoint.wyoming.cli import plan_from_args, start_service
from voicedesk.endpoint.wyoming.server import WyomingTtsServer
from voicedesk.engine.commands import build_parser


@pytest.mark.slow
@pytest.mark.usefixtures("aws_env")
async def test_a_wyoming_client_speaks_through_a_sagemaker_endpoint(stand_in: StandInThread) -> None:
    plan = plan_from_args(build_parser().parse_args(["wyoming", "--port", str(free_port()), "--no-zeroconf"]))
    service = await start_service(plan, spec_for(stand_in))
    try:
        server = service.server
        assert isinstance(server, WyomingTtsServer)
        async with client_of(server) as client:
            await client.write_event(Describe().event())
            [info_event] = await read_until(client, "info")
            program = Info.from_event(info_event).tts[0]
            assert program.supports_synthesize_streaming and "sagemaker" in (program.description or "")
            # Every Kokoro voice was asked about; the endpoint has these three.
            assert sorted(v.name for v in program.voices) == sorted(FAKE_VOICES)

            voice = SynthesizeVoice(name="bf_emma")
            await client.write_event(SynthesizeStart(voice=voice).event())
            for piece in ("Good morning", " to you. ", "See you soon."):
                await client.write_event(SynthesizeChunk(piece).event())
            await client.write_event(Synthesize(text="Good morning to you. See you soon.", voice=voice).event())
            await client.write_event(SynthesizeStop().event())
            events = await read_until(client, "synthesize-stopped")
            assert kinds(events)[0] == "audio-start" and kinds(events)[-2:] == ["audio-stop", "synthesize-stopped"]
            assert sum(len(e.payload or b"") for e in events if e.type == "audio-chunk") > 0
        assert server.sessions_opened == 1
    finally:
        await service.aclose()
