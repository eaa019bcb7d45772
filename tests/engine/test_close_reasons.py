"""Why a session ends and the WebSocket close code that says so: one table (engine/errors.py), and the driver's
shutdown path uses it (a session refused by a closing scheduler ends as "server shutting down", closed with 1001)."""

from __future__ import annotations

from voicedesk.engine.errors import (
    REASON_ERRORS,
    WIRE_ERRORS,
    CloseCode,
    CloseReason,
    ErrorCode,
    close_code_for_reason,
)
from voicedesk.engine.events import Closed
from voicedesk.engine.scheduler import SynthesisScheduler
from voicedesk.engine.session import SHUTDOWN_REASON, SessionCore
from voicedesk.engine.session_driver import SessionDriver
from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker


def test_each_reason_closes_with_its_wire_errors_code():
    assert close_code_for_reason(CloseReason.SHUTTING_DOWN) == CloseCode.GOING_AWAY == 1001
    assert close_code_for_reason(CloseReason.SHUTTING_DOWN) == WIRE_ERRORS[ErrorCode.SESSION_CLOSING].close_code
    assert close_code_for_reason(CloseReason.RATE_LIMITED) == CloseCode.POLICY_VIOLATION
    assert close_code_for_reason(CloseReason.IDLE) == CloseCode.NORMAL
    assert close_code_for_reason(CloseReason.CLOSED) == CloseCode.NORMAL
    assert close_code_for_reason("client went away") == CloseCode.NORMAL
    for reason, error in REASON_ERRORS.items():
        assert close_code_for_reason(reason) == WIRE_ERRORS[error].close_code


async def test_a_session_refused_by_a_closing_scheduler_ends_as_shutting_down(synthesizer):
    scheduler = SynthesisScheduler()
    await scheduler.aclose()
    core = SessionCore(IncrementalSentenceChunker())
    emitted: list[object] = []
    driver = SessionDriver(core, synthesizer, scheduler, "s1", emitted.extend, clock=lambda: 0.0)
    driver.apply(core.send_text("Good morning to you.", 0.0))
    driver.apply(core.flush(0.0))
    closed = [event for event in emitted if isinstance(event, Closed)]
    assert closed == [Closed(SHUTDOWN_REASON)]
    assert close_code_for_reason(closed[0].reason) == 1001
