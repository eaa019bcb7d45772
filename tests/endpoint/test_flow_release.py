"""Release on quiet over a real socket: an agent that sends a finished sentence and then goes quiet, without a
flush, hears it. After the text the client sends nothing at all, so only the server's own timer can release it.

The cases the issue lists: English ``. ! ? …`` (as LLM tokens leave them, with no space after, and with one),
CJK ``。！？``, a one-word reply, and the remainder of a forced early cut. The fast synthesizer (a tone per word,
50× real time) keeps this quick; one case runs through the real random-weight Kokoro.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.support.endpoint import bidi, receive_until
from tests.support.fast_synth import start_fast_server
from voicedesk.endpoint.runner import ServerThread
from voicedesk.engine.protocol import SendText, encode_command


@pytest.fixture(scope="module")
def fast_server() -> Iterator[ServerThread]:
    # A long idle timeout: here only the release timer may end the wait.
    running = start_fast_server(idle_timeout_s=120.0)
    yield running
    running.stop()


def llm_tokens(text: str) -> list[str]:
    """Pieces as an LLM streams them: each word carries the space before it; CJK comes a few characters at a time."""
    if re.search(r"[\u3000-\u9fff]", text):
        return [text[i : i + 2] for i in range(0, len(text), 2)]
    return re.findall(r"\s*\S+\s*$|\s*\S+", text)


PAUSES = [
    ("period", "I will turn off the lights.", ["I will turn off the lights."]),
    ("exclamation", "That is really great news!", ["That is really great news!"]),
    ("question", "Can you hear me now?", ["Can you hear me now?"]),
    ("ellipsis", "Let me think about that…", ["Let me think about that…"]),
    ("period and space", "I will turn off the lights. ", ["I will turn off the lights."]),
    ("cjk full stop", "我是一个机器人。", ["我是一个机器人。"]),
    ("cjk exclamation", "今天天气真好！", ["今天天气真好！"]),
    ("cjk question", "你今天好吗？", ["你今天好吗？"]),
    ("one word", "Sure.", ["Sure."]),
    (
        "remainder of a forced early cut",
        "Let me check the current thermostat settings in the living room for you.",
        # No clause opener: the phrase boundary chosen at the 12th word, then the rest on quiet.
        ["Let me check the current thermostat settings in the living room", "for you."],
    ),
    (
        "a sentence and the start of the next",
        "I will turn off the lights. And then",
        ["I will turn off the lights.", "And then"],
    ),
]


@pytest.mark.parametrize(("text", "expected"), [case[1:] for case in PAUSES], ids=[case[0] for case in PAUSES])
async def test_an_agent_that_pauses_without_flush_is_heard(fast_server, text, expected):
    async with bidi(fast_server) as ws:
        for token in llm_tokens(text):
            await ws.send(encode_command(SendText(token)))
        # Nothing more is sent: no flush, no further text.
        frames = await receive_until(ws, "sentence_end", count=len(expected))
    assert [s["text"] for s in frames.of_type("sentence_start")] == expected
    assert not frames.of_type("error") and not frames.of_type("flushed")
    sizes = frames.audio_by_sentence()
    assert len(sizes) == len(expected) and all(size > 0 for size in sizes.values())


async def test_the_real_kokoro_speaks_a_paused_sentence(server):
    async with bidi(server) as ws:
        for token in llm_tokens("I will turn off the lights."):
            await ws.send(encode_command(SendText(token)))
        frames = await receive_until(ws, "sentence_end")
    assert [s["text"] for s in frames.of_type("sentence_start")] == ["I will turn off the lights."]
    assert not frames.of_type("error")
    assert len(frames.audio) > 0
