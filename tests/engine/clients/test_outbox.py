"""The client's outbox: fragments queued while a send is in flight are joined, nothing else is merged or reordered."""

from __future__ import annotations

import asyncio
from collections import deque

import pytest

from voicedesk.engine.clients.outbox import TEXT_FRAME_PREFIX, Outbox, coalesce, fragment_of
from voicedesk.engine.errors import ConnectionFailed
from voicedesk.engine.protocol import Cancel, Flush, SendText, decode_command, encode_command


def test_the_prefix_is_how_a_text_frame_is_encoded():
    assert encode_command(SendText('a "quoted" word')).startswith(TEXT_FRAME_PREFIX)
    assert fragment_of(encode_command(SendText("x\ny"))) == "x\ny"
    assert fragment_of(encode_command(Flush())) is None


def test_fragments_join_up_to_a_command_and_the_order_is_kept():
    queued = deque(encode_command(c) for c in [SendText("a "), SendText("b "), Flush("f"), SendText("c"), Cancel()])
    out = []
    while queued:
        out.append(decode_command(coalesce(queued)))
    assert out == [SendText("a b "), Flush("f"), SendText("c"), Cancel()]


def test_a_merged_frame_stays_under_its_size():
    queued = deque(encode_command(SendText("x" * 10)) for _ in range(10))
    sizes = []
    while queued:
        sizes.append(len(fragment_of(coalesce(queued, max_chars=35)) or ""))
    assert sizes == [30, 30, 30, 10]


async def test_fragments_sent_while_a_send_is_in_flight_go_out_as_one_frame():
    sent: list[str] = []
    gate = asyncio.Event()

    async def slow_send(frame: str) -> None:
        await gate.wait()  # the first send is in flight until the gate opens
        sent.append(frame)

    outbox = Outbox(slow_send)
    words = [f"{('the', 'cat', 'sat', 'on', 'a', 'mat')[i % 6]} " for i in range(500)]  # about 2.5 min of speech
    for word in words:
        await outbox.send(encode_command(SendText(word)))
    await outbox.send(encode_command(Flush("end")))
    gate.set()
    await outbox.drain()
    decoded = [decode_command(f) for f in sent]
    assert "".join(c.text for c in decoded if isinstance(c, SendText)) == "".join(words)
    assert decoded[-1] == Flush("end")
    assert outbox.frames_queued == 501 and outbox.frames_sent == len(sent) < 10


def test_a_merged_frame_reads_for_about_a_minute_at_most():
    """Fragments that read long ("w1234" is "double-u one thousand two hundred thirty four") are merged into frames
    a server's compute budget per message (counted on what is read) takes: never one it would refuse."""
    from collections import deque

    from voicedesk.engine.clients.outbox import MAX_MERGED_AUDIO_S, coalesce
    from voicedesk.engine.text.chunking.phoneme_estimate import estimated_audio_s

    queued = deque(encode_command(SendText(f"w{i} ")) for i in range(1_500))
    frames = []
    while queued:
        frames.append(decode_command(coalesce(queued)))
    assert 10 < len(frames) < 1_500
    assert all(estimated_audio_s(frame.text, 1.0) <= MAX_MERGED_AUDIO_S for frame in frames)  # type: ignore[union-attr]


async def test_a_failed_send_is_raised_by_the_next_one():
    async def broken(frame: str) -> None:
        raise ConnectionFailed("gone")

    outbox = Outbox(broken)
    await outbox.send(encode_command(SendText("a")))
    with pytest.raises(ConnectionFailed, match="gone"):
        await outbox.drain()
    with pytest.raises(ConnectionFailed):
        await outbox.send(encode_command(SendText("b")))
