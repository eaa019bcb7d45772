"""Text settings on the wire and through the session: the ``config`` fields ``lexicon``, ``markup``, ``urls``,
``code``, ``emoji`` and ``phonemes``; bad entries refused by name; a session's lexicon merged over the server's;
each sentence carrying the settings it was released under. No model, no sockets."""

from __future__ import annotations

import json

import pytest

from tests.engine.test_session_core import PCM_100MS
from voicedesk.endpoint.speech.request import parse_invocation, parse_openai_speech
from voicedesk.engine.connection import ConnectionLimits, ServerConnection
from voicedesk.engine.errors import ErrorCode, VoicedeskError
from voicedesk.engine.events import Error, SentenceFinished, SessionConfig
from voicedesk.engine.protocol import (
    ClientProtocol,
    Configure,
    ProtocolError,
    configure_of,
    decode_command,
    encode_command,
    encode_event,
)
from voicedesk.engine.session import SessionCore, SessionLimits
from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker
from voicedesk.engine.text.frontend.lexicon import Lexicon, LexiconEntry, parse_lexicon
from voicedesk.engine.text.frontend.settings import TextSettings

SIOBHAN = {"word": "Siobhan", "phonemes": "ʃɪvˈɔn"}
NGUYEN = {"word": "Nguyen", "respelling": "win", "case_sensitive": True}


def test_config_with_text_options_round_trips() -> None:
    frame = json.dumps(
        {
            "type": "config",
            "lexicon": [SIOBHAN, NGUYEN],
            "markup": "ssml",
            "urls": "skip",
            "code": "read",
            "emoji": "name",
            "phonemes": True,
        }
    )
    command = decode_command(frame)
    assert command == Configure(
        lexicon=parse_lexicon([SIOBHAN, NGUYEN]), markup="ssml", urls="skip", code="read", emoji="name", phonemes=True
    )
    assert decode_command(encode_command(command)) == command
    assert json.loads(encode_command(command))["lexicon"] == [SIOBHAN, NGUYEN]


@pytest.mark.parametrize(
    ("entries", "named"),
    [
        ([SIOBHAN, {"word": "Aoife", "phonemes": "ˈiːfəX"}], ["lexicon entry 1", "'Aoife'", "'X'"]),
        ([{"word": "  ", "phonemes": "ə"}], ["lexicon entry 0", "empty"]),
        ([{"word": "Aoife"}], ["lexicon entry 0", "'Aoife'", "phonemes"]),
        ([SIOBHAN, SIOBHAN], ["lexicon entry 1", "'Siobhan'", "already"]),
        ([{"word": "x", "phonemes": "ə", "colour": 1}], ["lexicon entry 0", "colour"]),
        ("Siobhan=ʃɪvˈɔn", ["list of entries"]),
    ],
)
def test_a_bad_lexicon_is_refused_with_bad_lexicon_naming_the_entry(entries: object, named: list[str]) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_command(json.dumps({"type": "config", "lexicon": entries, "request_id": "r1"}))
    assert caught.value.code == ErrorCode.BAD_LEXICON
    assert caught.value.request_id == "r1"
    for part in named:
        assert part in caught.value.message, caught.value.message
    assert "phonemes use Kokoro's symbols" in caught.value.message  # what to do


@pytest.mark.parametrize(("key", "value"), [("markup", "html"), ("urls", True), ("emoji", "keep"), ("phonemes", "y")])
def test_a_bad_text_option_is_refused_naming_it(key: str, value: object) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_command(json.dumps({"type": "config", key: value}))
    assert caught.value.code == ErrorCode.BAD_MESSAGE
    assert f"'{key}'" in caught.value.message


def test_sentence_end_carries_phonemes_only_when_there_are_some() -> None:
    [plain] = encode_event(SentenceFinished(3, 1.0, (), 0.5))
    assert "phonemes" not in json.loads(plain)
    [frame] = encode_event(SentenceFinished(3, 1.0, (), 0.5, "ʃɪvˈɔn"))
    assert json.loads(frame)["phonemes"] == "ʃɪvˈɔn"
    assert ClientProtocol().receive(frame) == [SentenceFinished(3, 1.0, (), 0.5, "ʃɪvˈɔn")]


def test_a_client_opens_with_its_lexicon_and_non_default_options() -> None:
    lexicon = parse_lexicon([SIOBHAN])
    config = SessionConfig(voice="am_adam", text=TextSettings(markup="plain", lexicon=lexicon), report_phonemes=True)
    body = json.loads(encode_command(configure_of(config)))
    assert body == {
        "type": "config",
        "voice": "am_adam",
        "speed": 1.0,
        "max_buffer_delay_ms": config.max_buffer_delay_ms,
        "lexicon": [SIOBHAN],
        "markup": "plain",
        "phonemes": True,
    }
    assert "lexicon" not in json.loads(encode_command(configure_of(SessionConfig())))


# ---- through the session and the server connection --------------------------------------------------------


def _connection(base: Lexicon) -> ServerConnection:
    core = SessionCore(IncrementalSentenceChunker(), SessionConfig(text=TextSettings(lexicon=base)), SessionLimits())
    return ServerConnection(core, ConnectionLimits(), 0.0, base_lexicon=base)


def _say(connection: ServerConnection, text: str, phonemes: str = "ðə") -> tuple[object, list]:
    connection.execute(decode_command(json.dumps({"text": text})), 0.0)
    job, _ = connection.core.next_job(0.0)
    return job, connection.core.job_done(job, PCM_100MS, 0.1, now=0.0, phonemes=phonemes)


def test_a_sessions_lexicon_is_merged_over_the_servers_and_replaces_its_own_earlier_one() -> None:
    base = parse_lexicon([SIOBHAN, {"word": "Aoife", "phonemes": "ˈifə"}])
    connection = _connection(base)
    job, _ = _say(connection, "Hello Siobhan.")
    assert job.text_settings.lexicon == base  # the server's entries apply from the start

    mine = {"word": "Siobhan", "phonemes": "ʃəvˈɔn"}
    events = connection.execute(decode_command(json.dumps({"type": "config", "lexicon": [mine, NGUYEN]})), 0.0)
    assert events == []
    job, _ = _say(connection, "Hello Siobhan.")
    lexicon = job.text_settings.lexicon
    assert lexicon.lookup("Siobhan") == LexiconEntry("Siobhan", phonemes="ʃəvˈɔn")  # the session's wins
    assert lexicon.lookup("aoife") is not None  # the server's others stay
    assert lexicon.lookup("Nguyen") is not None and lexicon.lookup("nguyen") is None

    connection.execute(decode_command(json.dumps({"type": "config", "lexicon": []})), 0.0)
    job, _ = _say(connection, "Hello Siobhan.")
    assert job.text_settings.lexicon == base  # the session's entries are gone, the server's are not


def test_a_refused_config_leaves_the_settings_as_they_were() -> None:
    connection = _connection(Lexicon())
    connection.execute(decode_command(json.dumps({"type": "config", "markup": "plain", "lexicon": [SIOBHAN]})), 0.0)
    before = connection.core.config
    events, _ = connection.receive_frame(json.dumps({"type": "config", "markup": "ssml", "lexicon": [{"word": ""}]}), 1)
    assert [type(e) for e in events] == [Error] and events[0].code == ErrorCode.BAD_LEXICON
    assert connection.core.config == before


def test_settings_apply_to_sentences_released_after_the_config_and_phonemes_only_when_asked() -> None:
    connection = _connection(Lexicon())
    job, events = _say(connection, "One sentence here.", phonemes="wˈʌn")
    assert job.text_settings == TextSettings()
    assert [e.phonemes for e in events if isinstance(e, SentenceFinished)] == [None]
    connection.execute(decode_command(json.dumps({"type": "config", "emoji": "name", "phonemes": True})), 0.0)
    job, events = _say(connection, "Another one here.", phonemes="ɐnˈʌðəɹ")
    assert job.text_settings == TextSettings(emoji="name")
    assert [e.phonemes for e in events if isinstance(e, SentenceFinished)] == ["ɐnˈʌðəɹ"]


# ---- HTTP routes ---------------------------------------------------------------------------------------------


def test_http_routes_take_the_lexicon_and_text_options() -> None:
    limits = SessionLimits()
    speech = parse_invocation(
        json.dumps({"text": "Hi Siobhan.", "lexicon": [SIOBHAN], "markup": "plain"}).encode(), limits
    )
    assert speech.text_change.lexicon == parse_lexicon([SIOBHAN]) and speech.text_change.markup == "plain"
    openai = parse_openai_speech(json.dumps({"input": "Hi.", "voice": "alloy", "lexicon": [NGUYEN]}).encode(), limits)
    assert openai.text_change.lexicon == parse_lexicon([NGUYEN])
    with pytest.raises(VoicedeskError) as caught:
        parse_invocation(json.dumps({"text": "Hi.", "lexicon": [{"word": "Hi", "phonemes": "h1"}]}).encode(), limits)
    assert caught.value.code == ErrorCode.BAD_LEXICON and "'Hi'" in caught.value.message


# ---- SSML documents cut into sentences ---------------------------------------------------------------------


def test_each_chunk_of_an_ssml_document_reaches_the_front_end_as_a_document() -> None:
    core = SessionCore(IncrementalSentenceChunker(), SessionConfig(), SessionLimits())
    ssml = (
        '<speak xml:lang="en-US">Hello there, my friend. How are you? '
        '<prosody rate="slow">Slow. Very slow.</prosody> The end.</speak>'
    )
    core.send_text(ssml, 0.0)
    core.flush(0.0)
    jobs = []
    while (handed := core.next_job(0.0)) is not None:
        job, _ = handed
        jobs.append(job)
        core.job_done(job, PCM_100MS, 0.1, now=0.0)
    assert [job.text for job in jobs] == [
        '<speak xml:lang="en-US">Hello there, my friend.',
        'How are you? <prosody rate="slow">Slow. Very slow.</prosody> The end.</speak>',
    ]
    assert [job.markup_text for job in jobs] == [
        '<speak xml:lang="en-US">Hello there, my friend.</speak>',
        '<speak xml:lang="en-US">How are you? <prosody rate="slow">Slow. Very slow.</prosody> The end.</speak>',
    ]
    # A plain sentence after the document is plain again.
    core.send_text("Plain words follow here.", 0.0)
    core.flush(0.0)
    job, _ = core.next_job(0.0)
    assert job.markup_text is None


def test_an_ssml_element_over_the_ceiling_is_cut_into_well_formed_documents() -> None:
    """Issue 34.9: a ``<prosody>`` of about 1,000 phonemes is cut between words; each piece reopens and closes the
    element, so the front-end reads every word slowly instead of refusing the first piece and reading the rest
    as plain text."""
    from voicedesk.engine.text.frontend.ssml import ssml_units

    words = " ".join(f"word{i}" for i in range(150))
    core = SessionCore(IncrementalSentenceChunker(), SessionConfig(), SessionLimits())
    core.synthesize(f'<speak><prosody rate="slow">{words}</prosody> Done.</speak>', 0.0)
    documents = []
    while (handed := core.next_job(0.0)) is not None:
        job, _ = handed
        documents.append(job.markup_text or job.text)
        core.job_done(job, PCM_100MS, 0.1, now=0.0)
    assert len(documents) >= 2
    read = [unit for document in documents for unit in ssml_units(document, TextSettings(markup="ssml"))[0]]
    spoken = [unit.text for unit in read]
    assert spoken[:150] == words.split() and spoken[-1].startswith("Done")
    assert {unit.rate for unit in read[:150]} == {read[0].rate} and read[0].rate < 1.0 == read[-1].rate


def test_a_long_sentence_is_not_split_inside_an_override_or_an_ssml_chunk() -> None:
    from voicedesk.engine.text.sentence_split import split_at_clause

    text = "Tell [my good friend, Siobhan Nguyen](/ʃɪvˈɔn nwˈɪn/) that we go to the lake tomorrow, and bring food."
    head, tail = split_at_clause(text, 30)
    assert head.endswith("tomorrow,") and tail == "and bring food."
    core = SessionCore(IncrementalSentenceChunker(), SessionConfig(), SessionLimits())
    ssml = "<speak>We will go to the lake tomorrow, all of us, and we will bring a lot of food with us.</speak>"
    core.synthesize(ssml, 0.0)
    job, _ = core.next_job(0.0, split_above_phonemes=30)
    assert job.text == ssml


def test_a_chunk_cut_from_the_middle_of_a_line_is_read_as_text_by_the_front_end() -> None:
    """The agent pauses after "March 15," and the session releases it on quiet: "2025." comes as a chunk of its own,
    which markdown alone would read as an empty ordered-list item (0.0 s of speech). The session knows it
    continues a line; a chunk after a newline begins one ("2. Then…" stays a list item)."""
    from voicedesk.engine.text.frontend import FrontEnd

    core = SessionCore(IncrementalSentenceChunker(), SessionConfig(max_buffer_delay_ms=100), SessionLimits())
    core.send_text("Your alarm is set for 6:45 AM on March 15,", 0.0)
    core.timer(1.0)  # quiet: what is held goes out
    core.send_text(" 2025.\n2. Then sleep.", 1.0)
    core.flush(1.0)
    jobs = []
    while (handed := core.next_job(1.0)) is not None:
        job, _ = handed
        jobs.append(job)
        core.job_done(job, PCM_100MS, 0.1, now=1.0)
    assert [(job.text, job.text_settings.continues_line) for job in jobs] == [
        ("Your alarm is set for 6:45 AM on March 15,", False),
        ("2025.", True),
        ("2. Then sleep.", False),
    ]
    front_end = FrontEnd()
    said = [" ".join(u.text for u in front_end.to_spoken(job.text, "a", job.text_settings).units) for job in jobs]
    assert said[1:] == ["2025.", "Then sleep."]


def test_a_whole_request_is_chunked_for_the_language_of_its_own_voice() -> None:
    """An AWS-style request naming a Japanese voice on an English session: its long sentences are estimated as the
    Japanese G2P reads them (``phoneme_estimate``), as a session configured with that voice would."""
    text = "今日はいい天気ですね、明日も晴れるでしょうか、週末は家族と一緒に海へ行く予定なので、"
    text = (text + "とても楽しみにしています。") * 3

    def calls(core: SessionCore, request_voice: str | None) -> list[str]:
        core.synthesize(text, 0.0, voice=request_voice)
        jobs = []
        while (handed := core.next_job(0.0)) is not None:
            jobs.append(handed[0])
            core.job_done(handed[0], PCM_100MS, 0.1, now=0.0)
        return [job.text for job in jobs]

    english = SessionCore(IncrementalSentenceChunker(), SessionConfig(voice="af_heart"), SessionLimits())
    japanese = SessionCore(IncrementalSentenceChunker(), SessionConfig(voice="jf_alpha"), SessionLimits())
    assert calls(english, "jf_alpha") == calls(japanese, None)
    assert len(calls(english, None)) > len(calls(japanese, None))  # English weights cut it more often
