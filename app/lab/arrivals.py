"""When concurrent callers speak up (pure): the one arrivals definition of the concurrency and capacity scenarios.

- *spread* (default): at level N each session speaks up at a random moment within the time one request takes
  alone (measured at level 1 first), like independent callers. The moments are drawn from one ``random.Random``
  seeded with ``SEED``, so two runs with the same options draw the same ones.
- *together*: all N at the same instant, the worst case: one model necessarily synthesizes N first sentences one
  after another.
At level 1 the pattern does not matter (one caller, no wait): that level is *alone*.
"""

from __future__ import annotations

import random

from voicedesk.engine.errors import UsageError

ARRIVALS = ("spread", "together")
ALONE = "alone"
SEED = 115
"""Kokoro-FastAPI's issue #115, the failure the concurrency goal guards against."""


def parse_arrivals(text: str) -> tuple[str, ...]:
    """``spread``, ``together`` or both (``spread,together``), in the order given, without repeats."""
    arrivals = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    if not arrivals or any(a not in ARRIVALS for a in arrivals):
        raise UsageError(f"--arrival takes spread, together or spread,together; got {text!r}.")
    return arrivals


def new_rng() -> random.Random:
    return random.Random(SEED)


def arrival_delays(rng: random.Random, sessions: int, arrival: str, window_s: float | None) -> list[float]:
    """Seconds each of ``sessions`` callers waits before speaking up.

    Spread arrivals need ``window_s`` (one request's time alone); without it (no level 1 was measured) they
    arrive together, and the caller should say so.
    """
    if arrival not in ARRIVALS:
        raise ValueError(f"unknown arrival pattern {arrival!r}; known: {', '.join(ARRIVALS)}")
    if sessions < 1:
        raise ValueError(f"sessions must be at least 1; got {sessions}")
    if sessions == 1 or arrival == "together" or window_s is None:
        return [0.0] * sessions
    return [rng.uniform(0.0, window_s) for _ in range(sessions)]


def pattern_at(sessions: int, arrival: str) -> str:
    """What a level's arrivals are called in reports: 'alone' at one session, else the pattern."""
    return ALONE if sessions == 1 else arrival
