"""A bounded memo of NeMo's answers: a stretch seen before costs a look-up instead of a 5-30 ms WFST composition. Calls
go one at a time, since NeMo's ``Normalizer`` keeps parser state."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable

DEFAULT_MEMO_SIZE = 4096
"""Stretches remembered (a few words each: well under 1 MB)."""


class MemoNormalize:
    """``normalize`` with a least-recently-used memo of ``size`` entries (0: no memo, every call reaches NeMo)."""

    def __init__(self, normalize: Callable[[str], str], size: int = DEFAULT_MEMO_SIZE) -> None:
        self._normalize = normalize
        self.size = size
        self._memo: OrderedDict[str, str] = OrderedDict()
        self._memo_lock = threading.Lock()
        self._call_lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __call__(self, text: str) -> str:
        found = self.cached(text)
        if found is not None:
            return found
        with self._call_lock:
            found = self.cached(text)  # another thread may have just normalized it
            if found is not None:
                return found
            spoken = self._normalize(text)  # an error is raised, never remembered
        with self._memo_lock:
            self.misses += 1
            if self.size > 0:
                self._memo[text] = spoken
                while len(self._memo) > self.size:
                    self._memo.popitem(last=False)
        return spoken

    def cached(self, text: str) -> str | None:
        with self._memo_lock:
            spoken = self._memo.get(text)
            if spoken is not None:
                self._memo.move_to_end(text)
                self.hits += 1
            return spoken

    def latest(self, count: int) -> list[tuple[str, str]]:
        """The ``count`` stretches used or added last (oldest first), to hand a warm-up's work to another process."""
        with self._memo_lock:
            if count <= 0:
                return []
            return list(self._memo.items())[-count:]

    def remember(self, entries: Iterable[tuple[str, str]]) -> None:
        """Takes stretches another process normalized (its ``latest``): the same grammars give the same answers."""
        if self.size <= 0:
            return
        with self._memo_lock:
            for written, spoken in entries:
                self._memo[written] = spoken
                self._memo.move_to_end(written)
            while len(self._memo) > self.size:
                self._memo.popitem(last=False)

    def clear(self) -> None:
        with self._memo_lock:
            self._memo.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._memo)
