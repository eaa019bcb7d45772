"""Regression: an utterance whose length is an exact multiple of the callback size must still report its end.

Found by the app's SageMaker test: 1.95 s of audio is 225 callbacks of 208 frames exactly; the last callback
was filled to the brim, the next one found the buffer drained, and ``finished`` was never reported, so
``AudioPlayer.wait_finished`` (and the app's turn) waited forever.
"""

from __future__ import annotations

import numpy as np
import pytest

from voicedesk.app.playback_buffer import PlaybackBuffer


@pytest.mark.parametrize("samples", [208 * 5, 208 * 5 + 17])
def test_the_end_of_an_utterance_is_reported_whatever_its_length(samples):
    buffer = PlaybackBuffer(24_000, prebuffer_s=0.0)
    buffer.begin_utterance()
    buffer.write(np.ones(samples, dtype=np.float32), seq=0)
    buffer.end_utterance()
    out = np.zeros(208, dtype=np.float32)
    finished = [buffer.read_into(out, 0.0).finished for _ in range(8)]
    assert finished.count(True) == 1
    assert buffer.idle and buffer.played_samples == samples
