"""The echo canceller against an echo whose delay walks away (issue 29.3): a player that stalls for 20 ms twice a
second without its tap knowing, as PortAudio's late callbacks did under load, the echo 80 ms late at half level."""

from __future__ import annotations

import numpy as np
import soxr

from voicedesk.app.voice.echo import PLAYER_RATE, RATE, EchoCanceller


def test_an_echo_that_walks_away_is_kept_in_step_and_cancelled():
    rng = np.random.default_rng(29)
    seconds, step = 30, PLAYER_RATE // 50  # the player's 20 ms blocks
    bursts = rng.standard_normal(seconds * PLAYER_RATE).astype(np.float32) * 0.2
    bursts *= np.repeat(rng.random(seconds * 4) < 0.7, PLAYER_RATE // 4)  # speech-like: a quarter second on or off
    device, stalls = [], 0
    for at in range(0, len(bursts), step):
        if at and at % (PLAYER_RATE // 2) == 0:
            device.append(np.zeros(PLAYER_RATE // 50, np.float32))  # the device ran dry; the tap never knew
            stalls += 1
        device.append(bursts[at : at + step])
    played = soxr.resample(np.concatenate(device), PLAYER_RATE, RATE).astype(np.float32)
    mic = 0.5 * np.concatenate([np.zeros(RATE * 8 // 100, np.float32), played])[: len(played)]

    canceller, lags, out = EchoCanceller(), [], []
    mic_step = RATE // 50
    for i, at in enumerate(range(0, seconds * PLAYER_RATE, step)):
        canceller.played(bursts[at : at + step])
        out.append(canceller.process(mic[i * mic_step : (i + 1) * mic_step]))
        lags.append(canceller.lag_s)
    clean = np.concatenate(out)

    walked = stalls * 0.02
    assert walked > 0.5  # without moves, the echo would end more than half a second late: past the lag search
    settled = [lag for lag in lags[len(lags) // 5 :] if lag is not None]
    assert max(settled) < 0.2 and np.mean(np.array(settled) > 0.02) > 0.9, settled  # never near the search's edges
    tail = slice(len(clean) // 2, len(clean))
    raw = mic[: len(clean)][tail]
    taken_db = 10 * np.log10(np.mean(raw**2) / np.mean(clean[tail] ** 2))
    assert taken_db > 12, taken_db  # the moves never let it leak for long (0.8 dB when they went the wrong way)
