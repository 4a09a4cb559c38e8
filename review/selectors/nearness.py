"""How alike two proposals are: the near-duplicate score (plain data in, plain data out; no Django).

A proposal's *terms* are the analyzer's words of its compared fields (every field of an
Experience; a Skill's name, description, instructions and validation lines), stemmed the way the
search index stems them, without the query stop words ("the", "of", ...), plus the words of its
*distinguishing* fields (an Experience's lesson; a Skill's name and description) once more in
``EMPHASIS`` tagged copies, so those fields count ``EMPHASIS + 1`` times. A term set is stored
as a bottom-k MinHash *sketch* (the ``SKETCH`` smallest 56-bit hashes: the whole set up to that
many terms).

The score is a weighted Jaccard similarity: each term weighs its smoothed inverse document
frequency over the scope's compared window (``1 + ln((1 + n) / (1 + df))``), so words that many
proposals of the scope share (a template's boilerplate lines, the scope's jargon) count for less
than the words that make a lesson its own. Together the two keep distinct lessons written into
one template apart (they share most words but not their lessons) and keep copies together even
in a scope full of copies (they share their lessons). Calibrated on labelled pairs:
``manage.py eval_near_duplicates`` (``powercontext/evaluation/near_duplicates.py``). With no
window (``Weights.uniform``) the weights are all 1.
"""

from __future__ import annotations

import hashlib
import heapq
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from powercontext.search.fulltext import analyzer

SKETCH = 256  # bottom-k hashes kept per term set: exact similarity up to this many distinct terms

# The fields compared, per family (a missing field counts as empty text).
FIELDS: dict[str, tuple[str, ...]] = {
    "experience": ("situation", "action", "outcome", "lesson"),
    "skill": ("name", "description", "instructions", "validation"),
}


# The fields that make a proposal its own (a template rarely fills them), and how many extra
# tagged copies of their words a term set holds.
DISTINGUISHING: dict[str, tuple[str, ...]] = {"experience": ("lesson",), "skill": ("name", "description")}
EMPHASIS = 4


def _texts(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(item) for item in value]
    return [] if value is None else [str(value)]


def term_of(word: str) -> str | None:
    """The compared form of one analyzer term (its index stem), or None for a stop word."""
    return None if word in analyzer.STOP_WORDS else analyzer.index_term(word)


def terms_of_words(words: Iterable[str]) -> set[str]:
    """Compared terms of already analyzed words (e.g. an Artifact head's ``searchable_text``)."""
    return {term for word in words if (term := term_of(word)) is not None}


def terms(proposal: Any, family: str = "experience", *, emphasis: int = EMPHASIS) -> set[str]:
    """Compared terms of a proposal of ``family`` (empty for anything else); ``emphasis``: the
    tagged copies of the distinguishing fields' words (0: none, the plain word set)."""
    fields = FIELDS.get(family)
    if not fields or not isinstance(proposal, Mapping):
        return set()
    values = [text for name in fields for text in _texts(proposal.get(name))]
    found = terms_of_words(analyzer.searchable_text(values).split())
    for name in DISTINGUISHING.get(family, ()):
        own = terms_of_words(analyzer.searchable_text(_texts(proposal.get(name))).split())
        found.update(f"{copy}{name}:{term}" for term in own for copy in range(emphasis))
    return found


def term_hash(term: str) -> int:
    # Stable across processes (the sketch is stored), 56 bits: a JSON and database integer.
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=7).digest(), "big")


def sketch(found: Iterable[str]) -> list[int]:
    """The ``SKETCH`` smallest hashes of a term set, ascending (a bottom-k MinHash sketch)."""
    return heapq.nsmallest(SKETCH, {term_hash(term) for term in found})


class Weights:
    """Term weights from document frequencies over a window of sketches (one scope's)."""

    def __init__(self, sketches: Iterable[Iterable[int]] = ()) -> None:
        self.df: Counter[int] = Counter()
        self.n = 0
        for hashes in sketches:
            self.df.update(set(hashes))
            self.n += 1
        self._cache: dict[int, float] = {}

    @classmethod
    def uniform(cls) -> Weights:
        return cls()

    def of(self, value: int) -> float:
        if not self.n:
            return 1.0
        found = self._cache.get(value)
        if found is None:
            found = 1.0 + math.log((1 + self.n) / (1 + self.df.get(value, 0)))
            self._cache[value] = found
        return found

    def total(self, values: Iterable[int]) -> float:
        return sum(self.of(value) for value in values)


@dataclass(frozen=True)
class Sketched:
    """One compared term set: its sketch (as a set), its largest hash, its distinct term count,
    and its total weight under the window's ``Weights`` (see ``sketched``)."""

    hashes: frozenset[int]
    top: int
    count: int
    weight: float


def sketched(hashes: Sequence[int], count: int, weights: Weights) -> Sketched:
    found = frozenset(hashes)
    return Sketched(found, max(found, default=0), count, weights.total(found))


def score(a: Sketched, b: Sketched, weights: Weights) -> float:
    """Weighted Jaccard similarity of two term sets from their sketches: exact when both hold
    at most ``SKETCH`` distinct terms (the sketch is then the whole set), else estimated over the
    hashes below the smaller of the two sketches' largest."""
    if not a.hashes or not b.hashes:
        return 0.0
    if a.count <= SKETCH and b.count <= SKETCH:
        shared = weights.total(a.hashes & b.hashes)
        union = a.weight + b.weight - shared
        return shared / union if union > 0 else 0.0
    limit = min(a.top, b.top)
    mine = {value for value in a.hashes if value <= limit}
    theirs = {value for value in b.hashes if value <= limit}
    union = weights.total(mine | theirs)
    return weights.total(mine & theirs) / union if union > 0 else 0.0


def may_reach(a: Sketched, b: Sketched, threshold: float) -> bool:
    """A cheap necessary condition for ``score(a, b) >= threshold`` (exact sets): the lighter
    set must weigh at least ``threshold`` of the heavier."""
    if a.count > SKETCH or b.count > SKETCH:
        return True
    low, high = sorted((a.weight, b.weight))
    return high <= 0 or low >= threshold * high - 1e-9
