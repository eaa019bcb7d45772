"""The window's wording of errors and its status messages (pure): no raw codes, no nested brackets, advice that
fits where the error happened, and no message outliving its cause."""

from __future__ import annotations

from voicedesk.app.messages import error_text, failover_text
from voicedesk.app.notices import INFO_TTL_S, NoticeBoard, Topic
from voicedesk.engine.errors import ErrorCode, LocalErrorCode, VoicedeskError, VoiceError
from voicedesk.engine.events import Error


def test_raw_codes_and_nested_brackets_never_reach_the_person():
    text = error_text(
        "ws://127.0.0.1:8080/x dropped mid-session (no close frame). (connection)", engine_kind="websocket"
    )
    assert text == "ws://127.0.0.1:8080/x dropped mid-session (no close frame)."
    assert error_text(
        Error(ErrorCode.SYNTHESIS_FAILED, "The model failed (out of memory (CUDA)) [synthesis_failed]")
    ) == ("The model failed (out of memory — CUDA).")
    assert "(" not in error_text("Nothing to say (empty_text)")


def test_failover_text_has_one_level_of_brackets():
    text = failover_text("WebSocket", "ws://box dropped mid-session (no close frame). (connection)", 3)
    assert text == (
        "The WebSocket engine failed mid-reply: ws://box dropped mid-session (no close frame). "
        "Continuing on the local engine from sentence 3."
    )
    assert text.count("(") == 1 and "connection)" not in text


def test_local_advice_is_its_own_field_and_is_shown_for_the_local_engine_only():
    error = VoiceError(
        "Voice 'bf_lily' is a Kokoro voice but is not downloaded. Voices here: af_heart.",
        "Get it with `voicedesk models fetch --voices bf_lily` (on an offline machine `voicedesk models import DIR`).",
    )
    local = error_text(error, engine_kind="local")
    assert local.startswith("Voice 'bf_lily' is a Kokoro voice") and "voicedesk models fetch" in local
    remote = error_text(error, engine_kind="sagemaker")
    assert "voicedesk models" not in remote
    assert "SageMaker endpoint does not have the voice 'bf_lily'" in remote
    assert "kept speaking in the voice it had" in remote
    lost = VoicedeskError(LocalErrorCode.CONNECTION, "Lost it.", "Run `voicedesk models fetch`.")
    assert error_text(lost, engine_kind="websocket") == "Lost it."
    assert error_text(lost, engine_kind="local") == "Lost it. Run `voicedesk models fetch`."


def test_exceptions_and_plain_strings_are_tidied():
    assert error_text(RuntimeError("boom")) == "boom."
    assert error_text(ValueError()) == "ValueError."
    assert error_text("Already ends with a question?") == "Already ends with a question?"


def test_a_message_goes_when_its_cause_goes():
    board = NoticeBoard()
    board.post("Could not reach ws://box.", "error", Topic.ENGINE, now=0.0)
    assert board.current(1.0).text == "Could not reach ws://box."
    board.post("Stopped — heard up to “hello”", "info", Topic.TURN, now=2.0)
    assert board.current(3.0).topic is Topic.TURN
    assert board.current(2.0 + INFO_TTL_S + 0.1).topic is Topic.ENGINE  # info fades; the error stays
    board.clear(Topic.ENGINE)  # a later reply succeeded
    assert board.current(20.0) is None
    assert [n.text for n in board.log] == ["Could not reach ws://box.", "Stopped — heard up to “hello”"]


def test_errors_do_not_expire_and_dismiss_clears_all():
    board = NoticeBoard()
    board.post("Voice missing.", "warning", "voice", now=0.0)
    assert board.next_expiry(0.0) is None
    assert board.current(10_000.0).text == "Voice missing."
    board.post("Saved.", "info", "general", now=1.0)
    assert board.next_expiry(1.0) == 1.0 + INFO_TTL_S
    board.dismiss()
    assert board.current(2.0) is None and len(board.log) == 2
