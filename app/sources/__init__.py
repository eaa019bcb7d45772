"""Agents: a ``TextSource`` streams its reply as fragments, raises ``VoicedeskError`` saying what to do, and stops
generating when the iterator is closed early (an interrupt)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol


@dataclass(frozen=True, slots=True)
class ChatMessage:
    role: Literal["user", "assistant"]
    text: str


class TextSource(Protocol):
    name: str  # "Bedrock · claude-3-haiku"

    def reply(self, messages: Sequence[ChatMessage]) -> AsyncIterator[str]: ...


__all__ = ["ChatMessage", "TextSource"]
