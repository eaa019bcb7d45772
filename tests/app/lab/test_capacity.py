"""Capacity planning: the ramp's decisions on given p95s (pure), then the scenario against a real endpoint server on
127.0.0.1 (uvicorn, the container's app around the random-weight model) through the websocket engine, and
``bench server``, the alias of the concurrency and transport scenarios, through the command line.

No assertion on speed: the targets are chosen so that any machine lands on the same side of them (1 ms cannot be
met by any model; 10 000 s is met by every one).
"""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.app.lab.conftest import SEED
from voicedesk.app.lab.capacity import CapacityRamp, capacity_line
from voicedesk.app.lab.context import LabConfig, LabContext
from voicedesk.app.lab.lab import run_lab
from voicedesk.engine.commands import main
from voicedesk.engine.engine_spec import EngineSpec
from voicedesk.engine.factory import open_engine

pytestmark = pytest.mark.alone  # times it side by side (tests/support/parallel.py)


def ramp_through(target_s: float, max_sessions: int, p95_at: dict[int, float | None]) -> tuple[list[int], CapacityRamp]:
    ramp = CapacityRamp(target_s, max_sessions)
    visited = []
    while (n := ramp.next_level()) is not None:
        visited.append(n)
        ramp.record(n, p95_at[n])
    return visited, ramp


def test_the_ramp_doubles_until_the_target_is_passed_then_bisects():
    p95 = {n: 0.1 * n for n in range(1, 33)}  # p95 grows with load; the target 0.55 s holds up to 5 sessions
    visited, ramp = ramp_through(0.55, 32, p95)
    assert visited == [1, 2, 4, 8, 6, 5]
    assert (ramp.sessions_per_instance, ramp.limited_by) == (5, "target")


def test_the_ramp_stops_at_its_ceiling_and_says_so():
    visited, ramp = ramp_through(10.0, 5, {n: 0.1 for n in range(1, 6)})
    assert visited == [1, 2, 4, 5]
    assert (ramp.sessions_per_instance, ramp.limited_by) == (5, "max_sessions")


def test_one_session_missing_the_target_or_failing_gives_zero():
    for p95 in (0.9, None):  # too slow, or every request failed
        visited, ramp = ramp_through(0.5, 8, {1: p95})
        assert visited == [1] and ramp.sessions_per_instance == 0


def test_a_noisy_dip_above_a_failure_does_not_raise_the_answer():
    ramp = CapacityRamp(0.5, 16)
    for n, p95 in ((1, 0.1), (2, 0.2), (4, 0.6), (3, 0.7)):
        ramp.record(n, p95)
    ramp.record(8, 0.3)  # met, but above a level that missed: not counted
    assert ramp.bounds == (2, 3) and ramp.next_level() is None and ramp.sessions_per_instance == 2


def test_bad_targets_are_refused():
    with pytest.raises(ValueError, match="positive number of seconds"):
        CapacityRamp(0.0, 4)
    with pytest.raises(ValueError, match="at least 1"):
        CapacityRamp(0.5, 0)


@pytest.mark.slow
def test_capacity_on_a_real_endpoint_ramps_one_then_two_sessions(bench_container):
    spec = EngineSpec("websocket", bench_container.ws_url)

    async def open_ws():  # type: ignore[no-untyped-def]
        return await open_engine(spec)

    async def measure(target_s: float):  # type: ignore[no-untyped-def]
        config = LabConfig(text=SEED[1], repeat=1, target_ttfa_s=target_s, max_sessions=2)
        (result,) = await run_lab(LabContext(config, open_ws, spec.describe()), ["capacity"])
        return result

    generous = asyncio.run(measure(10_000.0))
    assert generous.skipped is None
    summary = generous.summary
    assert [row["sessions"] for row in summary["levels"]] == [1, 2]
    assert [row["arrival"] for row in summary["levels"]] == ["alone", "spread"]
    assert all(row["met"] and row["errors"] == 0 for row in summary["levels"])
    assert (summary["sessions_per_instance"], summary["limited_by"]) == (2, "max_sessions")
    assert summary["deploy"] == "voicedesk deploy --target-sessions 2"
    assert [run.group for run in generous.runs] == ["1 sessions", "2 sessions", "2 sessions"]
    # The level's p95 is the percentile of its utterances' times to first audio, and each arrived in the window.
    two = [run.timeline.first_audible_at_s for run in generous.runs if run.group == "2 sessions"]
    assert summary["levels"][1]["time_to_first_audio_s"]["max"] == max(two)
    assert all(0.0 <= run.extra["delay_s"] <= summary["window_s"] for run in generous.runs)
    assert capacity_line(summary).endswith("at least 2  → voicedesk deploy --target-sessions 2")
    assert any("raise --max-sessions" in note for note in generous.notes)

    impossible = asyncio.run(measure(0.001)).summary
    assert [row["sessions"] for row in impossible["levels"]] == [1]
    assert (impossible["sessions_per_instance"], impossible["deploy"]) == (0, None)


@pytest.mark.slow
def test_bench_server_is_the_concurrency_and_transport_scenarios_against_a_url(bench_container, capsys):
    argv = ["bench", "server", "--url", bench_container.http_url, "--sessions", "2", "--rounds", "1"]
    argv += ["--arrivals", "spread", "--text", SEED[1], "--json"]
    assert main(argv) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["engine"] == f"websocket {bench_container.http_url}"
    concurrency, transport = document["scenarios"]
    assert (concurrency["name"], transport["name"]) == ("concurrency", "transport")
    levels = concurrency["summary"]["levels"]
    assert [(row["sessions"], row["arrival"]) for row in levels] == [(1, "alone"), (2, "spread")]  # 1 is added
    assert all(row["session_open_s"]["n"] == row["sessions"] for row in levels)  # each connection's accept time
    assert concurrency["summary"]["goal_check"]["met"] is None  # the goal is stated at 4 sessions
    assert isinstance(concurrency["summary"]["accept_met"], bool)  # a remote engine's accept time is judged
    assert transport["summary"]["server"] == bench_container.http_url
    assert transport["summary"]["ratio"] > 1.0  # SSE's base64 costs more than binary frames


def test_a_level_with_refused_requests_misses_the_target_whatever_its_p95():
    ramp = CapacityRamp(target_s=0.3, max_sessions=32)
    ramp.record(1, 0.1)
    ramp.record(2, 0.2, failed=1)  # the served ones were quick; one was refused (queue_saturated)
    assert not ramp.met(2)
    assert ramp.bounds == (1, 2) and ramp.next_level() is None


def test_the_stage_table_puts_each_servers_figures_side_by_side():
    from voicedesk.app.lab.capacity import stage_rows

    def reported(workers: int, g2p_p50: float) -> dict:
        stages = {name: {"n": 3, "p50_ms": 1.0, "p95_ms": 2.0} for name in ("front-end", "forward", "encode")}
        stages["g2p"] = {"n": 3, "p50_ms": g2p_p50, "p95_ms": None}
        return {"stages": {"prepare_workers": workers, "load_average": [9.5, 8.0, 7.25], "stages": stages}}

    rows = stage_rows([("A", reported(0, 4.5)), ("B", reported(2, 4.25)), ("C", {"stages": None})])
    assert rows[0] == ["stage (ms per sentence)", "A p50", "A p95", "B p50", "B p95"]
    assert rows[2] == ["g2p (CPU)", "4.5", "—", "4.2", "—"]
    assert [row[0] for row in rows[1:5]] == ["front-end (CPU)", "g2p (CPU)", "forward (faked: wall)", "encode (CPU)"]
    assert "A: 0, B: 2" in rows[-1][0] and "A: 9.5 8.0 7.2" in rows[-1][0]
    assert stage_rows([("A", {"stages": None})]) == []
