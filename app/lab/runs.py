"""What a scenario produces: its runs (one measured utterance each) and the numbers drawn from them (pure).

A ``Run`` holds the utterance's timeline (``engine.measure.timeline``'s schema) plus what the timeline has no field
for; ``group_summary`` reduces runs to p50/p95 with ``engine.measure.metrics.summarize``. Every ratio a scenario reports
is computed by ``ratio`` from two numbers that are reported next to it, so a reader can check it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from voicedesk.engine.measure.metrics import summarize
from voicedesk.engine.measure.recorder import UtteranceRecord
from voicedesk.engine.measure.timeline import UtteranceTimeline

SENTENCE_METRICS = (
    *("ttfb_s", "onset_s", "ttfa_s", "synthesis_s", "audio_s", "rtf"),
    *("seam_gap_s", "output_s", "heard_at_s"),
)
"""Per-sentence values summarized over all sentences of a group's runs (definitions: engine.timeline)."""


@dataclass(frozen=True, slots=True)
class Run:
    group: str
    """Which side of the comparison: 'streaming', 'generate-then-speak', 'A', '4 sessions', 'warm', …"""
    repeat: int
    record: UtteranceRecord
    extra: dict[str, Any] = field(default_factory=dict)
    """Scenario-specific facts (the floor, session open time, which engine)."""

    @property
    def timeline(self) -> UtteranceTimeline:
        return self.record.timeline

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "repeat": self.repeat,
            "segments": {str(seq): n for seq, n in self.record.segments.items()},
            "errors": list(self.record.errors),
            "notes": list(self.record.notes),
            **({"extra": self.extra} if self.extra else {}),
            "timeline": self.timeline.to_dict(),
        }


@dataclass
class ScenarioResult:
    name: str
    title: str
    runs: list[Run] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None
    """Why the scenario did not run (e.g. transport through SageMaker), or None."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "skipped": self.skipped,
            "summary": self.summary,
            "notes": self.notes,
            "runs": [run.to_dict() for run in self.runs],
        }


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """numerator ÷ denominator, None when either is missing or the denominator is 0."""
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


def in_group(runs: Iterable[Run], group: str) -> list[Run]:
    return [run for run in runs if run.group == group]


def group_summary(runs: Sequence[Run]) -> dict[str, Any]:
    """Utterance- and sentence-level figures over a group's runs (p50/p95 over repeats)."""
    timelines = [run.timeline for run in runs]
    summaries = [t.summary for t in timelines]
    sentences = [s for t in timelines for s in t.sentences]
    min_rtfs = [s["min_cumulative_rtf"] for s in summaries if s["min_cumulative_rtf"] is not None]
    underruns = [s["underruns"] for s in summaries if s["underruns"] is not None]
    return {
        "runs": len(runs),
        "time_to_first_audio_s": summarize(s["first_audible_at_s"] for s in summaries),
        "time_to_first_byte_s": summarize(s["first_byte_at_s"] for s in summaries),
        "time_to_dac_s": summarize(s["dac_at_s"] for s in summaries),
        "heard_at_s": summarize(s["heard_at_s"] for s in summaries),
        "audio_s": summarize(s["audio_s"] for s in summaries),
        "rtf": summarize(s["rtf"] for s in summaries),
        "min_cumulative_rtf": min(min_rtfs) if min_rtfs else None,
        "fell_behind": sum(1 for s in summaries if s["fell_behind"]),
        "stalls": sum(s["stall_count"] or 0 for s in summaries),
        "stall_s": math.fsum(s["stall_s"] or 0.0 for s in summaries),
        "underruns": sum(underruns) if underruns else None,
        "sentences": {name: summarize(_sentence_value(s, name) for s in sentences) for name in SENTENCE_METRICS},
        "segments_per_sentence_max": max((n for run in runs for n in run.record.segments.values()), default=None),
        "errors": sum(len(run.record.errors) for run in runs),
        "problems": sum(len(t.problems) for t in timelines),
    }


def _sentence_value(sentence: Any, name: str) -> float | None:
    if name in ("onset_s", "output_s"):
        return sentence.steps[name]
    value = getattr(sentence, name)
    return None if value is None or not math.isfinite(value) else value


def p50(summary: dict[str, Any], key: str = "time_to_first_audio_s") -> float | None:
    return summary[key]["p50"]
