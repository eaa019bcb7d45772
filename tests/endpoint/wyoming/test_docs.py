"""docs/wyoming.md must keep up with the command and the protocol it serves."""

from __future__ import annotations

import argparse

from wyoming.tts import SynthesizeStopped

from tests.support.fake_hf_cache import REPO_ROOT
from voicedesk.engine.commands import build_parser

DOC = REPO_ROOT / "docs" / "wyoming.md"
SERVED_EVENTS = (
    "describe",
    "info",
    "synthesize",
    "synthesize-start",
    "synthesize-chunk",
    "synthesize-stop",
    SynthesizeStopped().event().type,
    "audio-start",
    "audio-chunk",
    "audio-stop",
    "ping",
    "pong",
    "select-program",
    "error",
)


def wyoming_options() -> list[str]:
    subparsers = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser = subparsers.choices["wyoming"]
    return [s for action in parser._actions for s in action.option_strings if s.startswith("--") and s != "--help"]


def test_every_option_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    options = wyoming_options()
    assert "--no-zeroconf" in options and "--engine" in options
    for option in options:
        assert f"`{option}`" in text, f"docs/wyoming.md does not document {option}"


def test_every_event_served_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    for kind in SERVED_EVENTS:
        assert f"`{kind}`" in text, f"docs/wyoming.md does not mention the {kind} event"


def test_the_readme_says_how_to_add_it_to_home_assistant() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Use it from Home Assistant", 1)[1].split("\n### ", 1)[0]
    assert "Wyoming Protocol" in section and "10200" in section and "voice" in section
