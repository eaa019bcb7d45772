"""Where the chunker must not cut, so each chunk still means what the text front-end would read in it.

``SpanGuard`` protects an inline pronunciation ``[Siobhan](/ʃɪvˈɔn/)`` or link ``[text](url)`` up to its closing ``)``
(a newline or ``MAX_SPAN_CHARS`` gives up: stray brackets must not hold text back), and inside an SSML ``<speak>``
document every tag and element below the root. It decides from the characters alone, so the chunker stays
fragmentation-invariant. Numbers and their units are kept together by ``number_binds``."""

from __future__ import annotations

MAX_SPAN_CHARS = 300
"""A ``[…](…)`` span longer than this is not one (a link text or an override is a few words)."""

_NEWLINES = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
_OPEN_TAG = "<speak"
_CLOSE_TAG = "</speak>"

# States of the bracket machine.
_NONE = 0
_BRACKET = 1  # inside [...]
_AFTER_BRACKET = 2  # just past the closing ], waiting for "("
_TARGET = 3  # inside (...) after ](


class SpanGuard:
    """Tracks the protected spans of one chunk's text (see module doc); pure, O(1) per character."""

    __slots__ = (
        "_closed",
        "_depth",
        "_doc_end",
        "_doc_start",
        "_in_tag",
        "_last_tag",
        "_match",
        "_override",
        "_ssml_depth",
        "_start",
        "_state",
        "_tag_close",
        "_tag_self_closing",
        "_tag_start",
        "_target_first",
    )

    def __init__(self) -> None:
        self._doc_start: int | None = None
        self._doc_end: int | None = None
        self.restart(0)

    def restart(self, p: int) -> None:
        """Forgets all but the ``<speak>`` document open at ``p`` (the chunker cut at ``p`` and rescans)."""
        self._state = _NONE
        self._start = 0
        self._depth = 0
        self._target_first = False
        self._override = False
        self._closed: tuple[int, int] | None = None
        """The last span that ended: (start, end), for cuts decided just after it ended."""
        self._match = 0
        """How many characters of ``<speak`` (outside a document) or ``</speak>`` (inside one) have matched."""
        self._in_tag = False
        self._tag_start = 0
        self._tag_close = False
        self._tag_self_closing = False
        self._last_tag: tuple[int, int] | None = None
        doc, doc_end = self._doc_start, self._doc_end
        if doc is not None and doc < p and (doc_end is None or p < doc_end):
            self._ssml_depth = 1  # a legal cut inside a document is at its top level
        else:
            self._doc_start = self._doc_end = None
            self._ssml_depth = 0

    # ---- queries ---------------------------------------------------------------------------------------

    @property
    def ssml(self) -> bool:
        """Inside a ``<speak>`` document: only sentence ends at its top level may be cut."""
        return self._doc_start is not None and self._doc_end is None

    @property
    def in_override_target(self) -> bool:
        """The last character was inside the ``(/phonemes/)`` of an inline override: the model reads it as is."""
        return self._state == _TARGET and self._override

    def inside(self, p: int) -> bool:
        """Whether a cut at ``p`` falls inside a span (``p`` at or before the last character fed)."""
        if self._state in (_BRACKET, _AFTER_BRACKET, _TARGET) and self._start < p:
            return True
        closed = self._closed
        if closed is not None and closed[0] < p < closed[1]:
            return True
        if self._doc_start is None or p <= self._doc_start:
            return False
        if self._doc_end is not None and p >= self._doc_end:
            return False
        if self._in_tag and self._tag_start < p:
            return True
        if self._last_tag is not None and self._last_tag[0] < p < self._last_tag[1]:
            return True
        return self._ssml_depth != 1

    # ---- feeding ---------------------------------------------------------------------------------------

    def add(self, i: int, c: str) -> None:
        """Takes the character ``c`` at absolute position ``i``."""
        if self._doc_start is not None and self._doc_end is None:
            self._add_ssml(i, c)
            return
        self._watch_for_speak(i, c)
        self._add_markdown(i, c)

    def _watch_for_speak(self, i: int, c: str) -> None:
        if c == _OPEN_TAG[self._match]:
            self._match += 1
            if self._match == len(_OPEN_TAG):
                self._match = 0
                self._state = _NONE  # a document starts: markdown spans do not run into it
                self._doc_start = i + 1 - len(_OPEN_TAG)
                self._doc_end = None
                self._ssml_depth = 0
                self._in_tag = True
                self._tag_start = self._doc_start
                self._tag_close = False
                self._tag_self_closing = False
        else:
            self._match = 1 if c == "<" else 0

    def _add_ssml(self, i: int, c: str) -> None:
        if self._in_tag:
            if c == ">":
                self._in_tag = False
                self._last_tag = (self._tag_start, i + 1)
                if self._tag_close:
                    self._ssml_depth -= 1
                elif not self._tag_self_closing:
                    self._ssml_depth += 1
                if self._ssml_depth <= 0:
                    self._doc_end = i + 1  # the root closed (or the text closed more than it opened)
                    self._match = 0
                return
            if c == "/" and i == self._tag_start + 1:
                self._tag_close = True
            self._tag_self_closing = c == "/"
            return
        if c == "<":
            self._in_tag = True
            self._tag_start = i
            self._tag_close = False
            self._tag_self_closing = False

    def _add_markdown(self, i: int, c: str) -> None:
        state = self._state
        if state == _NONE:
            if c == "[":
                self._open(i)
            return
        if c in _NEWLINES or i - self._start >= MAX_SPAN_CHARS:
            self._end(i)  # not a span after all: a stray bracket
            return
        if state == _BRACKET:
            if c == "[":
                self._depth += 1
            elif c == "]":
                self._depth -= 1
                if self._depth == 0:
                    self._state = _AFTER_BRACKET
            return
        if state == _AFTER_BRACKET:
            if c == "(":
                self._state = _TARGET
                self._depth = 1
                self._target_first = True
                self._override = False
                return
            self._end(i)  # "[text]" alone
            if c == "[":
                self._open(i)
            return
        # _TARGET
        if self._target_first:
            self._target_first = False
            self._override = c == "/"
        if c == "(":
            self._depth += 1
        elif c == ")":
            self._depth -= 1
            if self._depth == 0:
                self._end(i + 1)

    def _open(self, i: int) -> None:
        self._state = _BRACKET
        self._start = i
        self._depth = 1

    def _end(self, end: int) -> None:
        self._closed = (self._start, end)
        self._state = _NONE
        self._depth = 0
        self._override = False


# ---- numbers and their units ---------------------------------------------------------------------------

_EDGE = "\"'“”‘’()[]{}«»‹›*_`.,;:!?…"
_NUMBER_LEAD = "+-−±~#$€£¥"


def is_number_token(token: str) -> bool:
    """A token that is a number once its punctuation is stripped: "-5", "1,200", "6:45", "$3"; not a word that
    ends in digits ("w17", "COVID-19"), which would chain every such word to the next and leave no place to cut."""
    word = token.strip(_EDGE).lstrip(_NUMBER_LEAD)
    return bool(word) and word[0].isdigit() and word[-1].isdigit()


def number_binds(next_token: str, free_words: frozenset[str]) -> bool:
    """Whether a number binds to the token after it (a unit, symbol, scale word or counted noun), so no cut comes
    between them; not another number nor a word in ``free_words`` ("at 5 | and then")."""
    word = next_token.strip(_EDGE)
    if not word:
        return False
    if word[0].isdigit():
        return False
    return word.replace("’", "'").lower() not in free_words
