"""The lab's picture (``--plot out.png``), drawn from the JSON document only (``app.lab.report``).

Top: a per-sentence waterfall of one streaming and one generate-then-speak utterance on a shared time axis
(seconds since the agent's first token), so "speech starts while the agent is still writing" is visible.
Bottom: the scenario comparison — time to first audio per scenario side, the concurrency sweep, the wire cost.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display here, and none needed

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.patches import Patch

from voicedesk.app.lab.report import scenario
from voicedesk.engine.events import BYTES_PER_SAMPLE, SAMPLE_RATE

COLORS = {
    "waiting": "#dfe3e8",
    "synthesis": "#f28e2b",
    "silence": "#edc948",
    "playing": "#59a14f",
    "ttfa": "#e15759",
    "dac": "#222222",
    "stall": "#e15759",
    "agent": "#555555",
}
SCENARIO_COLORS = {
    "streaming": "#4e79a7",
    "cold": "#b07aa1",
    "seed": "#76b7b2",
    "ab": "#9c755f",
}
WATERFALL_PREFERENCE = (("streaming", ("streaming", "generate-then-speak")), ("ab", ("A", "B")), ("cold", ("cold",)))


def draw_lab(document: dict[str, Any], path: Path | str) -> Path:
    figure = plt.figure(figsize=(15, 10), dpi=100, layout="constrained")
    grid = figure.add_gridspec(2, 3, height_ratios=[1.35, 1])
    _waterfall(figure.add_subplot(grid[0, :]), document)
    _ttfa_comparison(figure.add_subplot(grid[1, 0]), document)
    _concurrency(figure.add_subplot(grid[1, 1]), document)
    _transport(figure.add_subplot(grid[1, 2]), document)
    figure.suptitle(
        f"voicedesk latency lab — engine {document['engine']} · {document['machine'].get('summary', '')}",
        fontsize=14,
        fontweight="bold",
    )
    target = Path(path)
    figure.savefig(target, format="png")
    plt.close(figure)
    return target


def _waterfall_runs(document: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    for name, groups in WATERFALL_PREFERENCE:
        sc = scenario(document, name)
        if sc is None or sc["skipped"]:
            continue
        runs = [next((r for r in sc["runs"] if r["group"] == g), None) for g in groups]
        runs = [r for r in runs if r is not None]
        if runs:
            return sc["title"], runs
    return "no utterance was measured", []


def _waterfall(ax: Axes, document: dict[str, Any]) -> None:
    title, runs = _waterfall_runs(document)
    headline = draw_waterfall(
        ax, [(run["group"], run["timeline"], run.get("extra", {}).get("reply_s")) for run in runs]
    )
    ratio = _streaming_ratio(document)
    ax.set_title(
        f"{title}\nper-sentence waterfall — first audio: "
        + ", ".join(headline)
        + (f"  ·  ratio of the p50s over all runs: {ratio:.2f}" if ratio else ""),
        fontsize=12,
        loc="left",
    )
    legend = [
        Patch(color=COLORS["waiting"], label="text not complete yet"),
        Patch(color=COLORS["synthesis"], label="sent → first byte (queue, synthesis, transport)"),
        Patch(color=COLORS["silence"], label="first byte → first audible sample"),
        Patch(color=COLORS["playing"], label="playing (lower lane, gapless player)"),
        Patch(color=COLORS["ttfa"], label="utterance's first audible sample"),
        Patch(facecolor="white", edgecolor=COLORS["stall"], hatch="////", label="stall: the player waits for audio"),
        plt.Line2D([], [], color=COLORS["agent"], linestyle=":", label="agent finished writing"),
    ]
    if document["dac"]["available"]:
        legend.append(
            plt.Line2D([], [], marker="v", color=COLORS["dac"], linestyle="", label="first sample at the DAC")
        )
    ax.legend(handles=legend, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=4, fontsize=9, frameon=False)


def draw_waterfall(ax: Axes, utterances: list[tuple[str, dict[str, Any], float | None]]) -> list[str]:
    """Draws utterances — (name, timeline in the ``voicedesk.timeline/1`` form, when the agent finished writing or
    None) — one under the other on a shared time axis; returns "name 1.23 s" first-audio headlines. Works on any
    Axes, so a live panel can draw the same picture."""
    labels: list[str] = []
    positions: list[float] = []
    headline = []
    y = 0.0
    for name, timeline, reply_s in utterances:
        first_row = y
        play_end = None
        for s in timeline["sentences"]:
            play_end = _sentence_lanes(ax, s, y, play_end)
            text = s["text"] or ""
            labels.append(f"{timeline['label']} · {text[:30]}{'…' if len(text) > 30 else ''}")
            positions.append(y)
            y += 1
        span = [first_row - 0.45, y - 0.55]
        ttfa = timeline["summary"]["first_audible_at_s"]
        if ttfa is not None:
            ax.plot([ttfa, ttfa], span, color=COLORS["ttfa"], linewidth=2.5)
            ax.annotate(
                f"first audio {ttfa:.2f} s",
                (ttfa, span[0]),
                xytext=(4, -2),
                textcoords="offset points",
                color=COLORS["ttfa"],
                fontsize=10,
                fontweight="bold",
                va="bottom",
            )
            headline.append(f"{name} {ttfa:.2f} s")
        if reply_s is not None:
            ax.plot([reply_s, reply_s], span, color=COLORS["agent"], linestyle=":", linewidth=2)
            ax.annotate(
                "agent done",
                (reply_s, span[1]),
                xytext=(3, 2),
                textcoords="offset points",
                fontsize=9,
                color=COLORS["agent"],
                va="top",
            )
        y += 0.6  # a gap between utterances
    ax.set_yticks(positions, labels, fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel("seconds since the utterance began (the agent's first token, or the request)")
    ax.grid(axis="x", alpha=0.3)
    return headline


def _sentence_lanes(ax: Axes, s: dict[str, Any], y: float, play_end: float | None) -> float | None:
    """Two lanes per sentence: how its audio was made (upper), how a player would play it (lower)."""
    released = s["chunk_released_at_s"] or s["sent_at_s"] or 0.0
    sent = s["sent_at_s"] if s["sent_at_s"] is not None else released
    first_byte, audible = s["first_byte_at_s"], s["first_audible_at_s"]
    made, heard = y - 0.12, y + 0.25
    ax.barh(made, released, color=COLORS["waiting"], height=0.45)
    if first_byte is not None:
        ax.barh(made, first_byte - sent, left=sent, color=COLORS["synthesis"], height=0.45)
        start = audible if audible is not None else first_byte
        ax.barh(made, start - first_byte, left=first_byte, color=COLORS["silence"], height=0.45)
        # A gapless player with no prebuffer: each sentence plays on arrival or when the previous one ends.
        play = max(first_byte, play_end or 0.0)
        if play_end is not None and first_byte > play_end:
            stall = {"color": "white", "edgecolor": COLORS["stall"], "hatch": "////", "linewidth": 0.8}
            ax.barh(heard, first_byte - play_end, left=play_end, height=0.22, **stall)
        play_end = play + (s["audio_s"] or 0.0)
        ax.barh(heard, play_end - play, left=play, color=COLORS["playing"], height=0.22)
    if s["dac_at_s"] is not None:
        ax.plot(s["dac_at_s"], heard, marker="v", color=COLORS["dac"], markersize=9)
    return play_end


def _streaming_ratio(document: dict[str, Any]) -> float | None:
    sc = scenario(document, "streaming")
    return None if sc is None or sc["skipped"] else sc["summary"]["ratio"]


def _ttfa_comparison(ax: Axes, document: dict[str, Any]) -> None:
    names, p50s, whiskers, colors = [], [], [], []
    for sc in document["scenarios"]:
        if sc["skipped"] or "groups" not in sc["summary"]:
            continue
        for group, summary in sc["summary"]["groups"].items():
            ttfa = summary["time_to_first_audio_s"]
            if ttfa["p50"] is None:
                continue
            names.append(_side_name(sc, group))
            p50s.append(ttfa["p50"])
            whiskers.append(max(ttfa["p95"] - ttfa["p50"], 0.0))
            colors.append(SCENARIO_COLORS.get(sc["name"], "#888888"))
    if not names:
        _empty(ax, "Time to first audio", "no scenario with utterances")
        return
    rows = range(len(names))
    ax.barh(rows, p50s, xerr=[[0] * len(whiskers), whiskers], color=colors, capsize=3)
    for row, value, whisker in zip(rows, p50s, whiskers, strict=True):
        end = value + whisker  # the label goes past the whisker, never on it
        ax.annotate(f"{value:.2f} s", (end, row), xytext=(5, 0), textcoords="offset points", va="center", fontsize=9)
    ax.margins(x=0.18)
    ax.set_yticks(list(rows), names, fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel("seconds (bar p50, whisker to p95)")
    ax.set_title("Time to first audible sample", fontsize=12, loc="left")
    ax.grid(axis="x", alpha=0.3)


def _side_name(sc: dict[str, Any], group: str) -> str:
    if sc["name"] == "ab":
        return f"{group}: {sc['summary']['engines'][group]}"
    return group if sc["name"] in ("streaming", "cold") else f"{sc['name']}: {group}"


def _concurrency(ax: Axes, document: dict[str, Any]) -> None:
    sc = scenario(document, "concurrency")
    if sc is None or sc["skipped"] or not sc["summary"].get("levels"):
        _empty(ax, "Concurrency sweep", "not run" if sc is None else (sc["skipped"] or "no data"))
        return
    levels = sc["summary"]["levels"]
    xs = range(len(levels))
    p50 = [row["time_to_first_audio_s"]["p50"] or 0.0 for row in levels]
    p95 = [row["time_to_first_audio_s"]["p95"] or 0.0 for row in levels]
    ax.bar([x - 0.2 for x in xs], p50, width=0.4, color="#4e79a7", label="p50")
    ax.bar([x + 0.2 for x in xs], p95, width=0.4, color="#a0cbe8", label="p95")
    if p50 and p50[0]:
        ax.axhline(2 * p50[0], color=COLORS["ttfa"], linestyle="--", linewidth=1.5, label="goal: 2 × p50 at the lowest")
    for x, row in zip(xs, levels, strict=True):
        stalls = row["stalls"]
        ratio = row["p95_over_p50_at_lowest"]
        note = f"{ratio:.2f}×" if ratio is not None else ""
        ax.annotate(f"{note}\n{stalls} stall(s)", (x + 0.2, p95[x]), ha="center", va="bottom", fontsize=9)
    patterns = {row.get("arrival") for row in levels} - {"alone", None}
    ax.set_xticks(
        list(xs),
        [f"{row['sessions']} session(s)" + (f"\n{row['arrival']}" if len(patterns) > 1 else "") for row in levels],
    )
    ax.set_ylabel("time to first audio (s)")
    ax.set_title("Concurrency: time to first audio per level", fontsize=12, loc="left")
    ax.set_ylim(0, max([*p95, *p50, 2 * (p50[0] or 0.0)]) * 1.45 or 1.0)  # room for the legend and labels
    ax.legend(fontsize=9, loc="upper left", ncol=2)
    ax.grid(axis="y", alpha=0.3)


def _transport(ax: Axes, document: dict[str, Any]) -> None:
    sc = scenario(document, "transport")
    rows = [] if sc is None or sc["skipped"] else sc["summary"]["transports"]
    rows = [row for row in rows if row["bytes_per_audio_s"]["p50"] is not None]
    if not rows:
        _empty(ax, "Wire bytes per second of audio", "not run" if sc is None else (sc["skipped"] or "no data"))
        return
    raw = SAMPLE_RATE * BYTES_PER_SAMPLE
    values = [row["bytes_per_audio_s"]["p50"] / 1000 for row in rows]
    ax.bar(range(len(rows)), values, color=["#59a14f", "#e15759"][: len(rows)])
    ax.axhline(raw / 1000, color="#333333", linestyle="--", linewidth=1.2, label=f"raw PCM16 ({raw / 1000:.0f} kB/s)")
    for x, (value, row) in enumerate(zip(values, rows, strict=True)):
        ax.annotate(f"{value:.1f} kB/s\n{row['overhead']:.2f}× raw", (x, value), ha="center", va="bottom", fontsize=9)
    ax.set_xticks(range(len(rows)), [row["transport"] for row in rows], fontsize=9)
    ax.set_ylabel("kB on the wire per second of audio")
    ratio = sc["summary"]["ratio"] if sc else None
    ax.set_title("Transport: wire cost" + (f"\nSSE ÷ binary = {ratio:.2f}" if ratio else ""), fontsize=12, loc="left")
    ax.legend(fontsize=9, loc="upper left")
    ax.margins(y=0.25)
    ax.grid(axis="y", alpha=0.3)


def _empty(ax: Axes, title: str, why: str) -> None:
    ax.set_title(title, fontsize=12, loc="left")
    ax.text(0.5, 0.5, why, ha="center", va="center", wrap=True, fontsize=10, color="#666666", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])
