"""What the text front-end reads for each chunk: markup is written for whole documents and lines, and a chunk is a
piece of them (pure).

Markdown reads a list item or heading only at a line start ("2025." cut after "March 15," is a year), and each SSML
chunk is wrapped in its document's ``<speak>`` and open elements, so every piece is well-formed."""

from __future__ import annotations

import re

from voicedesk.engine.text.chunking.sentence_ends import NEWLINES

_OPEN = re.compile(r"\s*(?:<\?xml[^>]*\?>\s*)?(<speak\b[^>]*>)")
_TAG = re.compile(r"<(/?)([A-Za-z][\w:.-]*)[^>]*?(/?)>")
_CLOSE = "</speak>"


class SsmlDocuments:
    """Follows one session's text chunk by chunk; ``frame`` says what the front-end should read for a chunk."""

    __slots__ = ("_elements", "_open_tag")

    def __init__(self) -> None:
        self._open_tag: str | None = None
        self._elements: list[tuple[str, str]] = []
        """Elements below the root open at the end of the last chunk: (name, start tag)."""

    def frame(self, chunk: str) -> str | None:
        """The chunk as a whole document, or None when it is one already (or is not SSML at all)."""
        opened_here = False
        if self._open_tag is None:
            match = _OPEN.match(chunk)
            if match is None or match.group(1).endswith("/>"):
                return None
            self._open_tag = match.group(1)
            opened_here = True
        before = "" if opened_here else self._open_tag + "".join(tag for _, tag in self._elements)
        self._follow(chunk)
        after = "".join(f"</{name}>" for name, _ in reversed(self._elements))
        if _CLOSE in chunk:
            self.reset()
        else:
            after += _CLOSE
        document = before + chunk + after
        return None if document == chunk else document

    def _follow(self, chunk: str) -> None:
        for match in _TAG.finditer(chunk):
            closing, name, empty = match.groups()
            if name == "speak" or empty:
                continue
            if not closing:
                self._elements.append((name, match.group(0)))
            elif any(open_name == name for open_name, _ in self._elements):
                while self._elements.pop()[0] != name:
                    pass

    def reset(self) -> None:
        """The utterance ended (flush, cancel): the chunker starts over, and so does this."""
        self._open_tag = None
        self._elements = []


class LineStarts:
    """Follows a session's text and its chunks: ``begins_line`` says whether a chunk begins a line as written."""

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
