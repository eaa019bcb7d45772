"""The one rule for stale audio, on its own: what a ``Cancelled`` removes from a queue of audio and other things."""

from __future__ import annotations

from voicedesk.engine.events import Audio, Cancelled, Flushed, SentenceStarted, drop_cancelled_audio


def _audio(seq: int, seconds: float) -> Audio:
    return Audio(seq, b"\x00\x00" * round(seconds * 24_000))


def _audio_of(event):
    return (event.seq, event.duration_s) if isinstance(event, Audio) else None


QUEUE = [SentenceStarted(1, "Old."), _audio(1, 0.5), Flushed("u1"), _audio(2, 0.25), _audio(3, 1.0)]


def test_a_cancel_drops_the_audio_of_the_sentences_it_covers_and_keeps_everything_else_in_order():
    kept, dropped_s = drop_cancelled_audio(QUEUE, [Cancelled(last_seq=2)], _audio_of)
    assert list(kept) == [QUEUE[0], QUEUE[2], QUEUE[4]]
    assert dropped_s == 0.75


def test_without_a_cancel_nothing_is_dropped():
    kept, dropped_s = drop_cancelled_audio(QUEUE, [Flushed("u1"), SentenceStarted(4, "New.")], _audio_of)
    assert (list(kept), dropped_s) == (QUEUE, 0.0)


def test_the_latest_of_several_cancels_counts():
    kept, dropped_s = drop_cancelled_audio(QUEUE, [Cancelled(1), Cancelled(3)], _audio_of)
    assert (list(kept), dropped_s) == ([QUEUE[0], QUEUE[2]], 1.75)


def test_what_the_queue_holds_is_the_callers_to_say():
    frames = [("audio", 1, 0.5), ("text", None, 0.0), ("audio", 2, 0.5)]
    kept, dropped_s = drop_cancelled_audio(frames, [Cancelled(1)], lambda f: (f[1], f[2]) if f[0] == "audio" else None)
    assert (list(kept), dropped_s) == (frames[1:], 0.5)
