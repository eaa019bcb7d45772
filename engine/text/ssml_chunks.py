"""Each chunk of an SSML document made a document of its own, for the text front-end.

The chunker cuts an SSML document only between its top-level sentences (``engine.text.chunker_spans``), so its chunks
are ``<speak …>First. Second.``, ``Third.`` … ``Last.</speak>``: balanced inside, but only the first opens the
root and only the last closes it. The front-end parses each chunk on its own (``markup`` ``auto`` or ``ssml``), so
the session hands it the chunk wrapped in the document's own ``<speak …>`` tag (its ``xml:lang`` and namespace
kept) and ``</speak>``; ``sentence_start.text`` stays the chunk as sent. Pure.
"""

from __future__ import annotations

import re

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
