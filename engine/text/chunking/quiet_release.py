"""Release on quiet, the clock-aware half of chunking (pure; time is passed in), so a finished sentence never waits for
an agent that has paused.

A clear sentence end is released with the fragment that brings it (``release_ended``); held text whose sentence has
otherwise ended is released ``SENTENCE_RELEASE_DELAY_MS`` after that end arrived; any other held text
``max_buffer_delay_ms`` after the last fragment. The session core and the recorder (``engine.measure.recorder``) use
the same rule, so both agree on when a sentence went out."""

from __future__ import annotations

from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker
from voicedesk.engine.text.chunking.sentence_ends import HeldEnd, HeldText

DEFAULT_MAX_BUFFER_DELAY_MS = 1000
"""How long text without a sentence end waits for more text before it is spoken as it is (release on quiet)."""

SENTENCE_RELEASE_DELAY_MS = 250
"""How long text whose sentence has ended waits before it is spoken anyway (never longer than the buffer delay)."""


def has_sentence_end(held: HeldText) -> bool:
    """The held text has a sentence end as far as the chunker can tell (a period with no space yet included)."""
    return held.sentence_chars > 0 or held.end is HeldEnd.UNSPACED


class QuietRelease:
    def __init__(
        self, chunker: IncrementalSentenceChunker, max_buffer_delay_ms: float = DEFAULT_MAX_BUFFER_DELAY_MS
    ) -> None:
        self.chunker = chunker
        self.max_buffer_delay_ms = max_buffer_delay_ms
        self._last_text_at: float | None = None
        self._end_seen_at: float | None = None

    def feed(self, fragment: str, now: float) -> list[str]:
        """The chunks ``fragment`` completes (with a zero delay, whatever is held as well)."""
        chunks = self.chunker.feed(fragment)
        chunks += self.chunker.release_ended()  # a clear sentence end does not wait for the next token
        self._last_text_at = now
        # A cut means what is held now is new text: its sentence end, if any, arrived now.
        self._note_held(now, released=bool(chunks))
        if self.max_buffer_delay_ms == 0:
            chunks.extend(self.due(now))
        return chunks

    def flush(self) -> str | None:
        """Everything held, as the utterance's last chunk."""
        self._forget()
        return self.chunker.flush()

    def reset(self) -> None:
        self._forget()
        self.chunker.reset()

    def next_deadline(self) -> float | None:
        """When ``due`` will next release something (None: nothing held)."""
        held = self.chunker.held
        if held is None:
            return None
        deadlines = []
        if has_sentence_end(held) and self._end_seen_at is not None:
            deadlines.append(self._end_seen_at + self._sentence_delay_s)
        if self._last_text_at is not None:
            deadlines.append(self._last_text_at + self.max_buffer_delay_ms / 1000)
        return min(deadlines) if deadlines else None

    def due(self, now: float) -> list[str]:
        """Releases what has waited long enough by ``now``."""
        held = self.chunker.held
        if held is None:
            return []
        chunks: list[str] = []
        ended_at = self._end_seen_at if has_sentence_end(held) else None
        if ended_at is not None and now >= ended_at + self._sentence_delay_s:
            # "…the lights." with no space yet (LLM tokens carry the space with the next word) ends exactly there.
            chunks = self.chunker.release_sentences() if held.sentence_chars else self.chunker.release_all()
        if (
            not chunks
            and self._last_text_at is not None
            and now >= self._last_text_at + self.max_buffer_delay_ms / 1000
        ):
            chunks = self.chunker.release_all()
        self._note_held(now, released=bool(chunks))
        return chunks

    @property
    def _sentence_delay_s(self) -> float:
        return min(SENTENCE_RELEASE_DELAY_MS, self.max_buffer_delay_ms) / 1000

    def _forget(self) -> None:
        self._last_text_at = self._end_seen_at = None

    def _note_held(self, now: float, released: bool = False) -> None:
        """Remembers when the held text's sentence end first arrived (the clock of the first rule)."""
        held = self.chunker.held
        if held is None:
            self._end_seen_at = None
            if released or not self.chunker.buffered_chars:
                self._last_text_at = None
        elif not has_sentence_end(held):
            self._end_seen_at = None
        elif self._end_seen_at is None or released:
            self._end_seen_at = now
