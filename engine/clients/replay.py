"""What a remote session must re-send when its stream ends early, and how its events stay one story (pure).

``ReplayLog`` keeps the commands since the last confirmed point; ``EventRelay`` keeps sequence numbers increasing across
streams and holds each ``SentenceStarted`` until its first audio, so a sentence cut off before any audio is said again
without being announced twice."""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, fields, replace

from voicedesk.engine.events import (
    BYTES_PER_SAMPLE,
    SAMPLE_RATE,
    Audio,
    Cancelled,
    Error,
    Event,
    Flushed,
    SentenceFinished,
    SentenceStarted,
    SessionConfig,
)
from voicedesk.engine.protocol import Cancel, Close, Command, Configure, Flush, SendText, configure_of

log = logging.getLogger(__name__)


def _letters(text: str) -> str:
    return "".join(text.split())


@dataclass(slots=True)
class _Text:
    text: str


@dataclass(slots=True)
class _OpenSentence:
    letters: str
    """The sentence's non-space characters: what it claims from the front of the log once it is spoken."""


def settings_of(config: SessionConfig) -> Configure:
    """A session's settings as the ``config`` command that sets them all (text options and lexicon included)."""
    return configure_of(config)


def merged(settings: Configure, change: Configure) -> Configure:
    """``settings`` with the fields ``change`` sets (a ``config`` command changes only what it names)."""
    return replace(settings, **{f.name: v for f in fields(Configure) if (v := getattr(change, f.name)) is not None})


class ReplayLog:
    def __init__(self, settings: Configure) -> None:
        self.settings = settings
        """The settings in effect at the start of the log (what a new stream is opened with)."""
        self._log: deque[_Text | Command] = deque()
        self._cancels_pending = 0
        self._open: _OpenSentence | None = None
        self.progress = 0
        """Counts spoken sentences and confirmed flushes (a reconnect that brings none is fruitless)."""

    # ---- what the client sends ----------------------------------------------------------------------

    def sent(self, command: Command) -> None:
        match command:
            case SendText(text=text):
                if text:
                    self._log.append(_Text(text))
            case Cancel():
                for entry in self._log:  # nothing before a cancel is wanted any more; its settings stay
                    if isinstance(entry, Configure):
                        self.settings = merged(self.settings, entry)
                self._log.clear()
                self._open = None
                self._cancels_pending += 1
            case Flush() | Configure() | Close():
                self._log.append(command)
        self._trim()

    # ---- what the server reports (events of the current stream, before any renumbering) -------------

    def observe(self, event: Event) -> bool:
        """Updates the log; False for an event of the server dropping text nobody cancelled (see above)."""
        if isinstance(event, Cancelled):
            if self._cancels_pending == 0:
                return False
            self._cancels_pending -= 1
            self._open = None
            return True
        if self._cancels_pending:
            return True  # still about the cancelled text (its flushes are answered as cancelled, too)
        if isinstance(event, Flushed) and getattr(event, "cancelled", False):
            return False
        match event:
            case SentenceStarted(text=text):
                self._open = _OpenSentence(_letters(text))
            case Audio():
                self._spoken()
            case SentenceFinished():
                self._spoken()
            case Error(seq=seq) if seq is not None:
                self._spoken()
            case Flushed():
                self._confirm_flush()
        return True

    # ---- the state ----------------------------------------------------------------------------------

    @property
    def idle(self) -> bool:
        """Nothing in flight: no text the server holds, no flush, cancel or close awaiting its answer."""
        return not self.closing and self._nothing_in_flight()

    @property
    def closing(self) -> bool:
        return any(isinstance(e, Close) for e in self._log)

    @property
    def only_close_pending(self) -> bool:
        """A close was asked for and nothing else is in flight: the session has said everything."""
        return self.closing and self._nothing_in_flight()

    def _nothing_in_flight(self) -> bool:
        return (
            self._open is None
            and not self._cancels_pending
            and not any(isinstance(e, Flush) or (isinstance(e, _Text) and e.text.strip()) for e in self._log)
        )

    def stream_lost(self) -> None:
        """The stream ended: a sentence in flight without audio will be said again on the next one."""
        self._open = None

    def replay(self) -> tuple[Configure, list[Command]]:
        """The settings to open a new stream with, and the commands that bring it to where this one stopped."""
        commands: list[Command] = [Cancel()] * self._cancels_pending
        for entry in self._log:
            commands.append(SendText(entry.text) if isinstance(entry, _Text) else entry)
        return self.settings, commands

    # ---- internals ----------------------------------------------------------------------------------

    def _spoken(self) -> None:
        if self._open is None:
            return  # later audio of a sentence already counted
        letters, self._open = self._open.letters, None
        self.progress += 1
        self._consume(letters)

    def _consume(self, letters: str) -> None:
        """Cuts the sentence's characters from the front of the logged text (skipping settings between)."""
        claimed: list[str] = []
        remaining = len(letters)
        for entry in self._log:
            if remaining == 0:
                break
            if not isinstance(entry, _Text):
                if isinstance(entry, Flush | Close):
                    break  # sentences never span a flush: the text before it is all there is
                continue
            cut = 0
            while cut < len(entry.text) and remaining:
                if not entry.text[cut].isspace():
                    claimed.append(entry.text[cut])
                    remaining -= 1
                cut += 1
            entry.text = entry.text[cut:]
        if "".join(claimed) != letters:
            # Not the text we sent (another chunker?): the count is still the best place to resume from.
            log.warning("a sentence did not match the text sent; resuming after %d characters", len(letters))
        self._trim()

    def _confirm_flush(self) -> None:
        while self._log:
            entry = self._log.popleft()
            if isinstance(entry, Configure):
                self.settings = merged(self.settings, entry)
            elif isinstance(entry, Flush):
                self.progress += 1
                break
        self._trim()

    def _trim(self) -> None:
        """Drops spoken text and folds settings from the front: the log starts at the first thing in flight."""
        while self._log:
            entry = self._log[0]
            if isinstance(entry, _Text) and not entry.text.strip():
                self._log.popleft()
            elif isinstance(entry, Configure):
                self._log.popleft()
                self.settings = merged(self.settings, entry)
            else:
                break


class EventRelay:
    """Server events of successive streams in, one consistent ``Session`` event stream out."""

    def __init__(self, hold_starts: bool = True) -> None:
        self._hold_starts = hold_starts
        self._offset = 0
        self._next_seq = 0
        self._held: SentenceStarted | None = None
        self._open: int | None = None
        self._open_audio_bytes = 0

    def relay(self, event: Event) -> list[Event]:
        match event:
            case SentenceStarted(seq=seq):
                started = replace(event, seq=self._seq(seq))
                self._open, self._open_audio_bytes = started.seq, 0
                if self._hold_starts:
                    self._held = started
                    return []
                return [started]
            case Audio(seq=seq, pcm=pcm):
                seq = self._seq(seq)
                if seq == self._open:
                    self._open_audio_bytes += len(pcm)
                return [*self._release(seq), replace(event, seq=seq)]
            case SentenceFinished(seq=seq) | Error(seq=int(seq)):
                seq = self._seq(seq)
                if seq == self._open:
                    self._open = None
                return [*self._release(seq), replace(event, seq=seq)]
            case Flushed(last_seq=last_seq) | Cancelled(last_seq=last_seq):
                if isinstance(event, Cancelled):
                    self._held, self._open = None, None  # never announced: nothing of it will follow
                return [replace(event, last_seq=self._seq(last_seq))]
        return [event]

    def stream_ended(self) -> list[Event]:
        """The stream is gone; later events come from a new one. Returns what closes the story of this one."""
        events: list[Event] = []
        if self._open is not None and self._held is None:  # its audio had begun: it ends where the audio stopped
            duration = self._open_audio_bytes / (BYTES_PER_SAMPLE * SAMPLE_RATE)
            events.append(SentenceFinished(self._open, duration))
        self._held, self._open = None, None
        self._offset = self._next_seq
        return events

    def _seq(self, seq: int) -> int:
        """A seq of the current stream as the session numbers it (-1, "none", becomes the last one used before)."""
        mapped = seq + self._offset
        self._next_seq = max(self._next_seq, mapped + 1)
        return mapped

    def _release(self, seq: int) -> list[Event]:
        held, self._held = self._held, None
        if held is None:
            return []
        if held.seq != seq:  # not the sentence this event is about (cannot happen with one sentence at a time)
            self._held = held
            return []
        return [held]
