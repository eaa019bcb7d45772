"""The connection core's hand-off of resampling (``ServerConnection.take_resampling``/``resampled``): a client that
asked another rate gets each sentence's audio resampled by whoever runs the jobs (the adapter: an executor thread),
in order, at the rate asked when the sentence was queued, and a cancel drops audio still being resampled. No event
loop and no thread here: the test runs the jobs itself, in the order it chooses."""

from __future__ import annotations

import json

import numpy as np

from voicedesk.engine.audio_formats import resample
from voicedesk.engine.connection import ConnectionLimits, ServerConnection
from voicedesk.engine.events import SessionConfig
from voicedesk.engine.protocol import Cancel, Configure, Flush, SendText, encode_command
from voicedesk.engine.session import SessionCore, SessionLimits
from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker


def _tone(seconds: float, hz: float) -> bytes:
    t = np.arange(int(24_000 * seconds)) / 24_000
    return (np.sin(2 * np.pi * hz * t) * 8_000).astype("<i2").tobytes()


def _connection() -> ServerConnection:
    core = SessionCore(IncrementalSentenceChunker(), SessionConfig(max_buffer_delay_ms=200), SessionLimits())
    return ServerConnection(core, ConnectionLimits(), 0.0)


def _send(connection: ServerConnection, command: object) -> None:
    events, check = connection.receive_frame(encode_command(command), 0.0)  # type: ignore[arg-type]
    assert check is None
    connection.session_events(events)


def _finish_next_job(connection: ServerConnection, pcm: bytes) -> None:
    handed = connection.core.next_job(0.0)
    assert handed is not None
    job, started = handed
    connection.session_events(started)
    connection.session_events(connection.core.job_done(job, pcm, len(pcm) / 48_000, now=0.0))


def _take_all(connection: ServerConnection) -> list[dict | bytes]:
    out: list[dict | bytes] = []
    while (frame := connection.next_frame(0.0)) is not None:
        out.append(json.loads(frame) if isinstance(frame, str) else frame)
    return out


def test_frames_wait_for_their_resampling_and_go_out_in_order_whatever_order_the_jobs_finish_in():
    connection = _connection()
    _send(connection, Configure(sample_rate=16_000))
    first, second = _tone(0.4, 220), _tone(0.3, 330)
    _send(connection, SendText("One sentence here. Another one there."))
    _send(connection, Flush("f"))
    _finish_next_job(connection, first)
    _finish_next_job(connection, second)
    jobs = connection.take_resampling()
    assert [(job.seq, job.sample_rate) for job in jobs] == [(0, 16_000), (1, 16_000)]
    assert connection.take_resampling() == []  # each job is handed out once

    before = _take_all(connection)  # the sentence_start of the first sentence, then its audio waits
    assert [f["type"] for f in before if isinstance(f, dict)] == ["sentence_start"]
    connection.resampled(jobs[1], jobs[1].run())  # the second finishes first: nothing may overtake the first
    assert connection.next_frame(0.0) is None and connection.close_instruction is None
    connection.resampled(jobs[0], jobs[0].run())
    after = _take_all(connection)
    kinds = [f["type"] if isinstance(f, dict) else "audio" for f in after]
    assert kinds == ["audio", "sentence_end", "sentence_start", "audio", "sentence_end", "flushed"]
    # Each sentence's audio is the one-shot resampling of its 24 kHz original, tail included, before its end.
    assert after[0] == resample(first, 16_000)
    assert after[3] == resample(second, 16_000)


def test_a_new_rate_applies_to_sentences_queued_after_it_not_to_one_being_resampled():
    connection = _connection()
    _send(connection, Configure(sample_rate=16_000))
    _send(connection, SendText("One sentence here. Another one there."))
    _send(connection, Flush("f"))
    pcm = _tone(0.3, 200)
    _finish_next_job(connection, pcm)
    _send(connection, Configure(sample_rate=48_000))  # mid-stream, while the first is still being resampled
    _finish_next_job(connection, pcm)
    jobs = connection.take_resampling()
    assert [job.sample_rate for job in jobs] == [16_000, 48_000]
    for job in jobs:
        connection.resampled(job, job.run())
    audio = [f for f in _take_all(connection) if isinstance(f, bytes)]
    assert audio == [resample(pcm, 16_000), resample(pcm, 48_000)]
    assert abs(len(audio[1]) / (2 * 48_000) - len(audio[0]) / (2 * 16_000)) < 0.002


def test_a_cancel_drops_audio_still_being_resampled_and_its_late_result_is_ignored():
    connection = _connection()
    _send(connection, Configure(sample_rate=16_000))
    _send(connection, SendText("One sentence here. Another one there."))
    _finish_next_job(connection, _tone(0.5, 250))
    (job,) = connection.take_resampling()
    ahead_before = connection.core.audio_ahead_s
    _send(connection, Cancel())
    connection.resampled(job, job.run())  # arrives after the cancel: nothing of it goes out
    frames = _take_all(connection)
    assert not any(isinstance(f, bytes) for f in frames)
    assert "cancelled" in [f["type"] for f in frames if isinstance(f, dict)]
    assert connection.core.audio_ahead_s < ahead_before  # the dropped audio counts as taken (backpressure frees)


def test_a_failed_resampling_is_told_in_the_audios_place_and_the_session_goes_on():
    connection = _connection()
    _send(connection, Configure(sample_rate=8_000))
    _send(connection, SendText("One sentence here. Another one there."))
    _send(connection, Flush("f"))
    _finish_next_job(connection, _tone(0.2, 300))
    (job,) = connection.take_resampling()
    connection.resampled(job, None)
    frames = _take_all(connection)
    kinds = [f["type"] for f in frames if isinstance(f, dict)]
    assert kinds[:3] == ["sentence_start", "error", "sentence_end"]
    error = frames[1]
    assert isinstance(error, dict) and error["code"] == "synthesis_failed" and "8000 Hz" in error["message"]
    assert connection.core.audio_ahead_s == 0.0
    _finish_next_job(connection, _tone(0.2, 300))  # the next sentence is served as usual
    (later,) = connection.take_resampling()
    connection.resampled(later, later.run())
    assert any(isinstance(f, bytes) for f in _take_all(connection))
