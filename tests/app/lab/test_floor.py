"""The floor's arithmetic on a timeline with known marks (pure), and which fragment it models."""

from __future__ import annotations

import pytest

from voicedesk.app.lab.floor import BareForward, first_fragment, floor_figures
from voicedesk.engine.measure.timeline import TimelineBuilder


def timeline_with_first_fragment(text: str):  # type: ignore[no-untyped-def]
    builder = TimelineBuilder("streaming #1", origin_s=10.0)
    builder.describe(0, text)
    for stage, t in (("fragment_in", 10.0), ("chunk_released", 10.3), ("sent", 10.3), ("first_byte", 10.9)):
        builder.mark(0, stage, t)
    builder.measure(0, "leading_silence_s", 0.05)
    return builder.build()


def test_floor_is_arrival_plus_bare_forward_plus_its_leading_silence():
    timeline = timeline_with_first_fragment("Sure, I can help with that.")
    figures = floor_figures(timeline, BareForward("Sure, I can help with that.", 0.5, 0.02))
    assert figures["available"] is True
    assert figures["fragment_arrival_s"] == pytest.approx(0.3)
    assert figures["floor_s"] == pytest.approx(0.3 + 0.5 + 0.02)
    assert figures["ttfa_s"] == pytest.approx(0.95)  # first byte at 0.9 s + 50 ms of leading silence
    assert figures["ratio"] == pytest.approx(0.95 / 0.82)


def test_no_floor_without_a_matching_forward_says_why():
    timeline = timeline_with_first_fragment("Sure, I can help with that.")
    assert floor_figures(timeline, "the model does not run in this process (remote engine)") == {
        "available": False,
        "why": "the model does not run in this process (remote engine)",
    }
    other = floor_figures(timeline, BareForward("Something else.", 0.5, 0.0))
    assert other["available"] is False and "not 'Something else.'" in other["why"]


def test_the_modelled_fragment_is_the_first_chunk_of_the_streamed_reply():
    reply = "Sure, I can help with that. The kitchen lights are off, and the door is locked."
    assert first_fragment(reply) == "Sure, I can help with that."
    assert first_fragment("One two three four, five six.") == "One two three four,"  # the early first fragment
    assert first_fragment("Hi") == "Hi"
