"""Building a headless console for tests: the real Announcer (queue, MQTT bridge, HTTP endpoint, controller,
player) on the paced stand-in synthesizer behind a real LocalEngine (a tone per word, at a settable speed), so a
test of priorities does not wait for the random-weight Kokoro on a shared CPU."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Callable

import numpy as np

from voicedesk.app.console.announcement import Report
from voicedesk.app.console.core import Policy
from voicedesk.app.house.announcer import Announcer, AnnouncerConfig
from voicedesk.app.house.inputs import HouseInputs
from voicedesk.app.house.mqtt import MqttSettings
from voicedesk.app.lab.paced_synth import PacedSynthesizer
from voicedesk.engine.api import Engine
from voicedesk.engine.audio import pcm16_to_float
from voicedesk.engine.engine_spec import EngineSpec
from voicedesk.engine.events import Audio, Closed, SessionConfig

_consoles = itertools.count(1)


def paced_opener(synthesizer: PacedSynthesizer):
    async def opener(spec: EngineSpec):
        from voicedesk.engine.local import LocalEngine

        return LocalEngine(synthesizer)

    return opener


@contextlib.asynccontextmanager
async def running_console(
    broker_port: int | None,
    realtime_factor: float = 20.0,
    audio: bool = False,
    policy: Policy | None = None,
    **config: object,
) -> AsyncIterator[Announcer]:
    number = next(_consoles)
    opener = config.pop("opener", None) or paced_opener(PacedSynthesizer(realtime_factor))
    engine = config.pop("engine", None) or EngineSpec("local")
    mqtt = config.pop("mqtt", None)  # MqttSettings of the test's own (e.g. as the announcer's options make them)
    if mqtt is None and broker_port is not None:
        mqtt = MqttSettings("127.0.0.1", broker_port, base=f"test/console{number}", node_id=f"console{number}")
    inputs = {key: config.pop(key) for key in ("http_port", "http_token", "chimes", "loudness") if key in config}
    inputs.setdefault("loudness", False)
    house = Announcer(
        AnnouncerConfig(
            HouseInputs(mqtt, policy=policy or Policy(), **inputs),  # type: ignore[arg-type]
            engine=engine,
            voice=SessionConfig("af_heart", max_buffer_delay_ms=0),
            audio=audio,
            opener=opener,  # type: ignore[arg-type]
            **config,  # type: ignore[arg-type]
        )
    )
    house.reports = []  # type: ignore[attr-defined]
    house.runner.reports.append(house.reports.append)  # type: ignore[attr-defined]
    await house.start()
    try:
        if house.mqtt is not None:
            await asyncio.wait_for(house.mqtt.connected.wait(), 20)
        yield house
    finally:
        await house.aclose()


async def until(condition: Callable[[], object], within_s: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    while not condition():
        if loop.time() > deadline:
            raise TimeoutError("condition not met in time")
        await asyncio.sleep(0.02)


def outcomes(house: Announcer) -> list[Report]:
    return house.reports  # type: ignore[attr-defined]


async def synthesize(engine: Engine, voice: str, text: str) -> np.ndarray:
    """``text`` said in ``voice`` on its own session, as float samples."""
    session = await engine.open_session(SessionConfig(voice=voice, max_buffer_delay_ms=0))
    parts: list[bytes] = []

    async def send() -> None:
        await session.send_text(text)
        await session.close()  # says everything, then the session ends with Closed

    sender = asyncio.ensure_future(send())
    try:
        async for event in session.events():
            if isinstance(event, Audio):
                parts.append(event.pcm)
            elif isinstance(event, Closed):
                break
        await sender
    finally:
        sender.cancel()
        await session.aclose()
    return pcm16_to_float(b"".join(parts))
