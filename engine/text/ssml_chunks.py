"""Each chunk of an SSML document made a document of its own, for the text front-end.

The chunker cuts an SSML document between its top-level sentences (``engine.text.chunker_spans``), and inside an
element only when the element alone is over the phoneme ceiling. So its chunks are ``<speak …>First. Second.``,
``Third.`` … ``Last.</speak>``, and a long ``<prosody>`` may be cut between words. The front-end parses each chunk
on its own (``markup`` ``auto`` or ``ssml``), so the session hands it the chunk wrapped in the document's own
``<speak …>`` tag (its ``xml:lang`` and namespace kept), the start tags of the elements still open before it, and
the end tags of those open after it: every piece is well-formed and keeps its element's meaning.
``sentence_start.text`` stays the chunk as sent. Pure.
"""

from __future__ import annotations

import re

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
