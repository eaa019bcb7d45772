"""The jitter buffer's policy on plain arrays: prebuffer, underruns, onsets, interrupt, growth."""

from __future__ import annotations

import numpy as np

from voicedesk.app.playback_buffer import PlaybackBuffer

RATE = 1000  # one sample per millisecond keeps the arithmetic readable


def _read(buffer: PlaybackBuffer, frames: int, dac_time: float = 0.0):
    out = np.full(frames, np.nan, dtype=np.float32)
    result = buffer.read_into(out, dac_time)
    assert np.isfinite(out).all(), "every output sample must be written"
    return out, result


def test_waits_for_the_prebuffer_then_plays_in_order():
    buffer = PlaybackBuffer(RATE, prebuffer_s=0.1)
    buffer.begin_utterance()
    buffer.write(np.arange(1, 51, dtype=np.float32), seq=0)
    out, result = _read(buffer, 20)
    assert not out.any() and result.frames_played == 0 and not result.underrun
    buffer.write(np.arange(51, 121, dtype=np.float32), seq=1)
    out, result = _read(buffer, 40, dac_time=5.0)
    assert out.tolist() == list(range(1, 41))
    assert [(o.seq, o.dac_time) for o in result.onsets] == [(0, 5.0)]
    out, result = _read(buffer, 40, dac_time=7.0)
    assert out.tolist() == list(range(41, 81))
    # seq 1 starts at sample 51, i.e. 10 samples into this block.
    assert [(o.seq, o.dac_time) for o in result.onsets] == [(1, 7.0 + 10 / RATE)]


def test_short_utterance_plays_without_reaching_the_prebuffer():
    buffer = PlaybackBuffer(RATE, prebuffer_s=0.5)
    buffer.begin_utterance()
    buffer.write(np.ones(30, dtype=np.float32), seq=0)
    buffer.end_utterance()
    out, result = _read(buffer, 50)
    assert out[:30].tolist() == [1.0] * 30 and not out[30:].any()
    assert result.finished and not result.underrun
    assert buffer.underruns == 0 and buffer.idle


def test_underrun_counted_once_per_stall_and_only_while_more_audio_is_expected():
    buffer = PlaybackBuffer(RATE, prebuffer_s=0.01)
    _read(buffer, 10)  # silence before any speech is not an underrun
    buffer.begin_utterance()
    buffer.write(np.ones(20, dtype=np.float32))
    _read(buffer, 15)
    _, result = _read(buffer, 15)  # 5 left, 10 missing
    assert result.underrun
    _read(buffer, 15)  # still starved: same stall
    assert buffer.underruns == 1
    assert buffer.underrun_frames == 25
    buffer.write(np.ones(40, dtype=np.float32))
    _, result = _read(buffer, 15)
    assert not result.underrun
    buffer.end_utterance()
    _read(buffer, 40)
    assert buffer.underruns == 1


def test_a_stall_is_reported_once_when_it_starts_and_with_its_length_when_it_ends():
    """What the latency panel's headline counts: one gap the listener heard, however many callbacks it lasted."""
    buffer = PlaybackBuffer(RATE, prebuffer_s=0.01)
    buffer.begin_utterance()
    buffer.write(np.ones(20, dtype=np.float32))
    results = [_read(buffer, 15)[1] for _ in range(5)]  # 20 played, then 55 frames of silence over 4 callbacks
    assert [r.underrun for r in results] == [False, True, True, True, True]
    assert [r.stall_started for r in results] == [False, True, False, False, False]
    assert all(r.stall_ended_s is None for r in results)
    buffer.write(np.ones(30, dtype=np.float32))
    _, result = _read(buffer, 15)
    assert not result.stall_started and result.stall_ended_s == 55 / RATE
    _, result = _read(buffer, 20)  # 15 left, then starved again: a second stall
    assert result.stall_started
    buffer.end_utterance()
    _, result = _read(buffer, 15)  # the utterance ends during the stall: it ends with it
    assert result.finished and result.stall_ended_s == 5 / RATE
    assert buffer.underruns == 2


def test_interrupt_fades_out_quickly_and_drops_the_rest():
    buffer = PlaybackBuffer(RATE, prebuffer_s=0.0)
    buffer.begin_utterance()
    buffer.write(np.ones(1000, dtype=np.float32), seq=0)
    _read(buffer, 100)
    heard = buffer.interrupt(fade_s=0.03)
    assert heard == 100
    out, _ = _read(buffer, 100)
    fade = out[:30]
    assert fade[0] == 1.0 and fade[-1] == 0.0 and np.all(np.diff(fade) <= 0)
    assert not out[30:].any()
    out, result = _read(buffer, 100)
    assert not out.any() and not result.underrun
    assert buffer.idle


def test_a_pause_fades_out_holds_the_rest_and_resumes_where_it_faded_with_nothing_lost():
    """A tentative barge-in: no stall counted while held, the held audio plays on faded in, onsets keep their times."""
    buffer = PlaybackBuffer(RATE, prebuffer_s=0.0)
    buffer.begin_utterance()
    buffer.write(np.arange(1, 301, dtype=np.float32), seq=0)
    buffer.write(np.arange(301, 401, dtype=np.float32), seq=1)
    buffer.end_utterance()
    _read(buffer, 100)
    assert buffer.pause(fade_s=0.03) and not buffer.pause() and buffer.paused and buffer.playing
    out, result = _read(buffer, 100)
    assert np.allclose(out[:30], np.arange(101, 131) * np.linspace(1, 0, 30))
    assert not out[30:].any() and result.frames_played == 0 and not result.finished
    buffer.read_into(np.zeros(100, np.float32), 0.0, lost_frames=50)  # the device lost time while held
    assert buffer.underruns == 0 and buffer.played_samples == 100
    buffer.resume(fade_s=0.03)
    out, result = _read(buffer, 310, dac_time=9.0)
    assert np.allclose(out[:30], np.arange(101, 131) * np.linspace(0, 1, 30))
    assert out[30:300].tolist() == list(range(131, 401)) and not out[300:].any()  # all of it, in order
    assert [(o.seq, o.dac_time) for o in result.onsets] == [(1, 9.0 + 200 / RATE)]
    assert result.finished and buffer.underruns == 0


def test_interrupting_a_paused_buffer_fades_nothing_more_and_keeps_what_was_heard():
    buffer = PlaybackBuffer(RATE, prebuffer_s=0.0)
    buffer.begin_utterance()
    buffer.write(np.ones(1000, dtype=np.float32))
    _read(buffer, 100)
    buffer.pause(fade_s=0.03)
    _read(buffer, 50)
    assert buffer.interrupt(fade_s=0.03) == 100  # heard up to the pause
    out, _ = _read(buffer, 100)
    assert not out.any() and not buffer.paused and buffer.idle
    buffer.resume()  # a late resume finds nothing to play
    assert not _read(buffer, 100)[0].any()


def test_ring_grows_without_losing_or_reordering_samples():
    buffer = PlaybackBuffer(RATE, prebuffer_s=0.0, capacity_s=1.0)  # 1024-sample ring
    buffer.begin_utterance()
    signal = np.arange(5000, dtype=np.float32)
    buffer.write(signal[:700])
    first, _ = _read(buffer, 600)
    buffer.write(signal[700:])  # wraps and grows while 100 samples are still queued
    rest, _ = _read(buffer, 4400)
    assert np.array_equal(np.concatenate([first, rest]), signal)


def test_time_the_device_lost_mid_utterance_is_a_stall_and_one_just_after_it_is_the_same_gap():
    """Silence the device played because it stopped pulling: a stall when heard (mid-utterance, after its first
    sample); a second loss within 0.25 s of audio lengthens it; one before the first sample or after the last is
    the stream starting or speech ending, not a gap."""
    buffer = PlaybackBuffer(RATE, prebuffer_s=0.0)
    buffer.begin_utterance()
    buffer.write(np.ones(2000, dtype=np.float32), seq=0)
    out = np.zeros(10, dtype=np.float32)
    assert not buffer.read_into(out, 0.0, lost_frames=900).stall_started  # before the first sample: not heard
    result = buffer.read_into(out, 0.0, lost_frames=1000)
    assert result.stall_started and result.stall_ended_s == 1.0 and result.frames_played == 10
    result = buffer.read_into(out, 0.0, lost_frames=500)  # 10 ms of audio later: the same gap, longer
    assert not result.stall_started and result.stall_ended_s == 0.5 and buffer.underruns == 1
    for _ in range(30):
        buffer.read_into(out, 0.0)
    assert buffer.read_into(out, 0.0, lost_frames=200).stall_started and buffer.underruns == 2  # 300 ms later
    assert buffer.underrun_frames == 1700
    buffer.end_utterance()
    while not buffer.read_into(out, 0.0).finished:
        pass
    assert not buffer.read_into(out, 0.0, lost_frames=400).stall_started  # after the last: speech ended


def test_the_device_clock_tells_the_time_the_device_lost_also_across_a_resync():
    from voicedesk.app.dac_clock import DacClock

    clock = DacClock(RATE)
    clock.block(100, 10.0)
    clock.block(100, 10.1 + 0.004)  # a wobble: nothing lost
    assert clock.take_lost() == 0.0
    clock.block(100, 10.2 + 1.0)  # the device stood still for a second
    assert abs(clock.take_lost() - 1.0) < 0.01 and clock.take_lost() == 0.0
    clock.resync()  # an underflow: the next report is taken as it is, the time lost still told
    clock.block(100, 11.3 + 0.5)
    assert abs(clock.take_lost() - 0.5) < 0.01
