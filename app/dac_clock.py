"""When a sample written to the audio device will be heard: PortAudio's per-callback estimate, smoothed.

PortAudio's reports wobble by milliseconds (and under load shift for seconds) while the device plays at a steady rate,
so onsets timed from them would show seams that are not there. The clock keeps the DAC time of sample 0 and moves it
slowly towards each report; while an utterance plays the player pins it (``pin``), and only a real jump or an underflow
re-pins."""

from __future__ import annotations

from dataclasses import dataclass, field

SMOOTHING_S = 1.0
"""Audio over which a report moves the estimate by about 63 %: long enough to average out a wobble of ±10 ms."""
RESYNC_S = 0.05
"""A report this far from the estimate is a real jump (not a wobble): the estimate takes it at once."""


@dataclass(slots=True)
class DacClock:
    sample_rate: int
    smoothing_s: float = SMOOTHING_S
    resync_s: float = RESYNC_S
    frames_written: int = 0
    """Frames handed to the device so far (every callback's block, silence included)."""
    _origin: float | None = field(default=None, repr=False)
    """Estimated DAC time of the stream's sample 0, in the clock the reports use."""
    _reports: int = field(default=0, repr=False)
    """Reports averaged into the estimate since it was last taken as it is."""
    _pinned: float | None = field(default=None, repr=False)
    """The origin onsets are timed from while an utterance plays (None: the moving estimate)."""
    _last: float | None = field(default=None, repr=False)
    """The estimate before a resync, to tell how much time the device lost."""
    lost_s: float = 0.0
    """Silence the device played that nobody wrote (a stall: it stopped pulling, or its callback came late), added
    up since the player last took it (``take_lost``)."""

    def block(self, frames: int, reported_dac_time: float) -> float:
        """Takes a callback's ``frames`` and PortAudio's DAC time for its first sample; returns the smoothed DAC
        time of that first sample."""
        position_s = self.frames_written / self.sample_rate
        origin = reported_dac_time - position_s
        previous = self._origin if self._origin is not None else self._last
        if previous is not None and origin - previous > self.resync_s:
            self.lost_s += origin - previous
        if self._origin is None or abs(origin - self._origin) > self.resync_s:
            self._origin, self._reports = origin, 1
            if self._pinned is not None:  # the device really lost (or gained) time: follow it at once
                self._pinned = origin
        else:
            # A plain mean of the first reports (the first one alone is as wobbly as any), then a moving average.
            self._reports += 1
            weight = max(1 / self._reports, min(1.0, frames / (self.sample_rate * self.smoothing_s)))
            self._origin += weight * (origin - self._origin)
        self.frames_written += frames
        return (self._origin if self._pinned is None else self._pinned) + position_s

    def pin(self) -> None:
        """Times what follows from the estimate as it is now, until ``unpin`` (an utterance starts playing)."""
        self._pinned = self._origin

    def unpin(self) -> None:
        """Back to the moving estimate (the utterance has played out)."""
        self._pinned = None

    @property
    def pinned(self) -> bool:
        return self._pinned is not None

    def resync(self) -> None:
        """Forgets the estimate: the next report is taken as it is (after an underflow, the device lost time)."""
        self._last = self._origin if self._origin is not None else self._last
        self._origin = None

    def take_lost(self) -> float:
        lost, self.lost_s = self.lost_s, 0.0
        return lost


__all__ = ["DacClock"]
