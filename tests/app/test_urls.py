"""URL checks and the consent rule for secrets over unencrypted connections (issue 11)."""

from __future__ import annotations

import pytest

from voicedesk.app.urls import (
    AGENT_SCHEMES,
    ENGINE_SCHEMES,
    SecretConsent,
    check_url,
    secret_needs_consent,
    url_problem,
)
from voicedesk.engine.errors import VoicedeskError


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("", "empty"),
        ("127.0.0.1:11434/v1", "must start with"),
        ("http://", "no host"),
        ("http://a b/v1", "spaces"),
        ("http://u:p@host/v1", "password"),
        ("http://host:70000/v1", "port must be a number"),
        ("http://host:80x/v1", "port must be a number"),
        ("ws://host:8080", "must start with"),
    ],
)
def test_bad_agent_urls_say_why(url, problem):
    assert problem in url_problem(url, AGENT_SCHEMES)


def test_good_urls_pass():
    assert url_problem("http://127.0.0.1:11434/v1", AGENT_SCHEMES) is None
    assert url_problem("https://api.example.com/v1", AGENT_SCHEMES) is None
    assert url_problem("wss://gpu-box:8443/invocations-bidirectional-stream", ENGINE_SCHEMES) is None
    with pytest.raises(VoicedeskError, match=r"Example: http://127\.0\.0\.1"):
        check_url("ollama", AGENT_SCHEMES, "chat server URL", "http://127.0.0.1:11434/v1")


@pytest.mark.parametrize(
    ("url", "needs"),
    [
        ("http://127.0.0.1:11434/v1", False),
        ("http://localhost:8080/v1", False),
        ("http://[::1]:8080/v1", False),
        ("http://127.8.9.10/v1", False),
        ("https://api.example.com/v1", False),
        ("wss://box:8443", False),
        ("http://192.168.1.20:8080/v1", True),
        ("http://llm.lan/v1", True),
        ("ws://gpu-box:8080", True),
        ("http://localhost.evil.com/v1", True),
    ],
)
def test_a_secret_over_plain_http_needs_consent_unless_it_stays_on_this_machine(url, needs):
    assert secret_needs_consent(url) is needs


def test_consent_is_per_host_and_can_be_changed():
    consent = SecretConsent()
    assert consent.decided("http://127.0.0.1/v1") is True
    assert consent.decided("http://box/v1") is None
    consent.record("http://box:1/v1", allowed=False)
    assert consent.decided("http://box:2/other") is False
    consent.record("http://box/v1", allowed=True)
    assert consent.decided("http://box/v1") is True
    assert consent.decided("http://other/v1") is None
