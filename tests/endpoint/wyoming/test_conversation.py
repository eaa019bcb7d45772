"""The Wyoming TTS state machine on its own: Wyoming events and session events in, actions out (no I/O)."""

from __future__ import annotations

import pytest
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error as WyomingError
from wyoming.event import Event as WyomingEvent
from wyoming.info import Describe, Info, SelectProgram
from wyoming.ping import Ping, Pong
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
    SynthesizeTextFormat,
    SynthesizeVoice,
)

from voicedesk.endpoint.wyoming.catalog import VoiceCatalog
from voicedesk.endpoint.wyoming.conversation import PROGRAM_NAME, Action, Hangup, Reply, TtsConversation, build_info
from voicedesk.engine.events import Audio, Closed, Error, Flushed, SentenceFinished, SentenceStarted
from voicedesk.engine.protocol import Configure, Flush, SendText

CATALOG = VoiceCatalog.build(["af_heart", "am_adam", "bf_emma"], "af_heart")
CHUNK = 4  # samples per audio-chunk, small so splitting shows


def conversation(max_chars: int = 1000) -> TtsConversation:
    return TtsConversation(
        build_info(CATALOG, "local", "1.0"), CATALOG, PROGRAM_NAME, max_chars=max_chars, samples_per_chunk=CHUNK
    )


def replies(actions: list[Action]) -> list[WyomingEvent]:
    return [a.event for a in actions if isinstance(a, Reply)]


def kinds(actions: list[Action]) -> list[str]:
    return [a.event.type if isinstance(a, Reply) else type(a).__name__ for a in actions]


def refused(actions: list[Action], code: str) -> str:
    """Asserts the actions are exactly an error event with ``code`` and a hang-up; returns the error's text."""
    assert kinds(actions) == ["error", "Hangup"]
    error = WyomingError.from_event(replies(actions)[0])
    assert error.code == code
    return error.text


def test_describe_and_ping_are_answered_at_once() -> None:
    conv = conversation()
    [info] = replies(conv.client_event(Describe().event()))
    program = Info.from_event(info).tts[0]
    assert program.name == PROGRAM_NAME and program.supports_synthesize_streaming
    [pong] = replies(conv.client_event(Ping(text="x").event()))
    assert Pong.is_type(pong.type) and pong.data["text"] == "x"
    assert conv.client_event(SelectProgram(PROGRAM_NAME).event()) == []
    assert conv.client_event(WyomingEvent(type="run-pipeline")) == []  # events it does not serve are dropped


def test_synthesize_sends_text_and_flush_and_answers_one_audio_cycle() -> None:
    conv = conversation()
    actions = conv.client_event(Synthesize(text="Hello there.").event())
    assert actions == [SendText("Hello there."), Flush("wyoming-1")]
    assert conv.busy
    assert conv.session_event(SentenceStarted(0, "Hello there.")) == []
    pcm = bytes(range(20))  # 10 samples → chunks of 4, 4, 2
    audio = conv.session_event(Audio(0, pcm))
    assert kinds(audio) == ["audio-start", "audio-chunk", "audio-chunk", "audio-chunk"]
    start = AudioStart.from_event(replies(audio)[0])
    assert (start.rate, start.width, start.channels) == (24_000, 2, 1)
    chunks = [AudioChunk.from_event(e) for e in replies(audio)[1:]]
    assert b"".join(c.audio for c in chunks) == pcm
    assert [c.samples for c in chunks] == [4, 4, 2]
    assert [(c.rate, c.width, c.channels) for c in chunks] == [(24_000, 2, 1)] * 3
    assert conv.session_event(SentenceFinished(0, 0.1)) == []
    done = conv.session_event(Flushed(0, "wyoming-1"))
    assert kinds(done) == ["audio-stop"]
    assert not conv.busy


def test_chunk_timestamps_count_the_audio_of_the_request() -> None:
    conv = conversation()
    conv.client_event(Synthesize(text="Hi.").event())
    sentence_one = conv.session_event(Audio(0, bytes(2 * 24_000)))  # one second
    sentence_two = conv.session_event(Audio(1, bytes(8)))
    stamps = [AudioChunk.from_event(e).timestamp for e in replies(sentence_one + sentence_two)[1:]]
    assert stamps == sorted(stamps) and stamps[0] == 0 and stamps[-1] == 1000
    stop = AudioStop.from_event(replies(conv.session_event(Flushed(1, "wyoming-1")))[0])
    assert stop.timestamp == 1000  # 24,004 samples


def test_streaming_feeds_chunks_as_they_come_and_ends_with_synthesize_stopped() -> None:
    conv = conversation()
    assert conv.client_event(SynthesizeStart(voice=SynthesizeVoice(name="am_adam")).event()) == [
        Configure(voice="am_adam")
    ]
    assert conv.client_event(SynthesizeChunk("Good morning").event()) == [SendText("Good morning")]
    assert conv.client_event(SynthesizeChunk("").event()) == []
    assert conv.client_event(SynthesizeChunk(" to you.").event()) == [SendText(" to you.")]
    # Audio may come before the stream ends: that is the point of streaming.
    assert kinds(conv.session_event(Audio(0, bytes(8)))) == ["audio-start", "audio-chunk"]
    # The whole text, repeated for servers that cannot stream, is not spoken twice.
    assert conv.client_event(Synthesize(text="Good morning to you.").event()) == []
    assert conv.client_event(SynthesizeStop().event()) == [Flush("wyoming-1")]
    done = conv.session_event(Flushed(0, "wyoming-1"))
    assert kinds(done) == ["audio-stop", "synthesize-stopped"]
    assert SynthesizeStopped.is_type(replies(done)[1].type)
    # The next request speaks with the default again: the session is told so.
    assert conv.client_event(Synthesize(text="Bye.").event()) == [
        Configure(voice="af_heart"),
        SendText("Bye."),
        Flush("wyoming-2"),
    ]


def test_a_stream_with_nothing_to_say_still_gets_a_whole_answer() -> None:
    conv = conversation()
    conv.client_event(SynthesizeStart().event())
    conv.client_event(SynthesizeChunk("   ").event())
    conv.client_event(SynthesizeStop().event())
    assert kinds(conv.session_event(Flushed(-1, "wyoming-1"))) == ["audio-start", "audio-stop", "synthesize-stopped"]


def test_requests_on_one_connection_are_answered_in_order() -> None:
    conv = conversation()
    conv.client_event(Synthesize(text="One.").event())
    conv.client_event(Synthesize(text="Two.", voice=SynthesizeVoice(name="bf_emma")).event())
    first = conv.session_event(Audio(0, bytes(4))) + conv.session_event(Flushed(0, "wyoming-1"))
    second = conv.session_event(Audio(1, bytes(4))) + conv.session_event(Flushed(1, "wyoming-2"))
    assert kinds(first) == kinds(second) == ["audio-start", "audio-chunk", "audio-stop"]
    assert not conv.busy


def test_a_voice_is_chosen_by_name_or_language() -> None:
    conv = conversation()
    british = conv.client_event(Synthesize(text="Hi.", voice=SynthesizeVoice(language="en-GB")).event())
    assert british[0] == Configure(voice="bf_emma")
    american = conv.client_event(Synthesize(text="Hi.", voice=SynthesizeVoice(language="en_US")).event())
    assert american[0] == Configure(voice="af_heart")  # the default, since it speaks that language
    same = conv.client_event(Synthesize(text="Hi.", voice=SynthesizeVoice(name="af_heart", speaker="x")).event())
    assert same == [SendText("Hi."), Flush("wyoming-3")]


@pytest.mark.parametrize(
    ("event", "code", "says"),
    [
        (Synthesize(text="Hi.", voice=SynthesizeVoice(name="af_hart")).event(), "unknown_voice", "af_heart"),
        (Synthesize(text="Hi.", voice=SynthesizeVoice(language="de_DE")).event(), "unknown_voice", "en_US"),
        (Synthesize(text="  \n").event(), "empty_text", "empty"),
        (Synthesize(text="x" * 1001).event(), "text_too_long", "1,000"),
        (WyomingEvent(type="synthesize", data={"text": "Hi", "text_format": "rtf"}), "bad_message", "'ssml'"),
        (WyomingEvent(type="synthesize", data={}), "bad_message", "malformed"),
        (SynthesizeChunk("Hi.").event(), "bad_message", "synthesize-start first"),
        (SynthesizeStop().event(), "bad_message", "synthesize-start first"),
        (SelectProgram("piper").event(), "bad_message", PROGRAM_NAME),
    ],
)
def test_bad_input_gets_an_error_then_the_connection_ends(event: WyomingEvent, code: str, says: str) -> None:
    conv = conversation()
    assert says in refused(conv.client_event(event), code)
    assert conv.finished
    assert conv.client_event(Describe().event()) == []  # nothing more is served


def test_a_stream_over_the_length_limit_is_refused() -> None:
    conv = conversation(max_chars=10)
    conv.client_event(SynthesizeStart().event())
    assert conv.client_event(SynthesizeChunk("123456").event()) == [SendText("123456")]
    assert "11 characters" in refused(conv.client_event(SynthesizeChunk("12345").event()), "text_too_long")
    assert conv.busy  # the session still holds its text: the adapter must cancel it


def test_a_second_stream_start_inside_a_stream_is_refused() -> None:
    conv = conversation()
    conv.client_event(SynthesizeStart().event())
    refused(conv.client_event(SynthesizeStart().event()), "bad_message")


def test_engine_errors_end_an_open_request_but_not_an_idle_connection() -> None:
    idle = conversation()
    assert idle.session_event(Error("idle_timeout", "closed for idling")) == []
    assert idle.session_event(Closed("idle_timeout")) == []
    assert not idle.finished

    busy = conversation()
    busy.client_event(Synthesize(text="Hi.").event())
    assert refused(busy.session_event(Error("synthesis_failed", "boom", seq=0)), "synthesis_failed") == "boom"

    lost = conversation()
    lost.client_event(SynthesizeStart().event())
    assert "connection lost" in refused(lost.session_event(Closed("connection lost")), "connection")


def test_audio_and_flushes_that_belong_to_no_request_are_dropped() -> None:
    conv = conversation()
    assert conv.session_event(Audio(0, bytes(8))) == []
    assert conv.session_event(Flushed(0, "someone-else")) == []
    conv.client_event(Synthesize(text="Hi.").event())
    assert conv.session_event(Flushed(0, "wyoming-99")) == []
    assert conv.busy


def test_hangup_is_the_last_action() -> None:
    actions = conversation().client_event(SynthesizeChunk("x").event())
    assert isinstance(actions[-1], Hangup)


def test_ssml_is_read_as_ssml_and_the_next_text_request_as_text_again() -> None:
    conv = conversation()
    ssml = '<speak>Hello <say-as interpret-as="characters">HA</say-as>.</speak>'
    actions = conv.client_event(Synthesize(text=ssml, text_format=SynthesizeTextFormat.SSML).event())
    assert actions[:2] == [Configure(markup="ssml"), SendText(ssml)]
    actions = conv.client_event(Synthesize(text="<speak>also SSML, by auto</speak>").event())
    assert actions[:2] == [Configure(markup="auto"), SendText("<speak>also SSML, by auto</speak>")]
    actions = conv.client_event(Synthesize(text="Plain again.").event())
    assert actions[0] == SendText("Plain again.")  # nothing to change
