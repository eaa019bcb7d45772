"""The console runner on a real controller and a real local engine (the paced stand-in, no sound device): one
announcement at a time, every stop as the core says, and a cut that arrives while an announcement is starting."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from tests.app.house.helpers import paced_opener, until
from voicedesk.app.console.announcement import Outcome, Priority, Report, Request, Source
from voicedesk.app.console.runner import ConsoleRunner
from voicedesk.app.controller import SpeechController
from voicedesk.app.engines import EngineHub
from voicedesk.app.house.announcer import HeadlessListener
from voicedesk.app.lab.paced_synth import PacedSynthesizer
from voicedesk.engine.engine_spec import EngineSpec
from voicedesk.engine.events import SessionConfig


@contextlib.asynccontextmanager
async def running(realtime_factor: float = 1.0, before=None) -> AsyncIterator[tuple[ConsoleRunner, list[Report]]]:
    listener = HeadlessListener()
    controller = SpeechController(
        EngineHub(listener.engine_status, paced_opener(PacedSynthesizer(realtime_factor))), listener
    )
    controller.voice = SessionConfig("af_heart", max_buffer_delay_ms=0)
    await controller.use_engine(EngineSpec("local"))
    runner = ConsoleRunner(controller, before=before)
    reports: list[Report] = []
    runner.reports.append(reports.append)
    runner.start()
    try:
        yield runner, reports
    finally:
        await runner.aclose()
        await controller.aclose()


def typed(text: str) -> Request:
    return Request(text, source=Source.WINDOW, origin="Typed")


def said(runner: ConsoleRunner) -> list[tuple[str, str]]:
    return [(turn.text, turn.state.value) for turn in runner.controller.turns]


async def test_one_at_a_time_the_person_s_stop_holds_and_resume_carries_on():
    async with running() as (runner, reports):
        runner.submit(typed("One two three."))
        runner.submit(typed("Two."))
        await until(lambda: runner.controller.run is not None)
        assert len(runner.core) == 1  # "Two." waits its turn
        await until(lambda: len(reports) == 1)
        await until(lambda: runner.controller.run is not None and runner.controller.run.turn.text == "Two.")
        runner.submit(typed("Three."))
        await runner.stop(hold=True)  # cuts "Two."; "Three." stays, held
        await until(lambda: len(reports) == 2)
        assert runner.core.paused and len(runner.core) == 1 and runner.state().state == "idle"
        runner.resume()
        await until(lambda: len(reports) == 3)
        runner.submit(typed("Four five six seven."))
        await until(lambda: runner.controller.run is not None and runner.controller.run.turn.text.startswith("Four"))
        runner.submit(typed("Right now."), first=True)  # the person's interruption: cut on purpose, not resumed
        await until(lambda: len(reports) == 5)
    assert [(r.outcome, r.reason) for r in reports] == [
        (Outcome.SPOKEN, ""),
        (Outcome.INTERRUPTED, "stopped"),
        (Outcome.SPOKEN, ""),
        (Outcome.INTERRUPTED, "the person chose another announcement"),
        (Outcome.SPOKEN, ""),
    ]
    assert [text for text, _ in said(runner)] == [
        "One two three.",
        "Two.",
        "Three.",
        "Four five six seven.",
        "Right now.",
    ]


async def test_the_house_s_stop_carries_on_with_what_waits():
    async with running() as (runner, reports):
        runner.submit(Request("One two three four.", id="a", source=Source.MQTT))
        runner.submit(Request("Next.", id="b", source=Source.HTTP))
        await until(lambda: runner.controller.run is not None)
        await runner.stop()
        await until(lambda: len(reports) == 2)
    assert [(r.id, r.outcome, r.reason) for r in reports] == [
        ("a", Outcome.INTERRUPTED, "stopped"),
        ("b", Outcome.SPOKEN, ""),
    ]


async def test_an_urgent_one_arriving_while_the_current_one_starts_cuts_it_once_started_and_it_resumes_whole():
    """Starting takes time (the output, the engine); an urgent one that arrives meanwhile finds nothing to stop yet,
    so the runner stops the current one as soon as its turn exists; nothing of it was heard, so it is said again
    from its start after the urgent one: never reported interrupted unheard."""
    release, starting = asyncio.Event(), asyncio.Event()

    async def before(item) -> None:
        if item.id == "slow":
            starting.set()
            await release.wait()

    async with running(20.0, before) as (runner, reports):
        runner.submit(Request("Only one sentence.", id="slow", source=Source.HTTP))
        await asyncio.wait_for(starting.wait(), 30)
        runner.submit(Request("Fire!", Priority.URGENT, id="urgent", source=Source.MQTT))
        release.set()
        await until(lambda: len(reports) == 2)
    assert [(r.id, r.outcome) for r in reports] == [("urgent", Outcome.SPOKEN), ("slow", Outcome.SPOKEN)], reports
    assert [text for text, _state in said(runner)][-2:] == ["Fire!", "Only one sentence."]
