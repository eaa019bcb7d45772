"""docs/bench.md defines the metrics and stages the code implements: every one the code has is defined there."""

from __future__ import annotations

import re

from tests.support.fake_hf_cache import REPO_ROOT
from voicedesk.engine.measure import metrics as metrics_module
from voicedesk.engine.measure import timeline

DOC = REPO_ROOT / "docs" / "bench.md"


def quoted_blocks() -> list[str]:
    return re.findall(r"```text\n(.*?)\n```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_the_stage_and_metric_definitions_cover_the_code():
    blocks = quoted_blocks()
    stages = next(b for b in blocks if b.startswith("Stages (one mark"))
    metrics = next(b for b in blocks if b.startswith("Level\n"))
    schema = next(b for b in blocks if b.startswith("Utterance JSON"))
    for stage in timeline.STAGES:
        assert re.search(rf"^    {stage} ", stages, flags=re.M), stage
    for column in (*timeline.CSV_COLUMNS, *timeline.STEPS):
        assert column in stages, column
    assert timeline.SCHEMA in schema and timeline.TIMELINES_SCHEMA in schema
    for name in ("first_audible_sample", "OnsetDetector", "audible_time_s", "playback_pacing", "percentile"):
        assert f"``{name}``" in metrics, name
    for name in ("summarize", "seam_gaps", "transport_cost", "latency_floor_s", "floor_ratio"):
        assert f"``{name}``" in metrics and callable(getattr(metrics_module, name)), name


def test_every_scenario_and_option_is_documented():
    from voicedesk.app.lab.cli import ALL, SUBCOMMANDS

    text = DOC.read_text(encoding="utf-8")
    for name in SUBCOMMANDS:
        assert f"bench {name}" in text
    for name in ALL:
        assert f"`bench {name}`" in text
    for option in (
        "--engine",
        "--engine-b",
        "--repeat",
        "--text-file",
        "--tokens-per-s",
        "--voice",
        "--sessions",
        "--arrival",
        "--server-url",
        "--play",
        "--json",
        "--plot",
        "--scenarios",
        "--device",
        "--token",
        "--serve",
        "--target-ms",
        "--max-sessions",
        "--url",
        "--rounds",
        "--arrivals",
        "--text",
    ):
        assert f"`{option}" in text, option
