"""What the text front-end should read for each chunk: markup is written for whole documents and lines, and a
chunk is a piece of them.

``LineStarts`` follows the text as written and says of each chunk whether it begins a line: markdown reads a list
item, heading or quote only there (a chunk "2025." cut after "March 15," is a year, not an empty list item).

For SSML: the chunker cuts a document only between its top-level sentences (``engine.text.chunker_spans``), so
its chunks are ``<speak …>First. Second.``, ``Third.`` … ``Last.</speak>``: balanced inside, but only the first
opens the root and only the last closes it. ``SsmlDocuments`` has the session hand the front-end each chunk wrapped
in the document's own ``<speak …>`` tag (its ``xml:lang`` and namespace kept) and ``</speak>``;
``sentence_start.text`` stays the chunk as sent. Pure.
"""

from __future__ import annotations

import re

from voicedesk.engine.text.chunker_rules import NEWLINES

_OPEN = re.compile(r"\s*(?:<\?xml[^>]*\?>\s*)?(<speak\b[^>]*>)")
_CLOSE = "</speak>"


class SsmlDocuments:
    """Follows one session's text chunk by chunk; ``frame`` says what the front-end should read for a chunk."""

    __slots__ = ("_open_tag",)

    def __init__(self) -> None:
        self._open_tag: str | None = None

    @property
    def open(self) -> bool:
        """A document was opened by an earlier chunk and not yet closed."""
        return self._open_tag is not None

    def frame(self, chunk: str) -> str | None:
        """The chunk as a whole document, or None when it is one already (or is not SSML at all)."""
        opened_here = False
        if self._open_tag is None:
            match = _OPEN.match(chunk)
            if match is None or match.group(1).endswith("/>"):
                return None
            self._open_tag = match.group(1)
            opened_here = True
        document = chunk if opened_here else self._open_tag + chunk
        if _CLOSE in chunk:
            self._open_tag = None
        else:
            document += _CLOSE
        return None if document == chunk else document

    def reset(self) -> None:
        """The utterance ended (flush, cancel): the chunker starts over, and so does this."""
        self._open_tag = None


class LineStarts:
    """Follows one session's text as fed and its chunks as released (each the next stretch of the text, stripped of
    whitespace): ``begins_line`` says whether a chunk begins a line as written. Pure."""

    __slots__ = ("_at_line_start", "_text")

    def __init__(self) -> None:
        self.reset()

    def fed(self, fragment: str) -> None:
        self._text += fragment

    def begins_line(self, chunk: str) -> bool:
        text = self._text
        lead = len(text) - len(text.lstrip())
        if not text.startswith(chunk, lead):  # not a stretch of this text (another chunker): as if a line
            self.reset()
            return True
        begins = self._at_line_start or any(c in NEWLINES for c in text[:lead])
        self._text, self._at_line_start = text[lead + len(chunk) :], False
        return begins

    def reset(self) -> None:
        """The utterance ended (flush, cancel): the next text begins a line, as the chunker starts over."""
        self._text, self._at_line_start = "", True
