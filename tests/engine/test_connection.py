"""The server connection core alone (``engine.connection.ServerConnection``), with a fake clock: frames in, frames
and a close out. No socket, no model, no event loop: the synthesizer is played by hand (``_run_jobs``)."""

from __future__ import annotations

import json

from voicedesk.engine.connection import DECODE_OFF_LOOP_BYTES, ConnectionLimits, ServerConnection, decode
from voicedesk.engine.errors import CloseCode, ErrorCode
from voicedesk.engine.events import Closed, Error, Event, SessionConfig
from voicedesk.engine.limits import REFUSAL_HOLD_MAX_S, REFUSAL_QUIET_S, JunkBudget, JunkByAddress, TokenBucket
from voicedesk.engine.protocol import Cancel, Close, Configure, Flush, SendText, encode_command
from voicedesk.engine.session import SessionCore, SessionLimits
from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker

PCM_100MS = b"\x00\x00" * 2400


def _connection(now: float = 0.0, junk: JunkBudget | None = None, **limits: object) -> ServerConnection:
    core = SessionCore(IncrementalSentenceChunker(), SessionConfig(max_buffer_delay_ms=200), SessionLimits())
    return ServerConnection(core, ConnectionLimits(**limits), now, junk=junk)  # type: ignore[arg-type]


def _feed(connection: ServerConnection, frame: str | bytes, now: float) -> list[Event]:
    events, check = connection.receive_frame(frame, now)
    assert check is None
    connection.session_events(events)
    return events


def _run_jobs(connection: ServerConnection, now: float) -> None:
    """Plays the synthesizer: every job the core hands out finishes at once, with 100 ms of audio."""
    while (handed := connection.core.next_job(now)) is not None:
        job, started = handed
        connection.session_events(started)
        connection.session_events(connection.core.job_done(job, PCM_100MS, 0.1, now=now))


def _drain(connection: ServerConnection, now: float) -> list[dict | bytes]:
    """Plays an eager client: takes every queued frame."""
    out: list[dict | bytes] = []
    while (frame := connection.next_frame(now)) is not None:
        out.append(json.loads(frame) if isinstance(frame, str) else frame)
        _run_jobs(connection, now)
    return out


# ---- flow control: a fast sender is read later, never dropped ---------------------------------------------


def test_a_sender_over_the_frame_rate_is_read_later_and_every_frame_is_processed_in_order():
    connection = _connection(frames_per_s=100, frame_burst=10)
    now = 0.0
    spoken: list[str] = []
    words = [f"w{i}" for i in range(1_500)]
    waited = 0.0
    for word in words:  # a client sending all 1,500 at once: the adapter waits read_delay before each read
        delay = connection.read_delay(now)
        waited += delay
        now += delay
        assert not [e for e in _feed(connection, encode_command(SendText(word + " ")), now) if isinstance(e, Error)]
    _feed(connection, encode_command(Flush("end")), now)
    while (handed := connection.core.next_job(now)) is not None:
        job, started = handed
        spoken.append(job.text)
        connection.session_events(started)
        connection.session_events(connection.core.job_done(job, PCM_100MS, 0.1, now=now))
        while connection.next_frame(now) is not None:
            pass
    assert " ".join(spoken).split() == words  # all of them, in order
    assert connection.core.has_work is False
    # 1,490 frames beyond the burst of 10, read at 100 a second.
    assert abs(waited - 14.9) < 0.05
    assert connection.bad_frames == 0


def test_a_sender_within_the_rate_is_never_made_to_wait():
    connection = _connection(frames_per_s=100, frame_burst=10)
    for i in range(200):
        now = i * 0.02  # 50 frames a second
        assert connection.read_delay(now) == 0.0
        _feed(connection, encode_command(SendText("word ")), now)


def test_control_messages_behind_a_flood_are_processed():
    connection = _connection(frames_per_s=10, frame_burst=2)
    now = 0.0
    frames = [encode_command(SendText("Hello there friend. ")) for _ in range(20)]
    frames += [encode_command(Cancel()), encode_command(Close())]
    seen: list[Event] = []
    for frame in frames:
        now += connection.read_delay(now)
        seen += _feed(connection, frame, now)
    kinds = [type(e).__name__ for e in seen]
    assert "Cancelled" in kinds
    out = _drain(connection, now)
    assert [m["type"] for m in out if isinstance(m, dict)][-1] == "closed"
    assert connection.close_instruction == (CloseCode.NORMAL, "closed")


# ---- junk has a budget of its own ---------------------------------------------------------------------------


def test_junk_is_answered_within_its_budget_then_the_connection_is_closed_1008():
    connection = _connection(junk_per_s=2, junk_burst=5)
    for i in range(5):
        events = _feed(connection, "{not json", 0.0)
        assert [type(e) for e in events] == [Error] and events[0].code == ErrorCode.BAD_JSON, i
    events = _feed(connection, b"\xff\xfe", 0.0)
    assert events[0].code == ErrorCode.RATE_LIMITED and events[0].fatal
    assert isinstance(events[-1], Closed) and events[-1].reason == "rate_limited"
    out = _drain(connection, 0.0)
    assert [m["type"] for m in out] == ["error", "error", "error", "error", "error", "error", "closed"]
    assert connection.close_instruction == (CloseCode.POLICY_VIOLATION, "rate_limited")
    assert connection.receive_frame(encode_command(SendText("late")), 0.1) == ([], None)  # closing: ignored


def test_junk_refills_slowly_so_a_slow_junk_sender_is_closed_too():
    connection = _connection(junk_per_s=2, junk_burst=5)
    now = 0.0
    closed_at = None
    for i in range(100):
        now = i * 0.25  # four junk frames a second, twice what refills
        events = _feed(connection, '{"type": "dance"}', now)
        if any(isinstance(e, Closed) for e in events):
            closed_at = now
            break
    assert closed_at is not None and 2.0 <= closed_at <= 3.0  # 5 + 2·t = 4·t


def test_junk_budget_belongs_to_the_address_so_a_reconnecting_junk_sender_starts_empty_and_is_refused():
    by_address = JunkByAddress(junk_per_s=0.5, burst=5)
    first = _connection(junk=by_address.budget("127.0.0.9", 0.0))
    answered = [_feed(first, "{not json", 0.0)[0].code for _ in range(6)]
    assert answered == [ErrorCode.BAD_JSON] * 5 + [ErrorCode.RATE_LIMITED]
    # Closed for junk, the address is refused new connections until a frame's worth has refilled (2 s at 0.5/s).
    assert by_address.refusal_s("127.0.0.9", 0.1) == 1.9
    assert by_address.refused == 1
    assert by_address.refusal_s("127.0.0.10", 0.1) == 0  # another address is not concerned
    # Let in again, it finds the budget as it left it: one frame answered, the next closes it.
    again = _connection(2.0, junk=by_address.budget("127.0.0.9", 2.0))
    codes = [_feed(again, "{not json", 2.0)[0].code for _ in range(2)]
    assert codes == [ErrorCode.BAD_JSON, ErrorCode.RATE_LIMITED]
    assert by_address.refusal_s("127.0.0.9", 2.0) > 0


def test_junk_budgets_of_addresses_are_bounded_and_forgotten_once_refilled():
    by_address = JunkByAddress(junk_per_s=1.0, burst=2, max_addresses=3)
    for i in range(10):
        budget = by_address.budget(f"10.0.0.{i}", float(i))
        assert budget.allow(float(i)) and budget.allow(float(i)) and not budget.allow(float(i))
        assert by_address.addresses <= 3
    assert by_address.refusal_s("10.0.0.9", 9.0) > 0  # the newest, just emptied, is kept
    assert by_address.refusal_s("10.0.0.0", 9.0) == 0  # long refilled: forgotten


def test_junk_budgets_stay_bounded_when_many_addresses_empty_theirs_at_once():
    by_address = JunkByAddress(junk_per_s=1.0, burst=2, max_addresses=3)
    for i in range(10):
        budget = by_address.budget(f"10.0.1.{i}", 0.0)
        assert budget.allow(0.0) and budget.allow(0.0)
        assert by_address.addresses <= 3
    assert by_address.refusal_s("10.0.1.9", 0.0) > 0  # the newest is kept


def test_junk_at_the_refill_rate_is_answered_forever_and_valid_frames_are_not_charged_to_it():
    connection = _connection(junk_per_s=2, junk_burst=5)
    for i in range(60):
        now = i * 0.5
        assert _feed(connection, "{not json", now)[0].code == ErrorCode.BAD_JSON
        for _ in range(10):
            assert not _feed(connection, encode_command(SendText("fine ")), now)
    assert connection.bad_frames == 60


def test_token_bucket_waits_exactly_for_what_is_missing():
    bucket = TokenBucket(4.0, 2, at=10.0)
    assert bucket.take(10.0) and bucket.take(10.0) and not bucket.take(10.0)
    assert bucket.wait_s(10.0) == 0.25
    bucket.spend(10.0, 2)  # in debt
    assert bucket.wait_s(10.0) == 0.75
    assert bucket.take(10.75)


# ---- idle: only synthesis and audio taken count -------------------------------------------------------------


def test_config_and_empty_frames_do_not_keep_an_idle_session_open():
    connection = _connection(idle_timeout_s=10)
    for t in range(1, 10):  # a tiny no-op every second
        _feed(connection, encode_command(Configure(speed=1.0)), float(t))
        _feed(connection, encode_command(SendText("   ")), float(t) + 0.5)
        _feed(connection, encode_command(Flush()), float(t) + 0.6)
        _drain(connection, float(t) + 0.6)
    assert connection.next_deadline() == 10.0
    events = connection.timer(10.0)
    assert events[0].code == ErrorCode.IDLE_TIMEOUT and isinstance(events[-1], Closed)
    connection.session_events(events)
    _drain(connection, 10.0)
    assert connection.close_instruction == (CloseCode.NORMAL, "idle_timeout")


def test_text_to_speak_and_audio_taken_keep_a_session_open():
    connection = _connection(idle_timeout_s=10)
    _feed(connection, encode_command(SendText("Hello there friend. ")), 8.0)
    _feed(connection, encode_command(Flush()), 8.0)
    assert connection.next_deadline() is None  # the server owes it audio: not idle
    _run_jobs(connection, 9.0)
    _drain(connection, 15.0)  # audio taken at 15 s
    assert connection.next_deadline() == 25.0
    assert connection.last_activity == 15.0


# ---- shutdown and eviction ----------------------------------------------------------------------------------


def test_shutdown_finishes_the_current_sentence_then_closes_1001():
    connection = _connection()
    _feed(connection, encode_command(SendText("One sentence here. Another sentence there. ")), 0.0)
    _feed(connection, encode_command(Flush()), 0.0)
    job, started = connection.core.next_job(0.0)
    connection.session_events(started)
    connection.session_events(connection.shutdown(0.1))
    connection.session_events(connection.core.job_done(job, PCM_100MS, 0.1, now=0.2))
    _run_jobs(connection, 0.2)
    out = _drain(connection, 0.3)
    assert sum(isinstance(f, bytes) for f in out) >= 1
    assert connection.close_instruction is not None and connection.close_instruction[0] == CloseCode.GOING_AWAY


def test_an_evicted_session_is_told_why_and_closed_1013():
    connection = _connection()
    connection.session_events(connection.evict("full; reconnect later", 1.0))
    out = _drain(connection, 1.0)
    assert out[0]["code"] == ErrorCode.TOO_MANY_SESSIONS and out[0]["fatal"] is True
    assert out[-1] == {"type": "closed", "reason": "too_many_sessions"}
    assert connection.close_instruction == (CloseCode.TRY_AGAIN_LATER, "too_many_sessions")
    assert connection.evict("again", 2.0) == []


# ---- issue 34: valid input that costs work -----------------------------------------------------------------


def _lexicon_frame(entries: int) -> str:
    lexicon = [{"word": f"t{i}", "phonemes": "tˈɜm"} for i in range(entries)]
    return json.dumps({"type": "config", "lexicon": lexicon}, ensure_ascii=False)


def test_a_big_lexicon_is_read_as_many_frames_so_resending_it_is_slowed_not_refused():
    connection = _connection(frames_per_s=100, frame_burst=400)
    frame = _lexicon_frame(6_000)  # 300 frames' worth (LEXICON_ENTRIES_PER_FRAME)
    assert len(frame) > DECODE_OFF_LOOP_BYTES  # the adapter decodes it on a thread (``decode``)
    events, _ = connection.receive_decoded(decode(connection.codec, frame), 0.0)
    assert events == [] and len(connection.core.config.text.lexicon) == 6_000
    assert connection.read_delay(0.0) == 0.0  # the first fits in the burst
    assert _feed(connection, frame, 0.0) == []  # a second is taken too: never refused
    assert abs(connection.read_delay(0.0) - 2.02) < 0.01  # but the next read waits for 202 frames' worth
    small = _connection(frames_per_s=100, frame_burst=400)
    for _ in range(3):  # a config without a lexicon costs one frame
        _feed(small, encode_command(Configure(speed=1.2)), 0.0)
    assert small.read_delay(0.0) == 0.0


def test_refused_voices_are_counted_as_junk():
    """Each unknown voice costs the server a look-up: like junk, answered while the budget lasts, then closed."""
    connection = _connection(junk_per_s=2.0, junk_burst=3)
    refusal = Error(ErrorCode.UNKNOWN_VOICE, "no such voice")
    answers = [connection.execute(Configure(voice="zz_nobody"), 0.0, voice_error=refusal) for _ in range(4)]
    assert [[e.code for e in a if isinstance(e, Error)] for a in answers[:3]] == [[ErrorCode.UNKNOWN_VOICE]] * 3
    last = answers[3]
    assert isinstance(last[0], Error) and last[0].code == ErrorCode.RATE_LIMITED and last[0].fatal
    assert isinstance(last[-1], Closed)
    # A Kokoro voice this server does not have is a client finding out which it has (Wyoming's probe): not junk.
    probing = _connection(junk_per_s=2.0, junk_burst=3)
    for _ in range(10):
        assert probing.execute(Configure(voice="jf_alpha"), 0.0, voice_error=refusal) == [
            Error(refusal.code, "no such voice")
        ]


def test_large_bodies_are_paced_per_address():
    from voicedesk.engine.limits import BucketsByAddress

    bodies = BucketsByAddress(per_s=64_000, burst=512_000)
    assert bodies.spend_s("10.0.0.1", 0.0, 250_000) == 0.0
    assert bodies.spend_s("10.0.0.1", 0.0, 250_000) == 0.0  # within the burst
    assert abs(bodies.spend_s("10.0.0.1", 0.0, 250_000) - 238_000 / 64_000) < 1e-9  # the third waits
    assert bodies.spend_s("10.0.0.2", 0.0, 250_000) == 0.0  # another address is not slowed


def test_an_address_refused_again_and_again_is_answered_later_and_later_up_to_a_bound():
    by_address = JunkByAddress(junk_per_s=2.0, burst=40, max_addresses=3)
    now, holds = 0.0, []
    for _ in range(12):  # a client reconnecting the moment each answer comes
        holds.append(by_address.hold_s("10.0.2.1", now))
        now += holds[-1] + 0.001
    assert holds[:3] == [0.0, 0.0, 0.0]  # a few refusals are answered at once
    assert holds[3:8] == sorted(holds[3:8]) and holds[3] > 0 and holds[7] > holds[3]  # then later and later
    assert max(holds) == holds[-1] == REFUSAL_HOLD_MAX_S  # bounded
    assert by_address.hold_s("10.0.2.2", now) == 0.0  # another address is not concerned
    assert by_address.hold_s("10.0.2.1", now + REFUSAL_QUIET_S + 0.1) == 0.0  # a pause starts a new streak
    for i in range(10):
        by_address.hold_s(f"10.0.3.{i}", now)
    assert len(by_address._streaks) <= 3  # the table is bounded by max_addresses
