"""What a resuming session re-sends after its stream ends, and how its events stay one story (pure, no I/O).

The server side of each scenario is written as the events the real session core emits, in its order:
``SentenceStarted``, one ``Audio``, ``SentenceFinished``, then any ``Flushed``.
"""

from __future__ import annotations

from dataclasses import replace

from voicedesk.engine.clients.replay import EventRelay, ReplayLog, merged, settings_of
from voicedesk.engine.events import (
    Audio,
    Cancelled,
    Closed,
    Error,
    Flushed,
    SentenceFinished,
    SentenceStarted,
    SessionConfig,
)
from voicedesk.engine.protocol import Cancel, Close, Configure, Flush, SendText

VOICE = settings_of(SessionConfig("af_heart", 1.0))
PCM = b"\x01\x00" * 2400  # 0.1 s


def spoken(log: ReplayLog, seq: int, text: str) -> None:
    for event in (SentenceStarted(seq, text), Audio(seq, PCM), SentenceFinished(seq, 0.1)):
        assert log.observe(event)


def test_a_finished_and_flushed_utterance_leaves_nothing_in_flight() -> None:
    log = ReplayLog(VOICE)
    assert log.idle
    log.sent(SendText("Hello there. "))
    log.sent(SendText("How are you?"))
    log.sent(Flush("turn-1"))
    assert not log.idle
    spoken(log, 0, "Hello there.")
    spoken(log, 1, "How are you?")
    assert not log.idle  # the flush is not confirmed yet
    log.observe(Flushed(1, "turn-1"))
    assert log.idle
    assert log.replay() == (VOICE, [])
    assert log.progress == 3


def test_text_the_server_still_held_is_sent_again_from_the_first_unheard_sentence() -> None:
    log = ReplayLog(VOICE)
    for fragment in ("The sun is ", "up. Birds sing", " now. We walk", " to the lake."):
        log.sent(SendText(fragment))
    log.sent(Flush("turn-1"))
    spoken(log, 0, "The sun is up.")
    log.observe(SentenceStarted(1, "Birds sing now."))  # synthesis began; no audio yet when the stream ended
    log.stream_lost()
    config, commands = log.replay()
    assert config == VOICE
    assert commands == [SendText(" Birds sing"), SendText(" now. We walk"), SendText(" to the lake."), Flush("turn-1")]
    assert (
        "".join(c.text for c in commands if isinstance(c, SendText)).split()
        == "Birds sing now. We walk to the lake.".split()
    )


def test_a_sentence_whose_audio_began_is_not_sent_again() -> None:
    log = ReplayLog(VOICE)
    log.sent(SendText("First one here. Second one here."))
    log.observe(SentenceStarted(0, "First one here."))
    log.observe(Audio(0, PCM))  # the stream ends before its sentence_end
    log.stream_lost()
    assert log.replay()[1] == [SendText(" Second one here.")]


def test_text_without_a_flush_is_trimmed_as_it_is_spoken() -> None:
    log = ReplayLog(VOICE)
    log.sent(SendText("One. Two is here. Three"))
    spoken(log, 0, "One. Two is here.")  # short sentences merged by the chunker: one sentence, two periods
    assert log.replay()[1] == [SendText(" Three")]
    assert not log.idle  # "Three" is still held by the server's chunker


def test_a_failed_sentence_counts_as_said() -> None:
    log = ReplayLog(VOICE)
    log.sent(SendText("Bad one. Good one."))
    log.observe(SentenceStarted(0, "Bad one."))
    log.observe(Error("synthesis_failed", "the model failed", seq=0))
    log.stream_lost()
    assert log.replay()[1] == [SendText(" Good one.")]


def test_settings_replay_in_order_and_fold_once_their_text_is_said() -> None:
    log = ReplayLog(VOICE)
    log.sent(SendText("In the first voice. "))
    log.sent(Configure("am_adam", 1.2))
    log.sent(SendText("In the second voice."))
    assert log.replay() == (
        VOICE,
        [SendText("In the first voice. "), Configure("am_adam", 1.2), SendText("In the second voice.")],
    )
    spoken(log, 0, "In the first voice.")
    # What is left was sent after the change: a new stream opens with it, and only the rest is re-sent.
    adam = merged(VOICE, Configure("am_adam", 1.2))
    assert adam.voice == "am_adam" and adam.speed == 1.2
    assert log.replay() == (adam, [SendText("In the second voice.")])
    log.sent(Configure(speed=0.8))
    spoken(log, 1, "In the second voice.")
    assert log.idle and log.replay() == (merged(adam, Configure(speed=0.8)), [])
    assert log.replay()[0].voice == "am_adam"  # a change of speed alone keeps the voice


def test_a_cancel_drops_what_came_before_and_its_answer_is_awaited() -> None:
    log = ReplayLog(VOICE)
    log.sent(SendText("Long text that is cut off. More of it."))
    log.sent(Flush("turn-1"))
    log.observe(SentenceStarted(0, "Long text that is cut off."))
    log.sent(Cancel())
    log.sent(SendText("New words."))
    # Until Cancelled arrives, the server's events are about the cancelled text: they claim nothing.
    spoken(log, 0, "Long text that is cut off.")
    assert log.observe(Flushed(0, "turn-1"))
    assert log.replay()[1] == [Cancel(), SendText("New words.")]
    assert log.observe(Cancelled(0))
    assert log.replay()[1] == [SendText("New words.")]
    spoken(log, 1, "New words.")
    assert log.idle


def test_a_cancel_nobody_asked_for_is_the_server_dropping_text_as_it_shuts_down() -> None:
    log = ReplayLog(VOICE)
    log.sent(SendText("Said before shutdown. Dropped by the server."))
    spoken(log, 0, "Said before shutdown.")
    assert not log.observe(Cancelled(0))  # not passed on: the text is said again on the next stream
    log.stream_lost()
    assert log.replay()[1] == [SendText(" Dropped by the server.")]


def test_a_shutting_down_server_answering_our_flush_as_cancelled_confirms_nothing() -> None:
    """The session core answers pending flushes (``cancelled``) when it drops queued text on shutdown."""
    log = ReplayLog(VOICE)
    log.sent(SendText("Said before shutdown. Dropped by the server."))
    log.sent(Flush("turn-1"))
    spoken(log, 0, "Said before shutdown.")
    answer = Flushed(0, "turn-1")
    if "cancelled" in Flushed.__dataclass_fields__:  # the core that answers flushes on cancel
        answer = replace(answer, cancelled=True)
        assert not log.observe(answer)
    assert not log.observe(Cancelled(0))
    log.stream_lost()
    assert log.replay()[1] == [SendText(" Dropped by the server."), Flush("turn-1")]


def test_close_is_replayed_unless_it_is_all_that_is_left() -> None:
    log = ReplayLog(VOICE)
    log.sent(SendText("Last words."))
    log.sent(Close())
    assert log.closing and not log.only_close_pending and not log.idle
    assert log.replay()[1] == [SendText("Last words."), Close()]
    spoken(log, 0, "Last words.")
    assert log.only_close_pending and not log.idle


def test_a_sentence_that_is_not_the_text_sent_still_moves_the_log_on() -> None:
    log = ReplayLog(VOICE)
    log.sent(SendText("abc def. ghi."))
    spoken(log, 0, "xyz uvw.")  # the same number of letters, other letters: resume after as many
    assert log.replay()[1] == [SendText(" ghi.")]


def test_sequence_numbers_go_on_across_streams() -> None:
    relay = EventRelay()
    first = [SentenceStarted(0, "A."), Audio(0, PCM), SentenceFinished(0, 0.1), Flushed(0, "t1")]
    assert [e for event in first for e in relay.relay(event)] == first
    assert relay.stream_ended() == []
    second = [SentenceStarted(0, "B."), Audio(0, PCM), SentenceFinished(0, 0.1), Flushed(0, "t2")]
    assert [e for event in second for e in relay.relay(event)] == [
        SentenceStarted(1, "B."),
        Audio(1, PCM),
        SentenceFinished(1, 0.1),
        Flushed(1, "t2"),
    ]
    relay.stream_ended()
    # "Nothing" on a new stream (-1) means: nothing after the last sentence the session numbered.
    assert relay.relay(Cancelled(-1)) == [Cancelled(1)]
    assert relay.relay(Flushed(-1, "t3")) == [Flushed(1, "t3")]
    assert relay.relay(Closed("closed")) == [Closed("closed")]


def test_a_start_is_held_until_its_audio_so_an_unheard_sentence_is_never_announced() -> None:
    relay = EventRelay()
    assert relay.relay(SentenceStarted(0, "Heard.")) == []
    assert relay.relay(Audio(0, PCM)) == [SentenceStarted(0, "Heard."), Audio(0, PCM)]
    assert relay.relay(SentenceFinished(0, 0.1)) == [SentenceFinished(0, 0.1)]
    assert relay.relay(SentenceStarted(1, "Never heard.")) == []
    assert relay.stream_ended() == []  # cut off before its audio: no trace of it
    assert relay.relay(SentenceStarted(0, "Never heard.")) == []  # said again on the next stream, as seq 2
    assert relay.relay(Audio(0, PCM)) == [SentenceStarted(2, "Never heard."), Audio(2, PCM)]


def test_a_sentence_cut_off_mid_audio_ends_where_its_audio_stopped() -> None:
    relay = EventRelay()
    relay.relay(SentenceStarted(0, "Cut off."))
    relay.relay(Audio(0, PCM))
    assert relay.stream_ended() == [SentenceFinished(0, 0.1)]


def test_errors_and_empty_sentences_release_their_start() -> None:
    relay = EventRelay()
    relay.relay(SentenceStarted(0, "Bad."))
    assert relay.relay(Error("synthesis_failed", "no", seq=0)) == [
        SentenceStarted(0, "Bad."),
        Error("synthesis_failed", "no", seq=0),
    ]
    relay.relay(SentenceStarted(1, "..."))
    assert relay.relay(SentenceFinished(1, 0.0)) == [SentenceStarted(1, "..."), SentenceFinished(1, 0.0)]
    relay.relay(SentenceStarted(2, "Cancelled before its audio."))
    assert relay.relay(Cancelled(2)) == [Cancelled(2)]
    assert relay.stream_ended() == []


def test_without_holding_starts_events_pass_as_they_come() -> None:
    relay = EventRelay(hold_starts=False)
    assert relay.relay(SentenceStarted(0, "Now.")) == [SentenceStarted(0, "Now.")]
