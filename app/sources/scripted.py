"""A scripted agent replaying a text at N tokens per second, for demos and latency tests: each token is due at
``start + i / rate``, so waiting never accumulates drift."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from voicedesk.app.sources import ChatMessage
from voicedesk.engine.errors import ErrorCode, UsageError, VoicedeskError

_TOKEN = re.compile(r"\s*\S+|\s+$")


def tokenize(text: str) -> list[str]:
    """Word-sized tokens that keep their leading whitespace (" world"), so joining them gives the text back."""
    tokens = _TOKEN.findall(text)
    return [t for t in tokens if t]


class ScriptedSource:
    def __init__(
        self,
        tokens_per_s: float = 20.0,
        script: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if not tokens_per_s > 0:
            raise UsageError(f"tokens per second must be above 0; got {tokens_per_s}.")
        self.tokens_per_s = tokens_per_s
        self.script = script
        self._clock = clock
        self._sleep = sleep
        self.name = f"Scripted · {tokens_per_s:g} tokens/s"

    async def reply(self, messages: Sequence[ChatMessage]) -> AsyncIterator[str]:
        text = (
            self.script
            if self.script is not None
            else next((m.text for m in reversed(messages) if m.role == "user"), "")
        )
        if not text.strip():
            raise VoicedeskError(ErrorCode.EMPTY_TEXT, "The scripted agent has nothing to replay: type a text first.")
        start = self._clock()
        for index, token in enumerate(tokenize(text)):
            wait = start + index / self.tokens_per_s - self._clock()
            if wait > 0:
                await self._sleep(wait)
            yield token
