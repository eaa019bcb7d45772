"""Incremental sentence chunking: a stream of text fragments (LLM tokens) in, chunks worth one Kokoro call out.

Where text is cut decides both latency and prosody:

- Early first fragment: the first chunk of an utterance goes out at its first clause boundary once it has
  ``min_first_words`` words, or where a clause opens (``first_cut``); failing that it is forced at
  ``first_fragment_max_words`` words at a phrase boundary, never inside a phrase. Later chunks are whole sentences.
- Sentence ends: ``. ! ? …`` and runs of them before whitespace, CJK ``。！？`` at once, every newline. A run is
  decided by the next non-space character (lower-case: the sentence goes on); a single period after a title,
  initial, number abbreviation or list marker does not end one (``sentence_ends``). Unsure means no cut: a missed
  cut costs latency, a wrong one an audible pause.
- Floor and ceiling: a sentence under ``min_sentence_chars`` merges with the next one already in hand; a chunk whose
  phoneme estimate (``phoneme_estimate``) would pass ``max_chunk_phonemes`` is cut at its last sentence end, else
  clause, else word boundary.
- No clock: ``held`` (``sentence_ends.HeldText``) says what is held and why; the session calls
  ``release_sentences()`` or ``release_all()`` after a quiet spell, and ``release_ended()`` after each fragment so a
  clear end ("done.", "on?") does not wait for the agent's next token.
- No cut inside what the front-end reads whole (``protected_spans``): overrides, links, a number and its unit, an SSML
  element.
- Fragmentation invariance: the same text in any pieces gives the same chunks and the same ``held``; each character
  is examined about once (``scanned_chars``).

Chunks are the input between cuts, stripped, never empty: together they hold every non-space character in order."""

from __future__ import annotations

from dataclasses import dataclass

from voicedesk.engine.text.chunking.first_cut import FIRST_CUTS, FREE_AFTER_NUMBER, FirstCutPlanner
from voicedesk.engine.text.chunking.phoneme_estimate import (
    CJK,
    CJK_PHRASE_WAIT,
    QUARTERS,
    SPACE,
    PhonemeEstimator,
    char_kind,
    char_kind_for,
    cjk_phrase_boundary,
    estimate_phonemes,
    is_cjk,
)
from voicedesk.engine.text.chunking.protected_spans import SpanGuard, is_number_token, number_binds
from voicedesk.engine.text.chunking.sentence_ends import (
    CJK_CLAUSE_MARKS,
    CJK_TERMINALS,
    CLAUSE_MARKS,
    CLOSERS,
    DASHES,
    DAY,
    HYPHENS,
    NEWLINES,
    QUOTES,
    SPACED_CLOSERS,
    TERMINALS,
    HeldEnd,
    HeldText,
    clean_word,
    cut_may_follow,
    period_ends_clearly,
    run_ends_sentence,
    run_ends_unless_lower,
    unclosed,
)

__all__ = ["HeldEnd", "HeldText", "IncrementalSentenceChunker", "estimate_phonemes"]

_SENTENCE = 0
_CLAUSE = 1

# Kinds of punctuation run.
_TERM = 0  # . ! ? …   (needs whitespace after, then look-ahead)
_CJK_TERM = 1  # 。！？   (ends at the next character)
_CLAUSE_RUN = 2  # , ; :   (needs whitespace after)
_CJK_CLAUSE_RUN = 3  # ，、；：   (ends at the next character)
_DASH = 4  # — ―      (ends at the next character that is not a dash)
_HYPHEN = 5  # - –      (only spaced " - " or doubled "--")

_PUNCT = TERMINALS | CJK_TERMINALS | CLAUSE_MARKS | CJK_CLAUSE_MARKS
_MAX_WORD = 24
"""Longer tokens are never abbreviations; the word before a period is not looked up beyond this."""


@dataclass(slots=True)
class _Run:
    kind: int
    end: int
    """Absolute index just past the run's last punctuation mark or closer."""
    word: str
    """The token before the run, quotes stripped ("" if too long to be an abbreviation)."""
    at_line_start: bool
    spaced_before: bool
    single_period: bool
    dotted: bool
    """A ``.`` or ``…`` in the run: "3." may be "3.14", "wait..." may go on."""
    marks: int = 1
    closing: bool = False
    """A closer has been seen: no more punctuation joins the run."""


def _punct_kind(c: str, previous: int | None = None) -> int:
    """The kind of a run whose last punctuation mark is ``c`` (a CJK terminal anywhere makes it CJK)."""
    if c in CLAUSE_MARKS:
        return _CLAUSE_RUN
    if c in CJK_CLAUSE_MARKS:
        return _CJK_CLAUSE_RUN
    if c in CJK_TERMINALS or previous == _CJK_TERM:
        return _CJK_TERM
    return _TERM


_HEAD_CHARS = 2000
"""How much of a sentence's earlier chunks is kept to see a quote still open (a longer one: its last part)."""


class IncrementalSentenceChunker:
    def __init__(
        self,
        *,
        early_first_fragment: bool = True,
        min_first_words: int = 3,
        first_fragment_max_words: int = 12,
        min_sentence_chars: int = 20,
        max_chunk_phonemes: int = 510,
        first_cut: str = "clause",
        language: str | None = None,
    ) -> None:
        for name, value, low in (
            ("min_first_words", min_first_words, 1),
            ("first_fragment_max_words", first_fragment_max_words, 1),
            ("min_sentence_chars", min_sentence_chars, 0),
            ("max_chunk_phonemes", max_chunk_phonemes, 64),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be a whole number of at least {low}; got {value!r}.")
        if first_fragment_max_words < min_first_words:
            raise ValueError(
                f"first_fragment_max_words ({first_fragment_max_words}) must be at least min_first_words "
                f"({min_first_words})."
            )
        self._early_first = bool(early_first_fragment)
        if first_cut not in FIRST_CUTS:
            raise ValueError(f"first_cut must be one of {', '.join(FIRST_CUTS)}; got {first_cut!r}.")
        self._first_cut = first_cut
        """Where the first fragment is cut eagerly (``engine.text.chunking.first_cut.FIRST_CUTS``)."""
        self._min_first_words = min_first_words
        self._max_first_words = first_fragment_max_words
        self._min_sentence_chars = min_sentence_chars
        self._max_quarters = max_chunk_phonemes * QUARTERS
        self._kind_of = char_kind_for(language)
        self._language = language
        self.scanned_chars = 0
        """Characters examined so far, rescans after cuts included: the chunker's work, for tests."""
        self._out: list[str] = []
        self._reset_utterance()

    # ---- public API ---------------------------------------------------------------------------------

    def set_language(self, language: str | None) -> None:
        """The voice's language (Kokoro's code) for the phoneme estimate of the chunks begun from now on."""
        self._kind_of = char_kind_for(language)
        self._language = language

    def feed(self, fragment: str) -> list[str]:
        """Takes the next piece of text; returns the chunks it completed, in order (often none)."""
        if not isinstance(fragment, str):
            raise TypeError(f"feed() takes text (str), not {type(fragment).__name__}.")
        if not fragment:
            return []
        self._buf += fragment
        self._scan()
        return self._take()

    def flush(self) -> str | None:
        """Ends the utterance: what is held as one last chunk (None if only whitespace); the next gets a first
        fragment."""
        chunk = None
        if self._start is not None:
            chunk = self._slice(self._start, self._base + len(self._buf)).strip() or None
        self._reset_utterance()
        return chunk

    def reset(self) -> None:
        """Drops everything held (cancel) and starts a new utterance."""
        self._reset_utterance()

    def release_sentences(self) -> list[str]:
        """Releases the held text up to its last sentence end (``held.sentence_chars``) as one chunk; [] if none. It
        does not end the utterance (``flush`` does), but spends the early first fragment."""
        end, _ = self._last_end()
        return [] if end is None else self._release_at(end)

    def release_ended(self) -> list[str]:
        """Releases the held sentence now if its end is clear without the next token and ``feed`` would cut it there
        (a clear ``!``/``?``, or ``.`` after a plain word); [] otherwise. Only text that goes on after it in lower
        case ("done. and") would have kept it: the price of not waiting for the agent's next token."""
        run = self._pending or self._run
        if run is None or run.kind != _TERM or self._start is None or self._guard.ssml:
            return []
        end = run.end
        if run.single_period:
            clear = period_ends_clearly(run.word, at_line_start=run.at_line_start)
        else:
            clear = not run.dotted and "/" not in run.word  # "x.org/a?" may go on "c=d"
        speakable = self._first_alnum is not None and self._first_alnum < end
        if self._slice(end - 1, end) in QUOTES:
            return []  # '"Are you sure?" he asked': a quote's sentence often goes on in lower case
        sentence = self._sentence_head + self._slice(self._start, end)
        if not clear or not speakable or self._guard.inside(end) or unclosed(sentence):
            return []
        if self._first and self._words >= self._max_first_words:
            return []  # the first-cut planner may cut at this word as a phrase boundary instead
        return self._release_at(end) if self._cut_due(end, _SENTENCE) else []

    def release_all(self) -> list[str]:
        """Releases everything held as one chunk, even mid-sentence; [] if nothing is held. Text fed next continues the
        released sentence."""
        if self._start is None:
            return []
        _, tail = self._last_end()
        line_has_content = self._line_has_content  # nothing is rescanned, so the line state stays true
        self._cut(self._base + len(self._buf), sentence_end=tail is not HeldEnd.OPEN)
        self._line_has_content = line_has_content
        return self._take()

    def _release_at(self, end: int) -> list[str]:
        self._cut(end, sentence_end=True)
        self._scan()
        return self._take()

    @property
    def held(self) -> HeldText | None:
        """What is held and how it ends (``HeldText``), or None; a clock-free snapshot the session turns into
        deadlines."""
        if self._start is None:
            return None
        end, tail = self._last_end()
        return HeldText(
            chars=self.buffered_chars,
            sentence_chars=0 if end is None else end - self._start,
            end=tail,
        )

    @property
    def held_text(self) -> str:
        """The characters held and not yet released ("" when none): a sentence still arriving."""
        return "" if self._start is None else self._buf[self._start - self._base :]

    @property
    def buffered_chars(self) -> int:
        """Characters held and not yet released (0 exactly when ``flush`` would return None)."""
        if self._start is None:
            return 0
        return self._base + len(self._buf) - self._start

    # ---- state ----------------------------------------------------------------------------------------

    def _reset_utterance(self) -> None:
        self._buf = ""
        self._base = 0
        """Absolute index of ``_buf[0]``: positions are absolute so compaction never moves them."""
        self._pos = 0
        """Absolute index of the next character to examine."""
        self._first = self._early_first
        self._line_has_content = False
        self._prev = ""
        self._guard = SpanGuard()
        self._sentence_head = ""
        """What earlier chunks of the held sentence said (cut at a phrase): a quote opened there is still open."""
        self._new_chunk()

    def _new_chunk(self) -> None:
        self._start: int | None = None
        self._est = PhonemeEstimator(kind_of=self._kind_of)
        self._words = 0
        self._cjk_chars = 0
        self._token_start: int | None = None
        self._token_counted = False
        self._token_at_line_start = False
        self._first_alnum: int | None = None
        self._content_end = 0
        self._run: _Run | None = None
        """The punctuation run the last character belongs to, if any (so it ends the held text)."""
        self._pending: _Run | None = None
        """A terminal run followed by spaces, waiting for the next non-space character to decide it."""
        # Boundaries seen in the held chunk, as (cut position, estimate there), for the ceiling.
        self._last_sentence: tuple[int, int] | None = None
        self._last_clause: tuple[int, int] | None = None
        self._last_word: tuple[int, int] | None = None
        self._number_gap: tuple[int, int] | None = None
        """A word boundary right after a number, a ceiling cut only once the next word is not its unit."""
        self._continues = False
        """The chunk goes on with a sentence whose start was cut off (not at a sentence end): no floor applies."""
        self._planner = (
            FirstCutPlanner(self._min_first_words, self._max_first_words, self._first_cut) if self._first else None
        )

    def _take(self) -> list[str]:
        self._compact()
        out, self._out = self._out, []
        return out

    def _last_end(self) -> tuple[int | None, HeldEnd]:
        """The last sentence end held (absolute position, or None) and how the held text ends."""
        speakable = self._first_alnum
        pending = self._pending
        if (
            pending is not None
            and pending.kind == _TERM
            and speakable is not None
            and speakable < pending.end
            and run_ends_unless_lower(pending.single_period, pending.word, at_line_start=pending.at_line_start)
        ):
            return pending.end, HeldEnd.LOOK_AHEAD
        run = self._run
        if run is not None and speakable is not None and speakable < run.end and run.kind == _CJK_TERM:
            return run.end, HeldEnd.CLOSERS
        end = None if self._last_sentence is None else self._last_sentence[0]
        if end is not None and self._content_end <= end:
            return end, HeldEnd.MERGING
        if (
            run is not None
            and speakable is not None
            and speakable < run.end
            and run.kind == _TERM
            and run_ends_unless_lower(run.single_period, run.word, at_line_start=run.at_line_start)
        ):
            return end, HeldEnd.UNSPACED
        return end, HeldEnd.OPEN

    def _slice(self, start: int, end: int) -> str:
        return self._buf[start - self._base : end - self._base]

    def _compact(self) -> None:
        keep = self._start if self._start is not None else self._pos
        if keep > self._base:
            self._buf = self._buf[keep - self._base :]
            self._base = keep

    # ---- the scanner ----------------------------------------------------------------------------------

    def _scan(self) -> None:
        end = self._base + len(self._buf)
        while self._pos < end:
            i = self._pos
            self._pos = i + 1
            self._step(i, self._buf[i - self._base])

    def _step(self, i: int, c: str) -> None:
        self.scanned_chars += 1
        guard = self._guard
        guard.add(i, c)
        kind, _ = char_kind(c)
        space = kind == SPACE
        newline = space and c in NEWLINES and not guard.ssml  # SSML: a newline is layout, not a sentence end
        if self._start is None:
            if space:
                if newline:
                    self._line_has_content = False
                    self._continues = False  # a newline ends the sentence a cut chunk was continuing
                self._prev = c
                return
            self._start = i
        if self._pending is not None and (newline or not space) and self._resolve_pending(i, c, newline):
            return
        run = self._run
        if run is not None and not self._extend_run(run, i, c):
            self._run = None
            if self._close_run(run, c, space, newline):
                return
        self._account(i, c, kind, space, newline)

    def _resolve_pending(self, i: int, c: str, newline: bool) -> bool:
        """``c`` (a newline or the first non-space) decides the pending sentence end; returns whether it cut."""
        pending = self._pending
        assert pending is not None
        if pending.kind == _TERM and c in SPACED_CLOSERS and not newline:
            pending.end = i + 1  # "Oui ! » Puis": the quote closes the sentence before it
            return False
        self._pending = None
        if pending.kind == _CLAUSE_RUN:  # "March 15, 2025": never between a day and its year
            return not c.isdigit() and self._boundary(pending.end, _CLAUSE)
        if c == "<" and self._guard.ssml:
            return False  # "Done. <break/>": the tag goes with the sentence before it, never alone
        ends = newline or run_ends_sentence(pending.single_period, pending.word, c, at_line_start=pending.at_line_start)
        return ends and self._boundary(pending.end, _SENTENCE)

    def _extend_run(self, run: _Run, i: int, c: str) -> bool:
        if run.kind in (_DASH, _HYPHEN):
            if c in DASHES or c in HYPHENS:
                run.marks += 1
                run.end = i + 1
                return True
            return False
        if c in _PUNCT and not run.closing:
            run.marks += 1
            run.single_period = False
            run.dotted = run.dotted or c in ".…"
            run.kind = _punct_kind(c, run.kind)
            run.end = i + 1
            return True
        if c in CLOSERS:
            run.closing = True
            run.end = i + 1
            return True
        return False

    def _close_run(self, run: _Run, c: str, space: bool, newline: bool) -> bool:
        """The run ended just before ``c``; returns whether a cut happened."""
        kind = run.kind
        if kind == _CJK_TERM:
            # 「行きます。」と言った: a quoted sentence that a particle (hiragana) goes on from is not the end
            return not (run.closing and "\u3040" <= c <= "\u309f") and self._boundary(run.end, _SENTENCE)
        if kind in (_CJK_CLAUSE_RUN, _DASH):
            return self._boundary(run.end, _CLAUSE)
        if kind == _HYPHEN:
            # " - " between words, or "--" inside a word; not "-5", "well-known", "10–12" or "--flag".
            if (run.spaced_before and space) or (run.marks >= 2 and not run.spaced_before):
                return self._boundary(run.end, _CLAUSE)
            return False
        if kind == _CLAUSE_RUN and space and not newline and DAY.fullmatch(run.word):
            self._pending = run  # a day's comma: its year may follow
            return False
        if kind == _CLAUSE_RUN and (space or is_cjk(c)):
            return self._boundary(run.end, _CLAUSE)
        if not space:
            # "3.14", "a.b", "10:30", "?c=d" are inside a token; "好!我" is CJK written with ASCII marks.
            return is_cjk(c) and self._boundary(run.end, _SENTENCE)
        if newline:
            return self._boundary(run.end, _SENTENCE)
        self._pending = run
        return False

    def _account(self, i: int, c: str, kind: int, space: bool, newline: bool) -> None:
        guard = self._guard
        if guard.in_override_target:
            self._est.add_fixed(QUARTERS)  # "(/ʃɪvˈɔn/)" is what the model reads: a phoneme a character
        else:  # a link's target counts as read: one never closed (``[a](`` repeated) is read whole
            self._est.add(c)
        if space:
            token_start = self._token_start
            if token_start is not None:
                self._token_start = None
                self._word_boundary(token_start, i)
                if self._planner is not None and self._first_word_done(token_start, i):
                    return
            if newline:
                self._line_has_content = False
                if self._boundary(i, _SENTENCE):
                    return
        else:
            if self._token_start is None:
                self._token_start = i
                self._token_counted = False
                self._token_at_line_start = not self._line_has_content
            self._line_has_content = True
            self._content_end = i + 1
            alnum = kind == CJK or c.isalnum()
            if alnum:
                prev = self._prev
                unspaced = i > self._start and prev.isalnum() and (kind == CJK or is_cjk(prev))
                if unspaced and self._cuttable(i):
                    # A word boundary inside unspaced text ("机器|人", "用|Python").
                    self._last_word = (i, self._est.quarters)
                    if self._first and self._cjk_cut_due(prev, c) and self._cut(i, sentence_end=False):
                        return
                if kind == CJK:
                    self._words += 1
                    self._cjk_chars += 1
                    self._token_counted = False
                elif not self._token_counted:
                    self._words += 1
                    self._token_counted = True
                if self._first_alnum is None:
                    self._first_alnum = i
            elif self._run is None:
                self._start_run(i, c)
        self._prev = c
        if self._est.quarters > self._max_quarters and not c.isspace():  # spaces after a chunk's end are not its cost
            self._split_long(i)

    def _cjk_cut_due(self, before: str, after: str) -> bool:
        """Cuts unspaced text's first fragment at its limit, at a phrase boundary if one comes within a few
        characters."""
        if self._words < self._max_first_words:
            return False
        forced = self._words >= self._max_first_words + CJK_PHRASE_WAIT
        return forced or cjk_phrase_boundary(self._language, before, after)

    def _start_run(self, i: int, c: str) -> None:
        if c in _PUNCT:
            kind = _punct_kind(c)
        elif c in DASHES:
            kind = _DASH
        elif c in HYPHENS:
            kind = _HYPHEN
        else:
            return
        token_start = self._token_start if self._token_start is not None else i
        word = clean_word(self._slice(token_start, i)) if i - token_start <= _MAX_WORD else ""
        spaced_before = not self._prev or self._prev.isspace()
        self._run = _Run(kind, i + 1, word, self._token_at_line_start, spaced_before, c == ".", c in ".…")

    def _first_word_done(self, token_start: int, i: int) -> bool:
        """A first-fragment token ended at ``i``: the planner may force the cut there or earlier; returns whether it
        did."""
        assert self._planner is not None
        if i - token_start > _MAX_WORD:
            token, may_follow = "", True  # too long to be an abbreviation or a function word
        else:
            token = self._slice(token_start, i)
            may_follow = cut_may_follow(token, at_line_start=self._token_at_line_start)
        may_follow = may_follow and self._cuttable(i)
        cut = self._planner.word_done(token, i, self._words, may_follow)
        if cut is None or (cut < i and may_follow and self._pending is not None):
            return False  # nothing yet, or the token ends a sentence if the next character agrees: better cut
        return self._cut(cut, sentence_end=False)

    # ---- cutting --------------------------------------------------------------------------------------

    def _cuttable(self, p: int) -> bool:
        """A word or clause boundary at ``p`` may be cut: not inside a span, and never in SSML."""
        return not self._guard.ssml and not self._guard.inside(p)

    def _word_boundary(self, token_start: int, i: int) -> None:
        """A token ended at ``i``: remember the boundary for the ceiling, unless it splits a number from its unit."""
        token = self._slice(token_start, i) if i - token_start <= _MAX_WORD else ""
        gap, self._number_gap = self._number_gap, None
        if gap is not None and not number_binds(token, FREE_AFTER_NUMBER):
            self._last_word = gap
        if self._guard.inside(i):
            return  # (in SSML, a top-level word boundary is still a last resort for the ceiling)
        if token and is_number_token(token):
            self._number_gap = (i, self._est.quarters)
        else:
            self._last_word = (i, self._est.quarters)

    def _boundary(self, p: int, kind: int) -> bool:
        """A confirmed sentence end or clause boundary at ``p``: cut there if the rules say so, else remember it."""
        if self._first_alnum is None or self._first_alnum >= p or self._start is None:
            return False  # nothing speakable before it
        if self._guard.inside(p) or (kind == _CLAUSE and self._guard.ssml):
            return False  # inside "[word](/phonemes/)", a link, an SSML tag or element
        if self._cut_due(p, kind):
            return self._cut(p, sentence_end=kind == _SENTENCE)
        mark = (p, self._est.quarters)
        if kind == _CLAUSE:
            self._last_clause = mark
        else:
            self._last_sentence = mark
        return False

    def _cut_due(self, p: int, kind: int) -> bool:
        """Whether a boundary at ``p`` is cut rather than held: the first fragment's once it has enough words, a later
        sentence end once the sentence is not under the floor."""
        assert self._start is not None
        if self._first:
            return self._words >= self._min_first_words
        # A CJK character is a syllable, about three Latin letters' worth of speech.
        length = min(self._content_end, p) - self._start + 2 * self._cjk_chars
        return kind == _SENTENCE and (self._continues or length >= self._min_sentence_chars)

    def _split_long(self, i: int) -> None:
        """The held chunk went over the ceiling with the character at ``i``: cut at its best earlier boundary (sentence,
        clause, word), never a sliver under a quarter of the ceiling."""
        floor = self._max_quarters // 4
        sentence, clause, word = self._last_sentence, self._last_clause, self._last_word
        for mark, ends in ((sentence, True), (clause, False)):
            if mark is not None and mark[1] >= floor:
                self._cut(mark[0], sentence_end=ends)
                return
        for mark, ends in ((word, False), (sentence, True), (clause, False)):
            if mark is not None:
                self._cut(mark[0], sentence_end=ends)
                return
        if self._start is not None and i > self._start:
            self._cut(i, sentence_end=False)

    def _cut(self, p: int, *, sentence_end: bool) -> bool:
        """Releases the held text up to ``p`` as a chunk and rescans what follows as a new one."""
        assert self._start is not None and p > self._start
        chunk = self._slice(self._start, p).rstrip()
        if chunk:
            self._out.append(chunk)
        # Bounded: a sentence cut again and again at the ceiling must not make each token's check longer.
        self._sentence_head = "" if sentence_end else f"{self._sentence_head}{chunk} "[-_HEAD_CHARS:]
        self._first = False
        self._new_chunk()
        self._guard.restart(p)
        self._continues = not sentence_end
        self._line_has_content = True
        self._prev = self._buf[p - 1 - self._base]
        self._pos = p
        return True
