"""The jitter buffer between a session's audio and the sound card (pure): the lock is held only to copy in/out of a
preallocated ring, which grows only in ``write``, so PortAudio's callback never allocates or waits on Python work."""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

import numpy as np

STALL_MERGE_S = 0.25  # stalls closer than this are one gap to the listener (a device recovering in two steps)


@dataclass(frozen=True, slots=True)
class SentenceOnset:
    seq: int
    dac_time: float  # when its first sample is heard, on ``read_into``'s clock


@dataclass(slots=True)
class ReadResult:
    frames_played: int = 0
    underrun: bool = False
    onsets: tuple[SentenceOnset, ...] = ()
    stall_started: bool = False  # the first starved callback of a stall (heard as one gap)
    stall_ended_s: float | None = None  # a stall ended here: how long it was silent
    finished: bool = False  # the utterance's last sample was read (here, or exactly at the end of the last call)


class PlaybackBuffer:
    def __init__(self, sample_rate: int, prebuffer_s: float = 0.15, capacity_s: float = 120.0) -> None:
        self.sample_rate = sample_rate
        self.prebuffer = int(prebuffer_s * sample_rate)
        self._ring = np.zeros(max(int(capacity_s * sample_rate), 1024), dtype=np.float32)
        self._lock = threading.Lock()
        self._read = 0  # absolute sample counters; ring index = counter % len(ring)
        self._write = 0
        self._markers: deque[tuple[int, int]] = deque()  # (absolute sample, seq) of sentence starts
        self._utterance_base = 0
        self._playing = False
        self._ended = True
        self._fade: np.ndarray | None = None
        self._paused = False
        self._ramp = np.ones(0, dtype=np.float32)  # a resume's fade-in, applied to the next samples read
        self._ramped = 0
        self.underruns = 0  # stalls mid-utterance
        self.underrun_frames = 0
        self._starved = False
        self._stall_frames = 0
        self._stall_end_at = -(1 << 62)  # read position the last stall ended at, for STALL_MERGE_S

    def begin_utterance(self) -> None:
        with self._lock:
            self._drop_locked()
            self._ended = False
            self._playing = False
            self._utterance_base = self._write

    def write(self, samples: np.ndarray, seq: int | None = None) -> None:
        """``seq`` marks the first samples of that sentence."""
        samples = np.asarray(samples, dtype=np.float32)
        with self._lock:
            if self._ended:
                # Audio without begin_utterance (a continuing reply): treat as a new utterance.
                self._ended = False
                self._playing = False
                self._utterance_base = self._write
            self._ensure_capacity_locked(len(samples))
            if seq is not None:
                self._markers.append((self._write, seq))
            start = self._write % len(self._ring)
            first = min(len(samples), len(self._ring) - start)
            self._ring[start : start + first] = samples[:first]
            self._ring[: len(samples) - first] = samples[first:]
            self._write += len(samples)

    def end_utterance(self) -> None:
        """Plays out what is queued, even under the prebuffer (a short reply must not wait for it)."""
        with self._lock:
            self._ended = True
            if self._write > self._read:
                self._playing = True

    def interrupt(self, fade_s: float = 0.03) -> int:
        """Fades out in ``fade_s`` and drops the rest, so nothing stale plays; returns samples heard."""
        with self._lock:
            heard = self._read - self._utterance_base
            if self._playing and not self._paused and self._write > self._read:
                n = min(int(fade_s * self.sample_rate), self._write - self._read)
                tail = self._copy_out_locked(self._read, n)
                self._fade = tail * np.linspace(1.0, 0.0, n, dtype=np.float32)
            self._drop_locked()
            self._ended = True
            return max(heard, 0)

    def pause(self, fade_s: float = 0.03) -> bool:
        """Fades out like ``interrupt`` but holds the rest (a tentative barge-in); whether it paused."""
        with self._lock:
            if self._paused or not self._playing:
                return False
            self._paused = True
            n = min(int(fade_s * self.sample_rate), self._write - self._read)
            self._fade = self._copy_out_locked(self._read, n) * np.linspace(1.0, 0.0, n, dtype=np.float32)
            return True

    def resume(self, fade_s: float = 0.03) -> None:
        """Plays on from where ``pause`` faded out (those samples again, faded in): nothing is lost."""
        with self._lock:
            if self._paused:
                self._paused, self._ramped = False, 0
                self._ramp = np.linspace(0.0, 1.0, int(fade_s * self.sample_rate), dtype=np.float32)

    def read_into(self, out: np.ndarray, dac_time: float, lost_frames: int = 0) -> ReadResult:
        """``dac_time``: when out[0] is heard; ``lost_frames``: silence played since the last call, a stall too."""
        result = ReadResult()
        frames = len(out)
        with self._lock:
            heard = self._read > self._utterance_base and (self._write > self._read or not self._ended)
            if lost_frames > 0 and self._playing and heard and not self._paused:
                if not self._starved:
                    if self._read - self._stall_end_at >= STALL_MERGE_S * self.sample_rate:
                        self.underruns += 1
                        result.stall_started = True
                    self._starved, self._stall_frames = True, 0
                self.underrun_frames += lost_frames
                self._stall_frames += lost_frames
            filled = 0
            if self._fade is not None:
                n = min(len(self._fade), frames)
                out[:n] = self._fade[:n]
                self._fade = self._fade[n:] if n < len(self._fade) else None
                filled = n
            available = self._write - self._read
            if not self._playing and available > 0 and (available >= self.prebuffer or self._ended):
                self._playing = True
            if self._playing and not self._paused and filled < frames:
                n = min(available, frames - filled)
                if n:
                    onsets = []
                    while self._markers and self._markers[0][0] < self._read + n:
                        at, seq = self._markers.popleft()
                        offset = filled + max(at - self._read, 0)
                        onsets.append(SentenceOnset(seq, dac_time + offset / self.sample_rate))
                    result.onsets = tuple(onsets)
                    start = self._read % len(self._ring)
                    first = min(n, len(self._ring) - start)
                    out[filled : filled + first] = self._ring[start : start + first]
                    out[filled + first : filled + n] = self._ring[: n - first]
                    k = min(n, len(self._ramp) - self._ramped)
                    out[filled : filled + k] *= self._ramp[self._ramped : self._ramped + k]
                    self._ramped += k
                    self._read += n
                    filled += n
                    result.frames_played = n
                if filled < frames:
                    if self._ended:
                        if self._read == self._write:
                            result.finished = True  # playing until now: this read drained it
                            self._playing = False
                    else:
                        if not self._starved:
                            self.underruns += 1
                            self._stall_frames = 0
                            result.stall_started = True
                        self._starved = True
                        self.underrun_frames += frames - filled
                        self._stall_frames += frames - filled
                        result.underrun = True
                if self._starved and (filled == frames or result.finished):
                    self._starved, self._stall_end_at = False, self._read
                    result.stall_ended_s = self._stall_frames / self.sample_rate
            out[filled:] = 0.0
        return result

    @property
    def queued_samples(self) -> int:
        return self._write - self._read

    @property
    def played_samples(self) -> int:
        """Of the current utterance, for word highlighting."""
        return self._read - self._utterance_base

    @property
    def playing(self) -> bool:
        return self._playing

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def idle(self) -> bool:
        return self._ended and self._write == self._read and self._fade is None

    def _drop_locked(self) -> None:
        self._read = self._write
        self._markers.clear()
        self._playing = self._paused = False

    def _copy_out_locked(self, at: int, n: int) -> np.ndarray:
        start = at % len(self._ring)
        first = min(n, len(self._ring) - start)
        return np.concatenate([self._ring[start : start + first], self._ring[: n - first]])

    def _ensure_capacity_locked(self, extra: int) -> None:
        needed = self._write - self._read + extra
        if needed <= len(self._ring):
            return
        size = len(self._ring)
        while size < needed:
            size *= 2
        queued = self._copy_out_locked(self._read, self._write - self._read)
        ring = np.zeros(size, dtype=np.float32)
        # Keep absolute counters: place queued samples where read % size expects them.
        start = self._read % size
        first = min(len(queued), size - start)
        ring[start : start + first] = queued[:first]
        ring[: len(queued) - first] = queued[first:]
        self._ring = ring
