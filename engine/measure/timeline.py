"""Utterance timelines: raw timestamped marks in, a per-sentence latency waterfall out (pure; no clock is read).
Defined in docs/bench.md ("Timeline definitions"); tests/app/lab/test_docs.py holds the two in step."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from voicedesk.engine.events import SAMPLE_RATE
from voicedesk.engine.measure.metrics import PlaybackPacing, audible_time_s, playback_pacing

SCHEMA = "voicedesk.timeline/1"
TIMELINES_SCHEMA = "voicedesk.timelines/1"
STAGES = ("fragment_in", "chunk_released", "sent", "first_byte", "first_audible", "dac")
PARENT = {
    "chunk_released": "fragment_in",
    "sent": "chunk_released",
    "first_byte": "sent",
    "first_audible": "first_byte",
    "dac": "first_byte",
}
STEPS = {  # name: (from stage, to stage)
    "chunking_s": ("fragment_in", "chunk_released"),
    "dispatch_s": ("chunk_released", "sent"),
    "ttfb_s": ("sent", "first_byte"),
    "onset_s": ("first_byte", "first_audible"),
    "output_s": ("first_byte", "dac"),
}
MEASURES = ("audio_s", "synthesis_s", "leading_silence_s", "seam_gap_s", "underruns")
CSV_COLUMNS = (
    *("label", "seq", "text"),
    *(f"{stage}_at_s" for stage in STAGES),
    *(*STEPS, "ttfa_s", "heard_at_s", "audio_s", "synthesis_s", "rtf"),
    *("leading_silence_s", "seam_gap_s", "underruns", "stalls", "stall_s"),
    *("engine", "engine_seq"),
)
_TOLERANCE_S = 1e-9


@dataclass(frozen=True, slots=True)
class SentenceTimeline:
    seq: int
    text: str | None = None
    fragment_in_at_s: float | None = None
    chunk_released_at_s: float | None = None
    sent_at_s: float | None = None
    first_byte_at_s: float | None = None
    first_audible_at_s: float | None = None
    dac_at_s: float | None = None
    audio_s: float | None = None
    synthesis_s: float | None = None
    leading_silence_s: float | None = None
    seam_gap_s: float | None = None
    underruns: int | None = None
    stalls: int | None = None
    stall_s: float | None = None
    engine: str | None = None
    engine_seq: int | None = None

    def at(self, stage: str) -> float | None:
        return getattr(self, f"{stage}_at_s")

    @property
    def steps(self) -> dict[str, float | None]:
        return {name: _minus(self.at(end), self.at(start)) for name, (start, end) in STEPS.items()}

    @property
    def ttfb_s(self) -> float | None:
        return _minus(self.first_byte_at_s, self.sent_at_s)

    @property
    def ttfa_s(self) -> float | None:
        return _minus(self.first_audible_at_s, self.sent_at_s)

    @property
    def heard_at_s(self) -> float | None:
        if self.dac_at_s is None or self.leading_silence_s is None:
            return None
        return self.dac_at_s + self.leading_silence_s

    @property
    def rtf(self) -> float | None:
        if self.audio_s is None or not self.synthesis_s:
            return None
        return self.audio_s / self.synthesis_s

    def row(self, label: str | None = None) -> dict[str, Any]:
        """This sentence as one CSV row (columns: ``CSV_COLUMNS``)."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values |= self.steps | {"label": label, "ttfa_s": self.ttfa_s, "heard_at_s": self.heard_at_s, "rtf": self.rtf}
        return {column: values[column] for column in CSV_COLUMNS}


@dataclass(frozen=True, slots=True)
class ChunkArrival:
    seq: int
    at_s: float
    audio_s: float


@dataclass(frozen=True, slots=True)
class UtteranceTimeline:
    label: str | None
    origin_s: float
    prebuffer_s: float
    sentences: tuple[SentenceTimeline, ...]
    chunks: tuple[ChunkArrival, ...] = ()
    pacing: PlaybackPacing | None = None
    problems: tuple[str, ...] = field(default=())
    speech: SpeechMarks | None = None
    """A spoken turn's marks (``spoken``); None for typed text."""

    def _earliest(self, name: str) -> float | None:
        values = [v for s in self.sentences if (v := getattr(s, name)) is not None]
        return min(values) if values else None

    @property
    def first_byte_at_s(self) -> float | None:
        return self._earliest("first_byte_at_s")

    @property
    def first_audible_at_s(self) -> float | None:
        """The utterance's time to first audio: from its origin to the first audible sample."""
        return self._earliest("first_audible_at_s")

    @property
    def summary(self) -> dict[str, Any]:
        both = [s for s in self.sentences if s.audio_s is not None and s.synthesis_s]
        pacing = self.pacing
        return {
            "first_byte_at_s": self.first_byte_at_s,
            "first_audible_at_s": self.first_audible_at_s,
            "dac_at_s": self._earliest("dac_at_s"),
            "heard_at_s": self._earliest("heard_at_s"),
            "audio_s": _sum(s.audio_s for s in self.sentences),
            "synthesis_s": _sum(s.synthesis_s for s in self.sentences),
            "rtf": math.fsum(s.audio_s for s in both) / math.fsum(s.synthesis_s for s in both) if both else None,
            "min_cumulative_rtf": pacing.min_cumulative_rtf if pacing else None,
            "fell_behind": pacing.fell_behind if pacing else None,
            "stall_count": pacing.stall_count if pacing else None,
            "stall_s": pacing.stall_s if pacing else None,
            "underruns": _sum(s.underruns for s in self.sentences),
            "seam_gaps_s": [s.seam_gap_s for s in self.sentences[1:]],
        }

    def to_dict(self) -> dict[str, Any]:
        """The JSON-able form (schema in docs/bench.md)."""
        pacing = None
        if self.pacing is not None:
            pacing = asdict(self.pacing) | {"stall_count": self.pacing.stall_count, "stall_s": self.pacing.stall_s}
        sentences = []
        for s in self.sentences:
            row = s.row()
            del row["label"]
            sentences.append({k: v for k, v in row.items() if k not in STEPS} | {"steps": s.steps})
        speech = {} if self.speech is None else {"speech": asdict(self.speech)}
        return _json_safe(
            {
                "schema": SCHEMA,
                "label": self.label,
                "origin_s": self.origin_s,
                "prebuffer_s": self.prebuffer_s,
                "summary": self.summary,
                "sentences": sentences,
                "chunks": [asdict(c) for c in self.chunks],
                "pacing": pacing,
                "problems": list(self.problems),
                **speech,
            }
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> UtteranceTimeline:
        if data.get("schema") != SCHEMA:
            raise ValueError(f"not a voicedesk timeline: schema is {data.get('schema')!r}, expected {SCHEMA!r}")
        sentences = [_sentence_inputs(item) for item in data["sentences"]]
        chunks = [ChunkArrival(int(c["seq"]), float(c["at_s"]), float(c["audio_s"])) for c in data["chunks"]]
        built = assemble(data["label"], float(data["origin_s"]), float(data["prebuffer_s"]), sentences, chunks)
        speech = data.get("speech")
        return built if not speech else replace(built, speech=SpeechMarks(**{k: float(v) for k, v in speech.items()}))

    def csv_rows(self) -> list[dict[str, Any]]:
        """One row per sentence (columns ``CSV_COLUMNS``), for ``csv.DictWriter``; None becomes an empty cell."""
        return [s.row(self.label) for s in self.sentences]


@dataclass(frozen=True, slots=True)
class SpeechMarks:
    """Where the person's speech started and ended (VAD) and the final transcript was ready, from the origin."""

    speech_start_at_s: float
    speech_end_at_s: float
    final_transcript_at_s: float


def spoken(timeline: UtteranceTimeline, speech_start: float, speech_end: float, transcript: float) -> UtteranceTimeline:
    """``timeline`` moved onto the clock of a spoken turn (origin: ``speech_end``; times on the timeline's clock)."""
    shift = timeline.origin_s - speech_end
    moved = [
        replace(s, **{f"{stage}_at_s": at + shift for stage in STAGES if (at := s.at(stage)) is not None})
        for s in timeline.sentences
    ]
    chunks = [replace(c, at_s=c.at_s + shift) for c in timeline.chunks]
    built = assemble(timeline.label, speech_end, timeline.prebuffer_s, moved, chunks)
    marks = SpeechMarks(speech_start - speech_end, 0.0, transcript - speech_end)
    return replace(built, speech=marks)


def timelines_document(timelines: Iterable[UtteranceTimeline]) -> dict[str, Any]:
    """Several utterances in one JSON document (schema in docs/bench.md)."""
    return {"schema": TIMELINES_SCHEMA, "timelines": [t.to_dict() for t in timelines]}


def timelines_from_document(data: Mapping[str, Any]) -> list[UtteranceTimeline]:
    if data.get("schema") == SCHEMA:
        return [UtteranceTimeline.from_dict(data)]
    if data.get("schema") != TIMELINES_SCHEMA:
        raise ValueError(f"not voicedesk timelines: schema is {data.get('schema')!r}, expected {TIMELINES_SCHEMA!r}")
    return [UtteranceTimeline.from_dict(item) for item in data["timelines"]]


def sentences_from_csv_rows(rows: Iterable[Mapping[str, str]]) -> list[SentenceTimeline]:
    """Reads back rows written from ``csv_rows`` (derived columns are recomputed; an empty text reads as None)."""
    return [_sentence_inputs(row, keep_stalls=True) for row in rows]


class TimelineBuilder:
    """Collects marks, measurements and chunk arrivals in any order; ``build`` assembles the timeline."""

    def __init__(
        self,
        label: str | None = None,
        origin_s: float | None = None,
        prebuffer_s: float = 0.0,
        sample_rate: int = SAMPLE_RATE,
    ) -> None:
        self.label = label
        self.origin_s = None if origin_s is None else _finite(origin_s, "origin_s")
        self.prebuffer_s = _finite(prebuffer_s, "prebuffer_s")
        self.sample_rate = sample_rate
        self._marks: dict[int, dict[str, float]] = {}
        self._measures: dict[int, dict[str, float | int | None]] = {}
        self._texts: dict[int, str] = {}
        self._speakers: dict[int, tuple[str | None, int | None]] = {}
        self._chunks: list[ChunkArrival] = []

    def mark(self, seq: int, stage: str, t: float) -> None:
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}; stages are {', '.join(STAGES)}")
        marks = self._marks.setdefault(_seq(seq), {})
        t = _finite(t, f"time of {stage}")
        marks[stage] = min(t, marks.get(stage, t))

    def measure(self, seq: int, name: str, value: float | int | None) -> None:
        if name not in MEASURES:
            raise ValueError(f"unknown measurement {name!r}; measurements are {', '.join(MEASURES)}")
        self._measures.setdefault(_seq(seq), {})[name] = _measurement(name, value)

    def describe(self, seq: int, text: str | None, engine: str | None = None, engine_seq: int | None = None) -> None:
        """Sentence ``seq``'s text, and which engine spoke it under which of its own numbers (when known)."""
        if text is not None:
            self._texts[_seq(seq)] = text
        if engine is not None or engine_seq is not None:
            self._speakers[_seq(seq)] = (engine, None if engine_seq is None else _seq(engine_seq))

    def chunk(self, seq: int, t: float, audio_s: float) -> None:
        """An audio chunk of sentence ``seq`` arrived at ``t`` carrying ``audio_s`` seconds."""
        self._chunks.append(ChunkArrival(_seq(seq), _finite(t, "chunk time"), _measurement("audio_s", audio_s)))

    def build(self) -> UtteranceTimeline:
        origin = self.origin_s
        if origin is None:
            fragments = [m["fragment_in"] for m in self._marks.values() if "fragment_in" in m]
            anything = [t for m in self._marks.values() for t in m.values()] + [c.at_s for c in self._chunks]
            origin = min(fragments or anything or [0.0])
        seqs = set(self._marks) | set(self._measures) | set(self._texts) | set(self._speakers)
        sentences = []
        for seq in sorted(seqs | {c.seq for c in self._chunks}):
            offsets = {f"{stage}_at_s": t - origin for stage, t in self._marks.get(seq, {}).items()}
            measures = self._measures.get(seq, {})
            engine, engine_seq = self._speakers.get(seq, (None, None))
            sentences.append(
                SentenceTimeline(seq, self._texts.get(seq), **offsets, **measures, engine=engine, engine_seq=engine_seq)
            )
        chunks = [replace(c, at_s=c.at_s - origin) for c in self._chunks]
        return assemble(self.label, origin, self.prebuffer_s, sentences, chunks, self.sample_rate)


def assemble(
    label: str | None,
    origin_s: float,
    prebuffer_s: float,
    sentences: Iterable[SentenceTimeline],
    chunks: Iterable[ChunkArrival],
    sample_rate: int = SAMPLE_RATE,
) -> UtteranceTimeline:
    """Derives first_audible where possible, runs the pacing model and the consistency checks."""
    ordered = sorted(sentences, key=lambda s: s.seq)
    in_play_order = sorted(chunks, key=lambda c: (c.seq, c.at_s))
    problems: list[str] = []
    pacing = None
    try:
        pacing = playback_pacing([c.at_s for c in in_play_order], [c.audio_s for c in in_play_order], prebuffer_s)
    except ValueError as error:
        problems.append(f"pacing not computed: {error} (audio must arrive in sentence order, after the origin)")
    stalls_by_seq: dict[int, list[float]] = {}
    for stall in pacing.stalls if pacing else ():
        stalls_by_seq.setdefault(in_play_order[stall.chunk].seq, []).append(stall.duration_s)
    result = []
    for s in ordered:
        own = [c for c in in_play_order if c.seq == s.seq]
        if s.first_audible_at_s is None and s.first_byte_at_s is not None and s.leading_silence_s is not None:
            # (first sample, arrival) of each chunk, so the onset is never heard before its chunk arrived
            carriers = [(round(math.fsum(c.audio_s for c in own[:i]) * sample_rate), c.at_s) for i, c in enumerate(own)]
            onset = round(s.leading_silence_s * sample_rate)
            heard = audible_time_s(s.first_byte_at_s, onset, sample_rate, carriers)
            s = replace(s, first_audible_at_s=heard)
        if own and pacing is not None:
            mine = stalls_by_seq.get(s.seq, [])
            s = replace(s, stalls=len(mine), stall_s=math.fsum(mine))
        problems.extend(_check(s, own, sample_rate))
        result.append(s)
    return UtteranceTimeline(label, origin_s, prebuffer_s, tuple(result), tuple(in_play_order), pacing, tuple(problems))


def _check(s: SentenceTimeline, own: list[ChunkArrival], sample_rate: int) -> list[str]:
    problems = []
    for stage in STAGES:
        at = s.at(stage)
        if at is None:
            continue
        if at < -_TOLERANCE_S:
            problems.append(f"seq {s.seq}: {stage} at {at:.6f} s is before the utterance's origin")
        ancestor = PARENT.get(stage)
        while ancestor is not None and s.at(ancestor) is None:
            ancestor = PARENT.get(ancestor)
        if ancestor is not None and at < s.at(ancestor) - _TOLERANCE_S:
            why = " (TTFA < TTFB)" if stage == "first_audible" else ""
            problems.append(f"seq {s.seq}: {stage} at {at:.6f} s is before {ancestor} at {s.at(ancestor):.6f} s{why}")
    if s.first_audible_at_s is not None and s.first_byte_at_s is not None and s.leading_silence_s is not None:
        earliest = s.first_byte_at_s + s.leading_silence_s
        if s.first_audible_at_s < earliest - _TOLERANCE_S:
            problems.append(
                f"seq {s.seq}: first_audible at {s.first_audible_at_s:.6f} s is before first_byte + leading silence"
                f" ({earliest:.6f} s)"
            )
    if own and s.first_byte_at_s is not None and own[0].at_s < s.first_byte_at_s - _TOLERANCE_S:
        problems.append(f"seq {s.seq}: a chunk arrived at {own[0].at_s:.6f} s, before first_byte was marked")
    chunk_audio = math.fsum(c.audio_s for c in own)
    if own and s.audio_s is not None and abs(chunk_audio - s.audio_s) > 0.5 / sample_rate:
        problems.append(f"seq {s.seq}: its chunks carry {chunk_audio:.6f} s of audio but audio_s is {s.audio_s:.6f}")
    return problems


def _sentence_inputs(item: Mapping[str, Any], keep_stalls: bool = False) -> SentenceTimeline:
    def number(name: str) -> float | None:
        value = item.get(name)
        return None if value in (None, "") else float(value)

    def count(name: str) -> int | None:
        value = item.get(name)
        return None if value in (None, "") else int(value)

    measures = {name: _measurement(name, count(name) if name == "underruns" else number(name)) for name in MEASURES}
    stalls = {"stalls": count("stalls"), "stall_s": number("stall_s")} if keep_stalls else {}
    engine_seq = count("engine_seq")
    return SentenceTimeline(
        seq=_seq(int(item["seq"])),
        text=item.get("text") or None,
        engine=item.get("engine") or None,
        engine_seq=None if engine_seq is None else _seq(engine_seq),
        **{f"{stage}_at_s": number(f"{stage}_at_s") for stage in STAGES},
        **measures,
        **stalls,
    )


def _seq(seq: int) -> int:
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
        raise ValueError(f"a sentence's seq must be an int >= 0; got {seq!r}")
    return seq


def _finite(value: float, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{what} must be a finite number of seconds; got {value!r}")
    return float(value)


def _measurement(name: str, value: float | int | None) -> float | int | None:
    if value is None:
        return None
    if name == "underruns":
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"underruns must be a count (int >= 0); got {value!r}")
        return value
    seconds = _finite(value, name)
    if seconds < 0:
        raise ValueError(f"{name} must be >= 0 seconds; got {seconds}")
    return seconds


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _sum(values: Iterable[float | int | None]) -> float | int | None:
    present = [v for v in values if v is not None]
    if not present:
        return None
    return sum(present) if all(isinstance(v, int) for v in present) else math.fsum(present)


def _json_safe(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value
