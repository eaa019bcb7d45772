"""Removes the console's own voice from the microphone: WebRTC's audio processing (livekit's APM, AEC3).

The reference is exactly what the player handed the sound card (``AudioPlayer(tap=canceller.played)``), silence
included, and the silence the device played when the player stalled (an underrun), so the canceller's delay estimate
stays locked between utterances and across stalls. Everything runs in 10 ms frames at 16 kHz; ``played`` is called
from PortAudio's output thread and only appends to a deque.
"""

from __future__ import annotations

import time
from collections import deque

import numpy as np

RATE = 16_000
FRAME = RATE // 100
PLAYER_RATE = 24_000
PLAYER_GONE_S = 0.3
"""A player whose tap was quiet this long is closed: the microphone goes on, against silence."""
MAX_WAIT_S = 0.5
LAG_WINDOW = RATE  # one second of microphone per lag check
LAG_SEARCH = RATE // 2
LAG_EVERY = RATE // 4
TARGET_LAG = RATE // 10
DRIFT = RATE // 25
"""The lag is moved back to its target once it drifts this far (40 ms): short stalls the player does not see walk
it away by 25-48 ms a second under load, and a move from the edge of the search came too late (issue 29.3)."""
RESTORABLE = LAG_WINDOW // 2
"""The most ``without_echo`` gives: the second it keeps, less half a second to fit on."""
FIT_TAPS = RATE // 64
FIT_LEAD = RATE // 500
"""``without_echo``'s echo path: 16 ms from 2 ms before the measured lag (a resampler's filter reaches back)."""
ECHO_GONE_S = 8.0
"""A reply played this long with no echo of it in the microphone: the loudspeakers were swapped for a headset, so
the microphone passes as it came again (AEC3 with no echo path takes 15-30 dB off a person)."""


class EchoCanceller:
    def __init__(self) -> None:
        import soxr
        from livekit import rtc

        self._rtc = rtc
        self._apm = rtc.AudioProcessingModule(echo_cancellation=True, noise_suppression=False, high_pass_filter=True)
        self._played: deque[tuple[np.ndarray, int]] = deque(maxlen=2000)  # ~17 s of player blocks if nobody reads
        self._padded = 0  # microphone samples paired with silence while the player's tap was quiet (a stall)
        self._last_played = 0.0
        self._fed = np.zeros(LAG_WINDOW + LAG_SEARCH, np.float32)  # the reference fed, newest last
        self._heard = np.zeros(LAG_WINDOW, np.float32)  # the microphone before cancelling, newest last
        self._recent = np.zeros(LAG_SEARCH + RATE // 10, np.float32)  # the reference fed (kept across a realign)
        self._since_check = 0
        self._resample = soxr.ResampleStream(PLAYER_RATE, RATE, 1, dtype="float32")
        self._reference = np.zeros(0, np.float32)
        self._mic = np.zeros(0, np.float32)
        self._started = False
        self._moved_to: int | None = None  # a lag off target seen at the last check
        self._skip = 0  # reference samples a move still has to skip
        self.locked = True
        """False for the half second after a move, while the canceller finds the echo again: ``Listener`` ignores
        speech over it (waiting for a clear check instead left a person unheard, one with a headset for 2 s)."""
        self.echo_heard = False
        """Whether the lag search found the reference in the microphone (and has not missed it for ``ECHO_GONE_S``
        of playing since): otherwise the microphone passes as it came, since with no echo path (a headset) AEC3 took
        15-30 dB off a person over the first 4-8 s of a reply."""
        self.realigned = 0
        """Times the reference was moved back into step with its echo."""
        self.lag_s: float | None = None
        """The echo's last clearly measured delay after the reference fed with it."""
        self._unheard_s = 0.0  # playing time since the last clear echo

    def played(self, block: np.ndarray, lost: int = 0) -> None:
        """The player's tap: one block (24 kHz float32) just handed to the device, after ``lost`` frames of silence
        the device played that nobody wrote (it stalled: the echo of that silence is silence)."""
        self._played.append((block.copy(), lost))
        self._last_played = time.monotonic()

    def process(self, mic: np.ndarray) -> np.ndarray:
        """Microphone samples (16 kHz float32) in, echo-free samples out: whole 10 ms frames, each paired with the
        next 10 ms of what the device played. What cannot be paired yet waits for the player's next block.

        Pairing in step keeps the delay the canceller sees what the devices make it, however late this code runs: the
        reference fed as it arrived made a late event loop look like an echo path that jumps, and the echo leaked.
        (PortAudio's own DAC and capture times drifted by more than a second in 7 s through PulseAudio.)"""
        if not self._started:  # what played before listening began has no echo to pair with
            self._started = True
            self._played.clear()
        chunks = []
        for _ in range(len(self._played)):
            block, lost = self._played.popleft()
            # A long stall was already paired with silence (the tap went quiet): only the rest of it is owed.
            lost -= min(lost, self._padded * PLAYER_RATE // RATE)
            self._padded = 0
            if lost:
                chunks.append(self._resample.resample_chunk(np.zeros(lost, np.float32)))
            chunks.append(self._resample.resample_chunk(block))
        self._reference = np.concatenate([self._reference, *chunks])
        skipped = min(self._skip, len(self._reference))
        self._reference, self._skip = self._reference[skipped:], self._skip - skipped
        self._mic = np.concatenate([self._mic, mic])
        frames = len(self._mic) // FRAME
        if time.monotonic() - self._last_played < PLAYER_GONE_S and len(self._mic) < MAX_WAIT_S * RATE:
            frames = min(frames, len(self._reference) // FRAME)
        out = np.empty(frames * FRAME, np.float32)
        self._padded += max(0, frames * FRAME - len(self._reference))
        for i in range(frames):
            reference = np.pad(self._reference[i * FRAME : (i + 1) * FRAME], (0, FRAME))[:FRAME]
            heard = self._mic[i * FRAME : (i + 1) * FRAME]
            self._apm.process_reverse_stream(self._frame(reference))
            self._remember(reference, heard)
            self._apm.process_stream(frame := self._frame(heard))  # it adapts even while ``heard`` passes as it came
            out[i * FRAME : (i + 1) * FRAME] = np.frombuffer(frame.data, np.int16) / 32768 if self.echo_heard else heard
        self.consumed = self._mic[: frames * FRAME]
        """The microphone's samples ``process`` just returned cleaned, in the same order."""
        self._mic, self._reference = self._mic[frames * FRAME :], self._reference[frames * FRAME :]
        if len(self._reference) > 3 * RATE:  # the microphone stalled while the player went on: in step again from here
            self._reference = np.zeros(0, np.float32)
        if self._since_check >= (LAG_EVERY if self.echo_heard else LAG_EVERY // 5):  # the first echo found at once
            self._keep_in_step()
        return out

    def echo_likeness(self, window: np.ndarray, age: int) -> float:
        """How much ``window`` (cleaned microphone ending ``age`` samples before the newest) looks like what was
        played up to ``LAG_SEARCH`` before it: the best normalised correlation, near 1 for the console's own voice
        leaking through an echo path that moved (the canceller passes it until it finds it again), low for a person."""
        end = len(self._recent) - age
        reference = self._recent[max(0, end - len(window) - LAG_SEARCH) : end]
        if len(reference) < len(window):
            return 0.0
        n = 1 << (len(reference) + len(window)).bit_length()
        dots = np.fft.irfft(np.fft.rfft(reference, n) * np.conj(np.fft.rfft(window, n)), n)
        dots = dots[: len(reference) - len(window) + 1]
        energies = np.convolve(reference**2, np.ones(len(window)), "valid")
        return float(np.max(np.abs(dots) / np.sqrt(energies * float(window @ window) + 1e-12)))

    def without_echo(self, n: int) -> np.ndarray | None:
        """The newest ``n`` microphone samples less a linear estimate of the echo, fitted on the second before them;
        None with no echo measured. AEC3's suppressor takes the first 100-200 ms of a person speaking over the
        console for echo (60 dB off: Whisper lost "stop" of "stop, turn off the kitchen lights"); a linear fit has
        no suppressor, so it keeps the words, with the echo 10-15 dB down. (Silencing the frames that held no more
        than the fit's residue took the quiet "st" of "stop" with it in 3 runs of 6.)"""
        if self.lag_s is None or not self.echo_heard or not 0 < n <= RESTORABLE:
            return None
        start = LAG_SEARCH - round(self.lag_s * RATE) + FIT_LEAD
        x, y = self._fed[start : start + LAG_WINDOW], self._heard  # y[i] holds the echo of x[i - FIT_LEAD ...]
        # An echo ahead of its reference (a stall counted too long, under load): the newest samples' reference has
        # not been fed yet, so nothing is taken off them.
        x = np.pad(x, (0, LAG_WINDOW - len(x)))
        fit_x, fit_y = x[: LAG_WINDOW - n], y[: LAG_WINDOW - n]
        if float(fit_x @ fit_x) < 1e-4 or float(fit_y @ fit_y) < 1e-4:
            return None  # nothing played or heard to fit on (just after a move)
        size = 1 << (2 * len(fit_x)).bit_length()
        spectrum = np.fft.rfft(fit_x, size)
        auto = np.fft.irfft(spectrum * np.conj(spectrum), size)[:FIT_TAPS]
        cross = np.fft.irfft(np.fft.rfft(fit_y, size) * np.conj(spectrum), size)[:FIT_TAPS]
        taps = np.arange(FIT_TAPS)
        normal = auto[np.abs(taps[:, None] - taps[None, :])] + 1e-3 * auto[0] * np.eye(FIT_TAPS)
        path = np.linalg.solve(normal, cross)
        echo = np.convolve(x[LAG_WINDOW - n - FIT_TAPS + 1 :], path, "valid")
        return (y[LAG_WINDOW - n :] - echo).astype(np.float32)

    def _remember(self, reference: np.ndarray, mic: np.ndarray) -> None:
        self._fed = np.concatenate([self._fed[FRAME:], reference])
        self._recent = np.concatenate([self._recent[FRAME:], reference])
        self._heard = np.concatenate([self._heard[FRAME:], mic])
        self._since_check += FRAME

    def _keep_in_step(self) -> None:
        """The device played silence the tap never saw (a stall), or the streams' clocks drift: the echo then comes
        later after its reference (or sooner), until out of the canceller's reach. So find the lag (the
        cross-correlation's peak, phase transform) and, when it drifts from its target, move the reference back."""
        checked_s, self.locked, self._since_check = self._since_check / RATE, True, 0
        if float(np.mean(self._fed[-LAG_WINDOW:] ** 2)) < 1e-6:
            return  # nothing played
        self._unheard_s += checked_s
        if self.echo_heard and self._unheard_s >= ECHO_GONE_S:
            self.echo_heard, self.lag_s = False, None
        if float(np.mean(self._heard**2)) < 1e-7:
            return  # nothing heard (a quiet headset costs no search)
        n = 2 * (LAG_WINDOW + LAG_SEARCH)
        spectrum = np.conj(np.fft.rfft(self._heard, n)) * np.fft.rfft(self._fed, n)
        correlation = np.fft.irfft(spectrum / (np.abs(spectrum) + 1e-9), n)[: LAG_SEARCH + RATE // 10]
        # The fed history starts LAG_SEARCH earlier than the microphone's: a peak at k is an echo LAG_SEARCH - k late
        # (or up to 100 ms early: a stall counted too long puts the echo before its reference, unseen by AEC3).
        lag, peak = LAG_SEARCH - int(np.argmax(correlation)), correlation.max() / (np.std(correlation) + 1e-12)
        if peak < 6:
            return  # no clear echo (speech over it, or too little of it)
        moved, self._moved_to, self.lag_s = self._moved_to, None, lag / RATE
        if peak >= 10:
            self.echo_heard, self._unheard_s = True, 0.0
        if abs(lag - TARGET_LAG) > DRIFT and peak >= 10:  # echo peaks were 12-80, chance ones 6-9
            if moved is None or abs(lag - moved) > 2 * FRAME:
                self._moved_to = lag  # a person speaking over it makes chance peaks: move once it is seen twice
                return
            if lag > TARGET_LAG:  # the echo comes later than its reference: delay the reference
                self._reference = np.concatenate([np.zeros(lag - TARGET_LAG, np.float32), self._reference])
            else:  # sooner: skip some reference (little of it waits here, so also what comes next)
                self._skip = TARGET_LAG - lag
            self.realigned += 1
            self.locked = False
            self._fed[:] = 0.0  # what was fed before the move says nothing about the lag after it
            self._heard[:] = 0.0
            self._since_check = -LAG_EVERY  # the next check (and the lock) waits for half a second of it

    def _frame(self, samples: np.ndarray) -> object:
        pcm = (np.clip(samples, -1.0, 1.0) * 32767).astype(np.int16)
        return self._rtc.AudioFrame(bytearray(pcm.tobytes()), RATE, 1, FRAME)
