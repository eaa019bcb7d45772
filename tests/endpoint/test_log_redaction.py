"""Credentials in query strings never reach the log: uvicorn logs a WebSocket upgrade's path with its query."""

from __future__ import annotations

import logging

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.support.fast_synth import start_fast_server
from voicedesk.endpoint.log_safety import REDACTED, redact_query
from voicedesk.engine.protocol import BIDI_PATH

SECRET = "s3cr3t-t0ken-never-logged"


@pytest.mark.parametrize(
    "query", [f"?token={SECRET}&sample_rate=16000", f"?sample_rate=16000?token={SECRET}", f"?a=1;t={SECRET}"]
)
async def test_a_refused_requests_whole_query_is_redacted_in_the_log(caplog, monkeypatch, query):
    caplog.set_level(logging.INFO)
    # uvicorn's own logging set-up (run in-process by other tests) may leave its loggers at WARNING and stop their
    # records at the "uvicorn" logger: this test reads uvicorn's INFO lines.
    monkeypatch.setattr(logging.getLogger("uvicorn"), "propagate", True)
    caplog.set_level(logging.INFO, logger="uvicorn.error")
    caplog.set_level(logging.INFO, logger="uvicorn.access")
    running = start_fast_server(token="the-real-token")
    try:
        with pytest.raises(InvalidStatus):
            async with connect(f"{running.ws_url}{BIDI_PATH}{query}"):
                pass
    finally:
        running.stop()
    lines = [r.getMessage() for r in caplog.records]
    assert not [line for line in lines if SECRET in line]
    upgrade = [line for line in lines if BIDI_PATH in line and "?" in line]
    assert upgrade, lines  # the line is still written, its query hidden whole (a token may hide anywhere in it)
    assert f"{BIDI_PATH}?{REDACTED}" in upgrade[0] and " 401" in upgrade[0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/p?token=abc", f"/p?token={REDACTED}"),
        ("/p?sample_rate=16000&api_key=zzz", f"/p?sample_rate=16000&api_key={REDACTED}"),
        ("/p?X-Amz-Signature=ab&lang=en", f"/p?X-Amz-Signature={REDACTED}&lang=en"),
        ("/p?q=eyJhbGciOi.eyJzdWIi.c2ln", f"/p?q={REDACTED}"),  # a JWT under any name
        ("/p?v=AKIAABCDEFGHIJKLMNOP", f"/p?v={REDACTED}"),  # an AWS key id
        ("/p?v=A1b2C3d4E5f6G7h8I9j0K1l2M3", f"/p?v={REDACTED}"),  # long and random-looking
        ('"GET /a?voice=af_heart&sample_rate=24000 HTTP/1.1"', '"GET /a?voice=af_heart&sample_rate=24000 HTTP/1.1"'),
        ("/no/query", "/no/query"),
        ("/p?a=1;token=abc", f"/p?a=1;token={REDACTED}"),
        ("/p?sample_rate=16000?token=abc", f"/p?sample_rate=16000?token={REDACTED}"),
        ("/p?pwd=hunter2&code=4f1x", f"/p?pwd={REDACTED}&code={REDACTED}"),
    ],
)
def test_redaction_hides_credentials_and_keeps_the_rest(text: str, expected: str) -> None:
    assert redact_query(text) == expected


def test_per_connection_info_lines_and_the_espeak_fallbacks_warnings_are_limited(caplog):
    """A client reconnecting into its cap wrote uvicorn's per-WebSocket lines each time (issue 34.9)."""
    from voicedesk.endpoint.log_safety import ServerLogGuard, guard_server_logs

    logger = logging.getLogger("test.per-connection")
    logger.addFilter(ServerLogGuard())
    caplog.set_level(logging.INFO, logger=logger.name)
    for _ in range(50):
        logger.info("connection open")
        logger.info('%s - "WebSocket %s" [accepted]', "127.0.0.9:1", "/invocations-bidirectional-stream")
        logger.info("session %s opened", "abc")  # other INFO lines pass
    lines = [r.getMessage() for r in caplog.records if r.name == logger.name]
    assert lines.count("connection open") == 1 and len([x for x in lines if "[accepted]" in x]) == 1
    assert lines.count("session abc opened") == 50
    guard_server_logs()
    assert any(isinstance(f, ServerLogGuard) for f in logging.getLogger("phonemizer").filters)
