"""Where to force the first chunk's cut when no clause boundary came: at a phrase boundary, not inside a phrase.

Cutting blindly at ``first_fragment_max_words`` splits phrases ("the living | room"), which Kokoro speaks as two broken
halves. ``FirstCutPlanner`` is told each word and ranks each boundary: 1 before a conjunction or relative pronoun, 2
before a preposition, 3 before a noun phrase, 4 anywhere else, never after a word that binds to the next ("the", "will",
"want"). ``FIRST_CUTS`` decides how eagerly (clause, the default; phrase; at-max). The word lists are English and small
on purpose: text with no English function word keeps the plain rule."""

from __future__ import annotations

from voicedesk.engine.text.chunking.protected_spans import is_number_token, number_binds

FIRST_CUTS = {"clause": 1, "phrase": 2, "at-max": 0}
"""First-cut policy → the highest tier cut eagerly (``voicedesk bench first-cut`` measures each)."""
PHRASE_WAIT_WORDS = 4
"""How many words past ``first_fragment_max_words`` the first fragment may wait for a phrase boundary."""
PHRASE_MIN_WORDS = 5
"""The fewest words an eager phrase cut leaves in the first fragment: fewer sounds clipped ("Let me check | …").
A clause boundary (a comma) may still cut after ``min_first_words``: the writer put a pause there."""

CLAUSE_OPENERS = frozenset(
    """
    and but or nor yet so & because although though while whereas unless until since if whether
    when whenever where wherever after before once that which who whom whose
    """.split()
)
"""Tier 1: a boundary before these starts a new clause."""

PREPOSITIONS = frozenset(
    """
    to for with from by in on at about into onto over under through during without within between among
    against across around behind beyond near toward towards upon along via per like than including except
    despite throughout unlike
    """.split()
)
"""Tier 2: a boundary before these starts a prepositional or infinitive phrase. Not "of" ("the end | of it"),
nor particles that mostly belong to their verb ("off", "up", "out")."""

PHRASE_OPENERS = frozenset(
    """
    a an the this these those my your his her its our their some any every each no all both another
    i we they he she
    """.split()
)
"""Tier 3: a boundary before these starts a noun phrase or a clause's subject."""

_BINDING = """
    a an the my your his her its our their some any every each no all both either neither another such what
    whatever whichever
    enough more most less least many much few several very too quite rather also just only even still really
    not never please
    of
    am is are was were be been being have has had do does did will would shall should can could may might must
    i'm you're we're they're he's she's it's that's there's here's what's i've you've we've they've i'll
    you'll we'll they'll he'll she'll it'll that'll i'd you'd we'd they'd don't doesn't didn't won't wouldn't
    can't couldn't shouldn't isn't aren't wasn't weren't haven't hasn't hadn't let's let
    i we they he she
    want wants wanted need needs needed going trying try tried able supposed used ought hope plan love hate
    turn turns turned turning switch switches switched log logged sign signed plug plugged hold hang carry
    """
BINDING = (frozenset(_BINDING.split()) | CLAUSE_OPENERS | PREPOSITIONS) - {"that"}
"""Words a boundary never directly follows. Demonstratives ("this", "that") are not: as pronouns they often end
a phrase ("help you with that | and …")."""

ENGLISH_MARKERS = frozenset(
    "the and to of you your that with for this it is are was i will would can have what my".split()
)
"""Function words common in English and rare as words elsewhere: one of them switches the phrase rule on."""

_EDGE = "\"'“”‘’()[]{}«»‹›「」*_`.,;:!?¡¿…-–—"


def phrase_word(token: str) -> str:
    """A token as the word lists spell it: lower-case, apostrophes straightened, edge punctuation stripped."""
    return token.replace("’", "'").strip(_EDGE).lower()


def opening_tier(word: str) -> int:
    """How well a boundary before ``word`` (from ``phrase_word``) starts a phrase: 1 (clause) to 4 (no reason)."""
    if word in CLAUSE_OPENERS:
        return 1
    if word in PREPOSITIONS:
        return 2
    if word in PHRASE_OPENERS:
        return 3
    return 4


FREE_AFTER_NUMBER = CLAUSE_OPENERS | PREPOSITIONS | PHRASE_OPENERS
"""Words a number does not bind to: a boundary between "at 5" and "and then" may be cut; any other word after
a number is its unit or what it counts ("-5 °C", "1,200 W", "6:45 AM", "3 million"), see ``number_binds``."""


class FirstCutPlanner:
    """Picks the forced cut of one early first fragment (see module doc); pure, O(1) per word."""

    __slots__ = (
        "_allowed",
        "_bound",
        "_eager_min",
        "_eager_tier",
        "_english",
        "_gap",
        "_gap_words",
        "_latest",
        "_max_words",
        "_min_words",
        "_open",
        "_open_words",
    )

    def __init__(self, min_words: int, max_words: int, first_cut: str = "clause") -> None:
        self._min_words = min_words
        self._max_words = max_words
        self._eager_min = max(min_words, PHRASE_MIN_WORDS)
        """Words an eager cut needs before it."""
        self._eager_tier = FIRST_CUTS[first_cut]
        self._open_words = 0
        self._gap_words = 0
        self._bound = max_words + PHRASE_WAIT_WORDS
        self._open: int | None = None
        """The last boundary a binding word does not precede, waiting for the word after it to get its tier."""
        self._latest: list[int | None] = [None] * 5
        """The latest boundary of each tier (index 1-4)."""
        self._allowed: int | None = None
        self._english = False
        self._gap: int | None = None
        """A boundary right after a number, undecided until the word after it shows it is not the number's unit."""

    def word_done(self, token: str, position: int, words: int, may_follow: bool) -> int | None:
        """Takes the token that ended at ``position``; returns where to cut now, or None to wait."""
        word = phrase_word(token)
        if word in ENGLISH_MARKERS:
            self._english = True
        tier = opening_tier(word)
        eager = None
        gap, self._gap = self._gap, None
        if gap is not None and number_binds(token, FREE_AFTER_NUMBER):
            gap = None  # "-5 | °C", "1,200 | W": never a boundary
        if gap is not None:
            self._allowed = gap
            self._latest[tier] = gap
            eager = self._eager(gap, self._gap_words, tier)
        if self._open is not None:
            self._latest[tier] = self._open
            eager = self._eager(self._open, self._open_words, tier)
            self._open = None
        number = is_number_token(token)
        eligible = words >= self._min_words and may_follow
        if eligible:
            if number:
                self._gap, self._gap_words = position, words
            else:
                self._allowed = position
                if word not in BINDING:
                    self._open, self._open_words = position, words
        if eager is not None and self._english:
            return eager
        if words < self._max_words:
            return None
        if not self._english:
            return position if eligible and not number else gap
        for tier in (1, 2):
            if self._latest[tier] is not None:
                return self._latest[tier]
        if words < self._bound:
            return None
        if self._latest[3] is not None:
            return self._latest[3]
        if self._open == position:
            return position  # the latest tier-4 boundary: its next word is unknown, but it is not inside a phrase
        return self._latest[4] if self._latest[4] is not None else self._allowed

    def _eager(self, boundary: int, words_before: int, tier: int) -> int | None:
        """The boundary, if it is good enough to cut at once (its tier cut eagerly, enough words before it)."""
        if tier > self._eager_tier or words_before < self._eager_min:
            return None
        return boundary
