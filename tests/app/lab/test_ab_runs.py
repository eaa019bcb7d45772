"""The app's A/B runner without Qt, on the real local engine (random weights): runs alternate, its figures are the
bench's for the same recorded timelines, a cancel stops at once and keeps what was measured, and the app's own
engine stays open afterwards."""

from __future__ import annotations

import asyncio

import pytest

from voicedesk.app.lab.ab import ab_summary
from voicedesk.app.lab.ab_runs import AbPhase, AbProgress, AbRequest, AbRunner
from voicedesk.app.lab.runs import Run
from voicedesk.app.lab.table import ab_stage_table, format_lab
from voicedesk.engine.errors import VoicedeskError
from voicedesk.engine.local import LocalEngine
from voicedesk.engine.measure.recorder import UtteranceRecord
from voicedesk.engine.measure.timeline import UtteranceTimeline

TEXT = "Lights off now."


def runs_from(document: dict) -> list[Run]:
    """The runs as a later reader gets them: from the exported report's timelines alone."""
    (scenario,) = document["scenarios"]
    return [
        Run(
            run["group"],
            run["repeat"],
            UtteranceRecord(
                UtteranceTimeline.from_dict(run["timeline"]),
                {int(k): v for k, v in run["segments"].items()},
                tuple(run["errors"]),
                tuple(run["notes"]),
                (),
            ),
        )
        for run in scenario["runs"]
    ]


async def test_runs_alternate_and_show_the_numbers_bench_ab_prints(synthesizer):
    engine = LocalEngine(synthesizer)
    seen: list[AbProgress] = []

    async def open_local() -> LocalEngine:
        return engine

    runner = AbRunner(open_local, None, seen.append)
    runner.start(AbRequest(TEXT, runs=1, engine_a="Local"))
    await runner.wait()
    final = runner.progress
    assert final.phase is AbPhase.DONE and (final.done, final.total) == (2, 2)
    assert [p.done for p in seen if p.summary is not None][-1] == 2
    document = runner.document()
    (scenario,) = document["scenarios"]
    assert [run["group"] for run in scenario["runs"]] == ["A", "B"]  # A, then B (A again: an A/A run)
    assert document["engine"] == "Local" and scenario["summary"]["engines"] == {"A": "Local", "B": "Local again"}
    # The same recorded timelines, summarized again by the bench's code, give the very cells the app shows …
    again = ab_summary(runs_from(document), {"A": "Local", "B": "Local again"})
    assert ab_stage_table(again) == ab_stage_table(final.summary)
    assert again["groups"]["A"]["time_to_first_audio_s"]["p90"] is not None
    # … and `voicedesk bench ab` prints each of those rows in its table.
    printed = format_lab(document).splitlines()
    for label, *cells in ab_stage_table(final.summary)[1:]:
        line = next(line.strip() for line in printed if line.strip().startswith(label))
        assert line[len(label) :].split() == cells
    await engine.aclose()


async def test_cancel_stops_at_once_and_keeps_what_was_measured(synthesizer):
    engine = LocalEngine(synthesizer)
    first_done = asyncio.Event()

    def heard(progress: AbProgress) -> None:
        if progress.done >= 1:
            first_done.set()

    async def open_local() -> LocalEngine:
        return engine

    runner = AbRunner(open_local, None, heard)
    runner.start(AbRequest(TEXT, runs=3, engine_a="Local"))
    await asyncio.wait_for(first_done.wait(), 300)
    runner.cancel()
    await runner.wait()
    progress = runner.progress
    assert progress.phase is AbPhase.CANCELLED
    assert 1 <= progress.done < 6 and progress.summary is not None
    assert runner.document()["scenarios"][0]["runs"]  # exportable as it stands
    # The app's engine was shared, not owned: it still speaks.
    session = await engine.open_session()
    await session.send_text("Still here.")
    await session.flush("check")
    async for event in session.events():
        if type(event).__name__ == "Flushed":
            break
    await session.aclose()
    await engine.aclose()


def test_bad_requests_say_what_to_change():
    async def never():  # pragma: no cover - never opened
        raise AssertionError

    runner = AbRunner(never, None, lambda _p: None)
    with pytest.raises(VoicedeskError, match="Type the text"):
        runner.start(AbRequest("  ", 3, "Local"))
    with pytest.raises(VoicedeskError, match="Runs per engine must be 1 to 100"):
        runner.start(AbRequest("Hi.", 0, "Local"))
    assert runner.progress.phase is AbPhase.IDLE
