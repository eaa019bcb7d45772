"""Building a headless console for tests: the real HouseConsole (queue, MQTT bridge, HTTP endpoint, controller,
player) on the paced stand-in synthesizer behind a real LocalEngine (a tone per word, at a settable speed), so a
test of priorities does not wait for the random-weight Kokoro on a shared CPU."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Callable

from voicedesk.app.house.console import HouseConfig, HouseConsole
from voicedesk.app.house.mqtt import MqttSettings
from voicedesk.app.house.queue import Policy, Report
from voicedesk.app.lab.paced_synth import PacedSynthesizer
from voicedesk.engine.engine_spec import EngineSpec
from voicedesk.engine.events import SessionConfig

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
) -> AsyncIterator[HouseConsole]:
    number = next(_consoles)
    opener = config.pop("opener", None) or paced_opener(PacedSynthesizer(realtime_factor))
    engine = config.pop("engine", None) or EngineSpec("local")
    mqtt = config.pop("mqtt", None)  # MqttSettings of the test's own (e.g. as the announcer's options make them)
    if mqtt is None and broker_port is not None:
        mqtt = MqttSettings("127.0.0.1", broker_port, base=f"test/console{number}", node_id=f"console{number}")
    house = HouseConsole(
        HouseConfig(
            engine=engine,
            voice=SessionConfig("af_heart", max_buffer_delay_ms=0),
            audio=audio,
            mqtt=mqtt,
            policy=policy or Policy(),
            loudness=False,
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


def outcomes(house: HouseConsole) -> list[Report]:
    return house.reports  # type: ignore[attr-defined]
