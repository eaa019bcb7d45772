"""The frames a remote session sends, in order, by one writer task: text fragments that queue behind a send in flight go
out as one ``text`` frame, so a slow connection reads a few large frames instead of a thousand tokens.

Other commands are never merged or reordered; ``send`` waits only while over ``max_queued_chars``."""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Awaitable, Callable

from voicedesk.engine.errors import ConnectionFailed, VoicedeskError
from voicedesk.engine.protocol import SendText, encode_command
from voicedesk.engine.text.chunking.phoneme_estimate import estimated_audio_s

TEXT_FRAME_PREFIX = '{"type":"text","text":'
"""How ``encode_command`` starts a ``SendText`` frame (checked by ``tests/engine/clients/test_outbox.py``)."""
MAX_MERGED_CHARS = 16 * 1024
"""A merged frame stays well under the server's frame limit (256 KiB)."""
MAX_MERGED_AUDIO_S = 60.0
"""And reads for at most about a minute: far under a server's compute budget per message (20 min by default)."""
MAX_QUEUED_CHARS = 256 * 1024


def fragment_of(frame: str) -> str | None:
    """The text of a ``text`` frame with nothing but a text in it; None for any other frame."""
    if not frame.startswith(TEXT_FRAME_PREFIX):
        return None
    try:
        decoded = json.loads(frame)
    except ValueError:
        return None
    text = decoded.get("text")
    return text if set(decoded) == {"type", "text"} and isinstance(text, str) else None


def coalesce(queued: deque[str], max_chars: int = MAX_MERGED_CHARS) -> str:
    """Takes the next frame off ``queued``; if it is a text fragment, the fragments right behind it join it."""
    first = queued.popleft()
    text = fragment_of(first)
    if text is None:
        return first
    parts, size, merged, audio_s = [text], len(text), 1, estimated_audio_s(text, 1.0)
    while queued:
        following = fragment_of(queued[0])
        if following is None or size + len(following) > max_chars:
            break
        audio_s += estimated_audio_s(following, 1.0)
        if audio_s > MAX_MERGED_AUDIO_S:
            break
        queued.popleft()
        parts.append(following)
        size += len(following)
        merged += 1
    return first if merged == 1 else encode_command(SendText("".join(parts)))


class Outbox:
    def __init__(
        self,
        send: Callable[[str], Awaitable[None]],
        max_merged_chars: int = MAX_MERGED_CHARS,
        max_queued_chars: int = MAX_QUEUED_CHARS,
    ) -> None:
        self._send = send
        self._max_merged = max_merged_chars
        self._max_queued = max_queued_chars
        self._queue: deque[str] = deque()
        self._queued_chars = 0
        self._writer: asyncio.Task[None] | None = None
        self._progress = asyncio.Event()
        self._failure: VoicedeskError | None = None
        self.frames_queued = 0
        self.frames_sent = 0
        """Frames that went on the wire (fewer than queued when fragments were merged)."""

    async def send(self, frame: str) -> None:
        if self._failure is not None:
            raise self._failure
        self._queue.append(frame)
        self._queued_chars += len(frame)
        self.frames_queued += 1
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write(), name="outbox writer")
        while self._queued_chars > self._max_queued and self._failure is None:
            self._progress.clear()
            await self._progress.wait()
        if self._failure is not None:
            raise self._failure

    async def drain(self) -> None:
        """Waits until every queued frame was sent; raises the failure if one was not."""
        writer = self._writer
        if writer is not None:
            await asyncio.shield(writer)
        if self._failure is not None:
            raise self._failure

    def abort(self) -> None:
        """Drops what is queued and stops the writer (the connection is being torn down)."""
        self._queue.clear()
        self._queued_chars = 0
        if self._writer is not None:
            self._writer.cancel()
        self._progress.set()

    async def _write(self) -> None:
        while self._queue:
            frame = coalesce(self._queue, self._max_merged)
            try:
                await self._send(frame)
            except Exception as exc:  # told to the caller, not lost in a task nobody awaits
                self._failure = exc if isinstance(exc, VoicedeskError) else ConnectionFailed(f"Sending failed: {exc!r}")
                self._queue.clear()
                self._queued_chars = 0
                self._progress.set()
                return
            self.frames_sent += 1
            self._queued_chars = sum(len(f) for f in self._queue)
            self._progress.set()
