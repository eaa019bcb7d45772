"""Where agent text comes from: anything that streams a reply as text fragments while it is being written.

Every source implements ``TextSource``: ``reply(messages)`` is an async iterator of fragments, raising
``engine.errors.VoicedeskError`` with a message a person can act on when the source cannot answer.
Closing the iterator early (an interrupt) stops the generation at the source.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol


@dataclass(frozen=True, slots=True)
class ChatMessage:
    role: Literal["user", "assistant"]
    text: str


class TextSource(Protocol):
    name: str
    """Shown in the window ("Bedrock · claude-3-haiku")."""

    def reply(self, messages: Sequence[ChatMessage]) -> AsyncIterator[str]: ...


__all__ = ["ChatMessage", "TextSource"]
