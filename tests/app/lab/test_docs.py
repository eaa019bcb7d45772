"""docs/bench.md quotes the metric and stage definitions from the code's docstrings: the quotes must not drift."""

from __future__ import annotations

import re

import voicedesk.engine.measure.metrics
import voicedesk.engine.measure.timeline
from tests.support.fake_hf_cache import REPO_ROOT

DOC = REPO_ROOT / "docs" / "bench.md"


def quoted_blocks() -> list[str]:
    return re.findall(r"```text\n(.*?)\n```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_the_stage_and_metric_definitions_are_quoted_verbatim():
    blocks = quoted_blocks()
    stages = next(b for b in blocks if b.startswith("Stages (one mark"))
    metrics = next(b for b in blocks if b.startswith("Level\n"))
    assert stages in voicedesk.engine.measure.timeline.__doc__
    assert metrics in voicedesk.engine.measure.metrics.__doc__
    # Every metric section of the docstring is in the quote (none left out).
    for heading in ("First audible sample", "Real-time factor", "Percentiles", "Gaps at seams", "Transport", "Floor"):
        assert heading in metrics


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
