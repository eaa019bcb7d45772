"""A turn's bookkeeping without an engine: timeline marks from the link's mirror chunker, audio placement,
underruns charged to the sentence the listener was waiting for (engine.recorder's one rule), and a failover's
rows labelled with the engine that spoke them."""

from __future__ import annotations

import pytest

from voicedesk.app.conversation import Turn, TurnKind
from voicedesk.app.link import SessionLink
from voicedesk.app.turn_run import TurnRun
from voicedesk.engine.measure.recorder import UtteranceRecorder


def make_run() -> TurnRun:
    link = SessionLink(engine=None, label="Local")  # type: ignore[arg-type]
    link.new_turn()
    return TurnRun(Turn(1, TurnKind.AGENT, "q", "Local"), UtteranceRecorder("t"), link, "turn-1")


def pcm(seconds: float) -> bytes:
    return b"\x10\x00" * round(seconds * 24_000)


def test_marks_come_from_when_text_was_sent_and_released():
    from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker

    run = make_run()
    link = run.link
    reference = IncrementalSentenceChunker()  # what the engine's own chunker does with the same text
    released_at = []
    # Fragments 100 ms apart: no pause long enough for release on quiet (tests/engine/measure/test_recorder.py has
    # those).
    for t, fragment in ((0.1, "Well, here is the first sentence."), (0.2, " And the second one"), (0.3, " ends.")):
        chunks = reference.feed(fragment) + reference.release_ended()  # as the session's quiet release does
        released_at += [t] * len(chunks)
        link.record_sent(link.record_fragment(fragment, t), t + 0.01)
    released_at += [0.4] if reference.flush() else []
    link.record_sent(link.record_flush(0.4), 0.42)
    assert [chunk.released_s for chunk in link.leg.mirror.released] == released_at
    first = IncrementalSentenceChunker().feed("Well, here is the first sentence. And")[0]
    run.sentence_started(0, first, True)
    row = run.recorder.build(origin_s=0.0).timeline.sentences[0]
    assert row.text == first
    assert row.fragment_in_at_s == pytest.approx(0.1)
    assert row.chunk_released_at_s == pytest.approx(released_at[0])
    assert row.sent_at_s == pytest.approx(released_at[0] + 0.01)


def test_underruns_go_to_the_sentence_that_had_not_arrived_yet():
    run = make_run()
    for text in ["One.", "Two.", "Three."]:
        run.link.ledger.add(text + " ", 0.0)
    run.sentence_started(0, "One.", True)
    run.audio(0, pcm(0.5), now=1.0)
    run.sentence_started(1, "Two.", True)
    run.audio(1, pcm(0.5), now=3.0)
    run.underrun(at=2.0)  # delivered late, after sentence 1 arrived: still sentence 1's fault
    run.underrun(at=4.0)  # everything so far had arrived: waiting for a sentence not started yet
    rows = {s.seq: s.underruns for s in run.rebuild().sentences}
    assert rows == {0: 0, 1: 1}  # no phantom row for the sentence that may never come
    run.sentence_started(2, "Three.", True)
    assert run.rebuild().sentences[2].underruns == 1


def test_after_a_failover_each_row_names_the_engine_that_spoke_it():
    run = make_run()
    run.link = remote = SessionLink(engine=None, label="WebSocket")  # type: ignore[arg-type]
    remote.new_turn()
    remote.record_sent(remote.record_fragment("One. Two. ", 0.0), 0.01)
    run.sentence_started(7, "One.", True)
    run.audio(7, pcm(0.5), now=1.0)
    run.sentence_started(8, "Two.", True)  # started remotely; its audio never comes
    resumed = SessionLink(engine=None, label="Local")  # type: ignore[arg-type]
    resumed.new_turn()
    resumed.record_sent(resumed.record_fragment("Two. ", 1.5), 1.5)
    resumed.record_sent(resumed.record_flush(1.55), 1.6)
    # What the controller's failover does: the turn forgets the undelivered sentence, the new link carries on.
    run.link = resumed
    run.turn.sentences = run.turn.sentences[:1]
    assert run.sentence_started(0, "Two.", True) == 1
    run.audio(0, pcm(0.5), now=2.0)
    rows = run.rebuild().sentences
    labelled = [(s.seq, s.text, s.engine, s.engine_seq) for s in rows]
    assert labelled == [(0, "One.", "WebSocket", 7), (1, "Two.", "Local", 0)]
    # The resumed sentence's marks are the local link's (its origin: the resent text's arrival at 1.5 s).
    assert run.timeline.origin_s == 1.5
    assert (rows[1].chunk_released_at_s, rows[1].sent_at_s) == (pytest.approx(0.05), pytest.approx(0.1))
    assert rows[1].first_byte_at_s == pytest.approx(0.5)


def test_audio_is_placed_end_to_end_and_kept_for_the_wav():
    run = make_run()
    run.link.ledger.add("A b. C d.", 0.0)
    run.sentence_started(0, "A b.", False)
    assert run.audio(0, pcm(0.25), now=0.5) == (0, True)
    assert run.audio(0, pcm(0.25), now=0.6) == (0, False)
    run.sentence_started(1, "C d.", False)
    assert run.audio(1, pcm(0.5), now=0.7) == (1, True)
    assert [s.audio_start_s for s in run.turn.sentences] == [0.0, 0.5]
    assert run.audio(7, pcm(0.1), now=0.8) is None  # a sentence never announced
    assert len(run.pcm) == 3
    assert run.link.ledger.delivered_cursor == len("A b. C d.")
