"""The lab's report as readable text (pure): drawn from the JSON document only (``app.lab.report``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from voicedesk.app.lab.report import scenario
from voicedesk.app.lab.runs import ratio

Row = dict[str, Any]


def ms(value: float | None) -> str:
    return "—" if value is None else f"{value * 1000:.0f}"


def num(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _goal(value: float | None, limit: float, goal: str) -> str:
    if value is None:
        return f"(goal {goal}: not measured)"
    return f"(goal {goal}: {'met' if value <= limit else 'NOT met'})"


def _columns(rows: list[list[str]], indent: str = "  ", left: int = 1) -> list[str]:
    """Aligned columns: the first ``left`` ones (names, texts) to the left, numbers to the right."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [
            cell.ljust(w) if i < left else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append(indent + "  ".join(cells).rstrip())
    return lines


GROUP_HEADER = [
    "",
    "TTFA p50",
    "p95",
    "1st byte p50",
    "DAC p50",
    "synth p50",
    "RTF p50",
    "min cum RTF",
    "stalls",
    "errors",
]


def _group_row(name: str, g: Row) -> list[str]:
    sentences = g["sentences"]
    return [
        name,
        ms(g["time_to_first_audio_s"]["p50"]),
        ms(g["time_to_first_audio_s"]["p95"]),
        ms(g["time_to_first_byte_s"]["p50"]),
        ms(g["time_to_dac_s"]["p50"]),
        ms(sentences["synthesis_s"]["p50"]),
        num(sentences["rtf"]["p50"]),
        num(g["min_cumulative_rtf"]),
        str(g["stalls"]),
        str(g["errors"] + g["problems"]),
    ]


WATERFALL_HEADER = ["seq", "text", "in", "released", "sent", "1st byte", "audible", "DAC"]
WATERFALL_HEADER += ["audio", "synth", "RTF", "seam"]


def waterfall_lines(timeline: Row) -> list[str]:
    """One run's per-sentence waterfall (ms since the utterance's origin; audio/synth in ms; RTF ×realtime)."""
    rows = [WATERFALL_HEADER]
    for s in timeline["sentences"]:
        text = (s["text"] or "")[:28] + ("…" if len(s["text"] or "") > 28 else "")
        rows.append(
            [
                str(s["seq"]),
                text,
                *(ms(s[f"{stage}_at_s"]) for stage in ("fragment_in", "chunk_released", "sent", "first_byte")),
                ms(s["first_audible_at_s"]),
                ms(s["dac_at_s"]),
                ms(s["audio_s"]),
                ms(s["synthesis_s"]),
                num(s["rtf"]),
                ms(s["seam_gap_s"]),
            ]
        )
    return _columns(rows, "    ", left=2)


def _first_run(sc: Row, group: str) -> Row | None:
    return next((run for run in sc["runs"] if run["group"] == group), None)


def _streaming(sc: Row) -> list[str]:
    s = sc["summary"]
    groups = s["groups"]
    lines = _columns([GROUP_HEADER, *(_group_row(name, g) for name, g in groups.items())])
    lines.append(f"  ratio: {s['ratio_of']} = {num(s['ratio'], 3)}  {_goal(s['ratio'], 0.20, s['goal'])}")
    floor = s["floor"]
    if floor["ratio"]["p50"] is not None:
        lines.append(
            f"  floor p50 {ms(floor['floor_s']['p50'])} ms (first fragment's arrival + one bare forward of it + its "
            f"leading silence); TTFA ÷ floor p50 {num(floor['ratio']['p50'], 3)}, p95 {num(floor['ratio']['p95'], 3)}  "
            f"{_goal(floor['ratio']['p50'], 1.05, floor['goal'])}"
        )
    else:
        lines.append(f"  floor: not measured ({floor['why_absent']})")
    for group in groups:
        run = _first_run(sc, group)
        if run is not None:
            lines += ["", f"  waterfall, {run['timeline']['label']} (ms since the agent's first token):"]
            lines += waterfall_lines(run["timeline"])
    return lines


def _seed(sc: Row) -> list[str]:
    s = sc["summary"]
    rows = [["sentence", "spoken as", "segments", "audio", "TTFB p50", "TTFA p50", "synth p50", "RTF p50"]]
    for row in s["sentences"]:
        rows.append(
            [
                row["text"][:36],
                f"{num(row['sentences_spoken']['max'], 0)} sentence(s)",
                str(row["segments"]),
                ms(row["audio_s"]["p50"]),
                ms(row["ttfb_s"]["p50"]),
                ms(row["ttfa_s"]["p50"]),
                ms(row["synthesis_s"]["p50"]),
                num(row["rtf"]["p50"]),
            ]
        )
    segments = "yes" if s["one_segment_per_sentence"] else "NO"
    sentences = "yes" if s["one_sentence_per_request"] else "no (the chunker split a sentence early)"
    return [
        *_columns(rows),
        f"  one audio segment per sentence: {segments}; each request spoken as one sentence: {sentences}; "
        f"errors: {s['errors']}",
    ]


AB_STAGES = (  # (label, "utterance" or "sentence", key in a group summary, unit)
    ("time to first audio", "utterance", "time_to_first_audio_s", "ms"),
    ("first byte", "utterance", "time_to_first_byte_s", "ms"),
    ("at the DAC", "utterance", "time_to_dac_s", "ms"),
    ("TTFB per sentence", "sentence", "ttfb_s", "ms"),
    ("leading silence per sentence", "sentence", "onset_s", "ms"),
    ("TTFA per sentence", "sentence", "ttfa_s", "ms"),
    ("synthesis per sentence", "sentence", "synthesis_s", "ms"),
    ("RTF per sentence", "sentence", "rtf", "x"),
)
STAGE_PERCENTILES = ("p50", "p90", "p99")


def ab_stage_table(summary: Row) -> list[list[str]]:
    """Header and one row per stage: A's and B's p50/p90/p99 side by side, and B ÷ A of the p50s. The app's A/B
    view shows exactly these cells (``app.lab.ab_panel``)."""
    header = ["stage", *(f"{side} {p}" for side in ("A", "B") for p in STAGE_PERCENTILES), "B ÷ A p50"]
    rows = [header]
    for label, level, key, unit in AB_STAGES:
        sides = []
        for side in ("A", "B"):
            group = summary["groups"][side]
            sides.append(group[key] if level == "utterance" else group["sentences"][key])
        cells = [ms(f[p]) if unit == "ms" else num(f[p]) for f in sides for p in STAGE_PERCENTILES]
        rows.append([label, *cells, num(ratio(sides[1]["p50"], sides[0]["p50"]))])
    return rows


def _ab(sc: Row) -> list[str]:
    s = sc["summary"]
    lines = _columns([GROUP_HEADER, *(_group_row(f"{k}: {s['engines'][k]}", g) for k, g in s["groups"].items())])
    lines += ["", "  per stage (ms; RTF ×realtime), p50/p90/p99 over the runs:", *_columns(ab_stage_table(s), "    ")]
    rows = [["sentence", "A TTFA p50", "B TTFA p50", "B ÷ A"]]
    for row in s["per_sentence"]:
        rows.append([str(row["index"]), ms(row["A_ttfa_s"]["p50"]), ms(row["B_ttfa_s"]["p50"]), num(row["ratio"])])
    lines += ["", "  per sentence (TTFA = first audible sample − sent, ms):", *_columns(rows, "    ")]
    lines.append(f"  ratio: {s['ratio_of']} = {num(s['ratio'], 3)}")
    return lines


def _concurrency(sc: Row) -> list[str]:
    s = sc["summary"]
    header = ["sessions", "arrivals", "n", "TTFA p50", "p95", "p95 ÷ p50@lowest", "open p95"]
    rows = [[*header, "stalls", "fell behind", "min cum RTF"]]
    for row in s["levels"]:
        ttfa = row["time_to_first_audio_s"]
        rows.append(
            [
                str(row["sessions"]),
                row["arrival"],
                str(ttfa["n"]),
                ms(ttfa["p50"]),
                ms(ttfa["p95"]),
                num(row["p95_over_p50_at_lowest"]),
                ms(row["session_open_s"]["p95"]),
                str(row["stalls"]),
                str(row["fell_behind"]),
                num(row["min_cumulative_rtf"]),
            ]
        )
    arrivals = f"  arrivals: {s['arrival']}"
    if "spread" in s["arrival"] and s["window_s"] is not None:
        spread = "" if s["arrival"] == "spread" else "spread: "
        arrivals += f" ({spread}random moments within {ms(s['window_s'])} ms, one request's time alone)"
    check = s["goal_check"]
    if check["met"] is None:
        goal = f"(goal {s['goal']}: not measured: {check['why']})"
    else:
        goal = f"(goal {s['goal']}: {'met' if check['met'] else 'NOT met'}, {num(check['ratio'])})"
    opened = s["session_open_s"]
    accept = "not judged: no connection" if s["accept_met"] is None else ("met" if s["accept_met"] else "NOT met")
    return [
        *_columns(rows, left=2),
        arrivals,
        f"  {s['ratio_of']} {goal}",
        f"  session open (connect + accept for a remote engine): p50 {ms(opened['p50'])} ms, max "
        f"{ms(opened['max'])} ms (goal {s['accept_goal']}: {accept})",
        f"  stalls: {s['stalls_from']}",
    ]


def _capacity(sc: Row) -> list[str]:
    from voicedesk.app.lab.capacity import capacity_line, stage_rows

    s = sc["summary"]
    sides = [("A", s), ("B", s["b"])] if s.get("b") else [("", s)]
    lines: list[str] = []
    for name, side in sides:
        rows = [["sessions", "arrivals", "n", "TTFA p50", "p95", "target", "errors"]]
        for row in side["levels"]:
            ttfa = row["time_to_first_audio_s"]
            verdict = "met" if row["met"] else "NOT met"
            figures = [str(ttfa["n"]), ms(ttfa["p50"]), ms(ttfa["p95"]), verdict, str(row["errors"])]
            rows.append([str(row["sessions"]), row["arrival"], *figures])
        lines += [
            *_columns(rows, left=2),
            f"  {name + ': ' if name else ''}measured on {side['measured_on']}; ramp 1, 2, 4 … up to "
            f"{side['max_sessions']}, then bisected; p95 over every utterance of a level (with few utterances it "
            "is close to their maximum: raise --repeat)",
            f"  {name + ': ' if name else ''}{capacity_line(side)}",
        ]
    stages = stage_rows(sides)
    if stages:
        *table, footer = stages
        lines += [*_columns(table, left=1), f"  {footer[0]}"]
    return lines


def _transport(sc: Row) -> list[str]:
    s = sc["summary"]
    rows = [["transport", "B per audio s p50", "× raw PCM16"]]
    for row in s["transports"]:
        per_s = row["bytes_per_audio_s"]["p50"]
        rows.append([row["transport"], "—" if per_s is None else f"{per_s:,.0f}", num(row["overhead"])])
    return [*_columns(rows), f"  ratio: {s['ratio_of']} = {num(s['ratio'], 3)}  (server {s['server']})"]


def _cold(sc: Row) -> list[str]:
    s = sc["summary"]
    opened = "start of this run" if s["engine_open_is_start"] else "a second engine opened for this scenario"
    lines = [f"  engine open (model load + warm-up for local; {opened}): {ms(s['engine_open_s'])} ms"]
    lines += _columns([GROUP_HEADER, *(_group_row(name, g) for name, g in s["groups"].items())])
    lines.append(
        f"  session open p50: cold {ms(s['session_open_s']['cold']['p50'])} ms, "
        f"warm {ms(s['session_open_s']['warm']['p50'])} ms"
    )
    lines.append(f"  ratio: {s['ratio_of']} = {num(s['ratio'], 3)}")
    lines.append(f"  from start to first audio: {ms(s['start_to_first_audio_s'])} ms")
    return lines


def _first_cut(sc: Row) -> list[str]:
    s = sc["summary"]
    lines = [f"  {name}, {policy}: {chunk!r}" for name, by in s["first_chunks"].items() for policy, chunk in by.items()]
    policies = list(next(iter(s["first_chunks"].values())))
    rows = [["sentence @ tokens/s", *(f"{p} p50 / p95" for p in policies), *(f"÷ clause {p}" for p in policies[1:])]]
    for key, row in s["rows"].items():
        ttfa = [row[p]["time_to_first_audio_s"] for p in policies]
        rows.append(
            [
                key,
                *(f"{ms(t['p50'])} / {ms(t['p95'])}" for t in ttfa),
                *(num(row["ratios"][p], 3) for p in policies[1:]),
            ]
        )
    return [*lines, *_columns(rows), f"  ratio: {s['ratio_of']}"]


SECTIONS: dict[str, Callable[[Row], list[str]]] = {
    "cold": _cold,
    "streaming": _streaming,
    "first-cut": _first_cut,
    "seed": _seed,
    "ab": _ab,
    "concurrency": _concurrency,
    "transport": _transport,
    "capacity": _capacity,
}


def format_lab(document: Row) -> str:
    cfg = document["config"]
    lines = [
        f"voicedesk bench — engine {document['engine']}"
        + (f", B {document['engine_b']}" if document["engine_b"] else "")
        + f"; {document['machine'].get('summary', '')}",
        f"repeat {cfg['repeat']}, agent at {cfg['tokens_per_s']:g} tokens/s, voice {cfg['voice']}; "
        "times in ms, p50/p95 over repeats; every ratio is the quotient of the figures shown",
        f"DAC: {'measured (--play)' if document['dac']['available'] else 'absent: ' + document['dac']['why']}",
    ]
    for sc in document["scenarios"]:
        lines += ["", f"== {sc['title']}"]
        if sc["skipped"]:
            lines.append(f"  skipped: {sc['skipped']}")
            continue
        lines += SECTIONS[sc["name"]](sc)
        lines += [f"  note: {note}" for note in sc["notes"]]
        problems = {p for run in sc["runs"] for p in (*run["errors"], *run["timeline"]["problems"])}
        lines += [f"  problem: {p}" for p in sorted(problems)[:5]]
    return "\n".join(lines)


__all__ = ["format_lab", "scenario", "waterfall_lines"]
