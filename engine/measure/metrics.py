"""Latency-lab metrics: pure functions of timestamps and samples (no I/O, no clock is read).

The definitions are in docs/bench.md ("Metric definitions"); tests/app/lab/test_docs.py holds the two in step."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from voicedesk.engine.audio import pcm16_to_float
from voicedesk.engine.events import BYTES_PER_SAMPLE, SAMPLE_RATE

AudioLike = bytes | bytearray | memoryview | np.ndarray

ONSET_THRESHOLD_DBFS = -40.0
ONSET_HOLD_S = 0.050
ONSET_WINDOW_S = 0.010
SEAM_SILENCE_DBFS = -45.0
_TIME_TOLERANCE_S = 1e-9


def as_float_audio(audio: AudioLike | Sequence[float]) -> np.ndarray:
    """Mono float64 samples in [-1, 1] from PCM16 bytes, an int16 array or a float array."""
    if isinstance(audio, bytes | bytearray | memoryview):
        return pcm16_to_float(bytes(audio)).astype(np.float64)
    array = np.asarray(audio)
    if array.ndim != 1:
        raise ValueError(f"audio must be mono (a 1-D array of samples); got shape {array.shape}")
    if array.dtype == np.int16:
        return array.astype(np.float64) / 32768.0
    if np.issubdtype(array.dtype, np.floating) or array.size == 0:
        return array.astype(np.float64, copy=False)
    raise TypeError(f"audio must be PCM16 bytes, an int16 array or a float array in [-1, 1]; got dtype {array.dtype}")


def _samples(seconds: float, sample_rate: int, what: str) -> int:
    if not seconds > 0 or sample_rate <= 0:
        raise ValueError(f"{what} and sample_rate must be positive; got {seconds} s at {sample_rate} Hz")
    return max(1, round(seconds * sample_rate))


# ---- onset ----------------------------------------------------------------------------------------


def first_audible_sample(
    audio: AudioLike | Sequence[float],
    sample_rate: int = SAMPLE_RATE,
    threshold_dbfs: float = ONSET_THRESHOLD_DBFS,
    hold_s: float = ONSET_HOLD_S,
    window_s: float = ONSET_WINDOW_S,
) -> int | None:
    """Index of the first audible sample (the onset rule, docs/bench.md), or None if there is none."""
    samples = as_float_audio(audio)
    window = _samples(window_s, sample_rate, "window_s")
    hold = _samples(hold_s, sample_rate, "hold_s")
    power_threshold = 10.0 ** (threshold_dbfs / 10.0)
    n_windows = len(samples) // window
    squares = (samples[: n_windows * window] ** 2).reshape(n_windows, window)
    loud = squares.mean(axis=1) > power_threshold
    # Runs of loud windows: [starts[k], ends[k]) in window units.
    edges = np.diff(np.concatenate([[False], loud, [False]]).astype(np.int8))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    for first_window, end_window in zip(starts, ends, strict=True):
        hot_first = squares[first_window] > power_threshold
        hot_last = squares[end_window - 1] > power_threshold
        extent_start = first_window * window + int(np.argmax(hot_first))
        extent_end = (end_window - 1) * window + window - 1 - int(np.argmax(hot_last[::-1]))
        if extent_end - extent_start + 1 >= hold:
            return int(extent_start)
    return None


class OnsetDetector:
    """Streaming ``first_audible_sample``: push chunks as they arrive; the answer equals the whole-signal one."""

    def __init__(
        self,
        sample_rate: int = SAMPLE_RATE,
        threshold_dbfs: float = ONSET_THRESHOLD_DBFS,
        hold_s: float = ONSET_HOLD_S,
        window_s: float = ONSET_WINDOW_S,
    ) -> None:
        self.sample_rate = sample_rate
        self._window = _samples(window_s, sample_rate, "window_s")
        self._hold = _samples(hold_s, sample_rate, "hold_s")
        self._power_threshold = 10.0 ** (threshold_dbfs / 10.0)
        self._pending = np.empty(0, dtype=np.float64)  # samples of the incomplete window
        self._pending_start = 0  # absolute index of _pending[0]
        self._odd_byte = b""  # half a PCM16 sample from a bytes chunk that ended mid-sample
        self._run_start: int | None = None  # extent start of the run of loud windows in progress
        self.onset: int | None = None
        """Absolute index of the first audible sample, once known."""

    def push(self, chunk: AudioLike | Sequence[float]) -> int | None:
        """Feeds the next chunk; returns the onset index once known (and from then on ignores further audio)."""
        if self.onset is not None:
            return self.onset
        if isinstance(chunk, bytes | bytearray | memoryview):
            data = self._odd_byte + bytes(chunk)
            cut = len(data) - len(data) % BYTES_PER_SAMPLE
            self._odd_byte = data[cut:]
            new = as_float_audio(data[:cut])
        elif self._odd_byte:
            raise ValueError("the previous PCM16 chunk ended mid-sample; push the rest of that sample as bytes")
        else:
            new = as_float_audio(chunk)
        samples = np.concatenate([self._pending, new]) if len(self._pending) else new
        window = self._window
        n_windows = len(samples) // window
        squares = (samples[: n_windows * window] ** 2).reshape(n_windows, window)
        loud = squares.mean(axis=1) > self._power_threshold
        for k in range(n_windows):
            if not loud[k]:
                self._run_start = None
                continue
            base = self._pending_start + k * window
            hot = squares[k] > self._power_threshold
            if self._run_start is None:
                self._run_start = base + int(np.argmax(hot))
            last_hot = base + window - 1 - int(np.argmax(hot[::-1]))
            if last_hot - self._run_start + 1 >= self._hold:
                self.onset = self._run_start
                self._pending = np.empty(0, dtype=np.float64)
                return self.onset
        self._pending = samples[n_windows * window :].copy()
        self._pending_start += n_windows * window
        return None


def audible_time_s(
    first_byte_s: float,
    onset_sample: int,
    sample_rate: int = SAMPLE_RATE,
    chunk_arrivals: Sequence[tuple[int, float]] = (),
) -> float:
    """When the onset sample is heard by a real-time player started at the first byte, never before the chunk holding it
    arrived (``chunk_arrivals``: first sample index and arrival time per chunk)."""
    if onset_sample < 0:
        raise ValueError(f"onset_sample must be >= 0; got {onset_sample}")
    heard = first_byte_s + onset_sample / sample_rate
    carrier = [arrived for start, arrived in chunk_arrivals if start <= onset_sample]
    return max(heard, carrier[-1]) if carrier else heard


# ---- real-time factor and pacing ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Stall:
    chunk: int
    """Index of the chunk whose late arrival ended the stall."""
    start_s: float
    duration_s: float


@dataclass(frozen=True, slots=True)
class PlaybackPacing:
    """How a chunked stream kept up with playback (definitions in docs/bench.md)."""

    rtf_per_chunk: tuple[float, ...]
    cumulative_rtf: tuple[float | None, ...]
    min_cumulative_rtf: float | None
    fell_behind: bool
    first_audio_s: float | None
    playback_start_s: float | None
    prebuffer_s: float
    stalls: tuple[Stall, ...]
    audio_s: float
    overall_rtf: float | None

    @property
    def stall_count(self) -> int:
        return len(self.stalls)

    @property
    def stall_s(self) -> float:
        return math.fsum(stall.duration_s for stall in self.stalls)


def playback_pacing(
    arrivals_s: Sequence[float], durations_s: Sequence[float], prebuffer_s: float = 0.0
) -> PlaybackPacing:
    """Per-chunk and cumulative RTF, whether the stream fell behind, and a gapless player's stalls."""
    times = [float(t) for t in arrivals_s]
    durations = [float(d) for d in durations_s]
    if len(times) != len(durations):
        raise ValueError(f"need one duration per arrival; got {len(times)} arrivals, {len(durations)} durations")
    if not all(math.isfinite(v) for v in times + durations + [prebuffer_s]):
        raise ValueError("arrival times, durations and prebuffer_s must be finite numbers")
    if any(t < 0 for t in times) or any(d < 0 for d in durations) or prebuffer_s < 0:
        raise ValueError("arrival times (seconds since the request), durations and prebuffer_s must be >= 0")
    if any(later < earlier for earlier, later in pairwise(times)):
        raise ValueError("arrival times must be non-decreasing (pass chunks in playback order)")

    rtf_per_chunk = tuple(
        _ratio(d, t - (times[i - 1] if i else 0.0)) for i, (t, d) in enumerate(zip(times, durations, strict=True))
    )
    audible = [i for i, d in enumerate(durations) if d > 0]
    cumulative: list[float | None] = [None] * len(times)
    fell_behind = False
    stalls: list[Stall] = []
    first_audio = playback_start = None
    if audible:
        first_audio = times[audible[0]]
        banked = 0.0  # A(i-1): audio that arrived before chunk i
        dry_base = None  # once playing, the buffer runs dry at dry_base + banked
        for i in audible:
            if i != audible[0]:
                cumulative[i] = _ratio(banked, times[i] - first_audio)
                fell_behind = fell_behind or times[i] > first_audio + banked + _TIME_TOLERANCE_S
            # Same float expression as above: with no prebuffer, a stall happens iff the stream fell behind.
            if dry_base is not None and times[i] > dry_base + banked + _TIME_TOLERANCE_S:
                stalls.append(Stall(i, dry_base + banked, times[i] - (dry_base + banked)))
                dry_base = times[i] - banked
            banked += durations[i]
            if dry_base is None and (banked >= prebuffer_s - _TIME_TOLERANCE_S or i == audible[-1]):
                playback_start = dry_base = times[i]
    defined = [c for c in cumulative if c is not None]
    total = math.fsum(durations)
    return PlaybackPacing(
        rtf_per_chunk=rtf_per_chunk,
        cumulative_rtf=tuple(cumulative),
        min_cumulative_rtf=min(defined) if defined else None,
        fell_behind=fell_behind,
        first_audio_s=first_audio,
        playback_start_s=playback_start,
        prebuffer_s=float(prebuffer_s),
        stalls=tuple(stalls),
        audio_s=total,
        overall_rtf=_ratio(total, times[-1]) if times else None,
    )


def _ratio(audio_s: float, wall_s: float) -> float:
    if wall_s > 0:
        return audio_s / wall_s
    return math.inf if audio_s > 0 else 0.0


# ---- percentiles ----------------------------------------------------------------------------------


def _clean(values: Iterable[float | None]) -> np.ndarray:
    array = np.asarray([v for v in values if v is not None], dtype=np.float64)
    if np.isnan(array).any():
        raise ValueError("values contain NaN; pass None for a measurement that was not taken")
    return array


def percentile(values: Iterable[float | None], p: float) -> float | None:
    """The p-th percentile (0 ≤ p ≤ 100) by linear interpolation; None when there are no values."""
    if not 0.0 <= p <= 100.0:
        raise ValueError(f"percentile p must be within [0, 100]; got {p}")
    array = _clean(values)
    return float(np.percentile(array, p, method="linear")) if array.size else None


SUMMARY_PERCENTILES = (50, 90, 95, 99)


def summarize(values: Iterable[float | None]) -> dict[str, float | int | None]:
    """n, p50, p90, p95, p99, min, max and mean over the values that were measured (all None when there are none)."""
    array = _clean(values)
    if not array.size:
        return {"n": 0, **{f"p{p}": None for p in SUMMARY_PERCENTILES}, "min": None, "max": None, "mean": None}
    return {
        "n": int(array.size),
        **{f"p{p}": float(np.percentile(array, p, method="linear")) for p in SUMMARY_PERCENTILES},
        "min": float(array.min()),
        "max": float(array.max()),
        "mean": float(array.mean()),
    }


# ---- seams, transport, floor ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SeamGap:
    seam: int
    """Sample offset of the seam: the first sample of the next sentence."""
    silent_before: int
    silent_after: int
    sample_rate: int = SAMPLE_RATE

    @property
    def gap_samples(self) -> int:
        return self.silent_before + self.silent_after

    @property
    def gap_s(self) -> float:
        return self.gap_samples / self.sample_rate


def seam_gaps(
    audio: AudioLike | Sequence[float],
    seams: Iterable[int],
    sample_rate: int = SAMPLE_RATE,
    threshold_dbfs: float = SEAM_SILENCE_DBFS,
) -> list[SeamGap]:
    """The silence heard around each seam of an utterance's concatenated audio (docs/bench.md)."""
    samples = as_float_audio(audio)
    offsets = [int(s) for s in seams]
    if any(not 0 <= s <= len(samples) for s in offsets):
        raise ValueError(f"seam offsets must lie within the audio (0..{len(samples)} samples); got {offsets}")
    loud = np.flatnonzero(np.abs(samples) > 10.0 ** (threshold_dbfs / 20.0))
    gaps = []
    for seam in offsets:
        k = int(np.searchsorted(loud, seam))  # loud[k-1] < seam <= loud[k]
        last_loud_before = int(loud[k - 1]) if k > 0 else -1
        first_loud_after = int(loud[k]) if k < len(loud) else len(samples)
        gaps.append(SeamGap(seam, seam - last_loud_before - 1, first_loud_after - seam, sample_rate))
    return gaps


@dataclass(frozen=True, slots=True)
class TransportCost:
    wire_bytes: int
    audio_s: float
    bytes_per_audio_s: float
    overhead: float
    """Wire bytes ÷ the raw PCM16 bytes of the same audio (1.0 = none)."""


def transport_cost(
    wire_bytes: int | Iterable[int],
    audio_s: float,
    sample_rate: int = SAMPLE_RATE,
    bytes_per_sample: int = BYTES_PER_SAMPLE,
) -> TransportCost:
    """Bytes on the wire per second of audio; ``wire_bytes`` is a total or the size of each frame."""
    total = wire_bytes if isinstance(wire_bytes, int) else sum(int(n) for n in wire_bytes)
    if total < 0:
        raise ValueError(f"wire byte counts must be >= 0; got {total}")
    if not audio_s > 0:
        raise ValueError(f"audio_s must be positive to express bytes per second of audio; got {audio_s}")
    per_second = total / audio_s
    return TransportCost(total, float(audio_s), per_second, per_second / (sample_rate * bytes_per_sample))


def latency_floor_s(fragment_arrival_s: float, bare_forward_s: float, leading_silence_s: float = 0.0) -> float:
    """First-fragment arrival + one bare model forward of it (+ its audio's leading silence), in seconds."""
    parts = {
        "fragment_arrival_s": fragment_arrival_s,
        "bare_forward_s": bare_forward_s,
        "leading_silence_s": leading_silence_s,
    }
    for name, value in parts.items():
        if not (math.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a finite number of seconds >= 0; got {value}")
    return fragment_arrival_s + bare_forward_s + leading_silence_s


def floor_ratio(
    time_to_first_audio_s: float,
    fragment_arrival_s: float,
    bare_forward_s: float,
    leading_silence_s: float = 0.0,
) -> float:
    """Measured time to first audio ÷ the floor (docs/bench.md); 1.0 = nothing added beyond the model."""
    floor = latency_floor_s(fragment_arrival_s, bare_forward_s, leading_silence_s)
    if floor <= 0:
        raise ValueError("the floor is 0 s (no arrival time, no forward time): the ratio is undefined")
    if not (math.isfinite(time_to_first_audio_s) and time_to_first_audio_s >= 0):
        raise ValueError(f"time_to_first_audio_s must be a finite number >= 0; got {time_to_first_audio_s}")
    return time_to_first_audio_s / floor
