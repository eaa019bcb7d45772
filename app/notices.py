"""What the status bar says (pure): each message has a topic and goes when that thing changes, so none outlives its
cause; information fades after ``INFO_TTL_S``; a short log keeps everything shown, for a message cut at the edge."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from enum import StrEnum

INFO_TTL_S = 10.0
LOG_SIZE = 50


class Topic(StrEnum):
    ENGINE = "engine"
    TURN = "turn"
    VOICE = "voice"
    AGENT = "agent"
    AUDIO = "audio"
    MICROPHONE = "microphone"
    SETTINGS = "settings"
    MODEL = "model"
    GENERAL = "general"


LEVELS = ("info", "warning", "error")


@dataclass(frozen=True, slots=True)
class Notice:
    text: str
    level: str
    topic: Topic
    at: float  # posted at, on the caller's clock

    @property
    def expires_at(self) -> float | None:
        return self.at + INFO_TTL_S if self.level == "info" else None


class NoticeBoard:
    def __init__(self) -> None:
        self._live: dict[Topic, Notice] = {}
        self.log: deque[Notice] = deque(maxlen=LOG_SIZE)

    def post(self, text: str, level: str, topic: Topic | str, now: float) -> Notice:
        notice = Notice(text, level if level in LEVELS else "info", Topic(topic), now)
        self._live[notice.topic] = notice
        self.log.append(notice)
        return notice

    def clear(self, *topics: Topic | str) -> None:
        for topic in topics:
            self._live.pop(Topic(topic), None)

    def dismiss(self) -> None:
        """The person closed the message: everything showing goes (the log keeps it)."""
        self._live.clear()

    def current(self, now: float) -> Notice | None:
        """The message to show: the most recent one still live (errors and warnings before stale info)."""
        live = [n for n in self._live.values() if n.expires_at is None or n.expires_at > now]
        self._live = {n.topic: n for n in live}
        if not live:
            return None
        return max(live, key=lambda n: n.at)

    def next_expiry(self, now: float) -> float | None:
        """When the shown message may change by itself (an info message fading), or None."""
        times = [n.expires_at for n in self._live.values() if n.expires_at is not None and n.expires_at > now]
        return min(times) if times else None
