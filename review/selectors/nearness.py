"""How alike two proposals are: the near-duplicate score (plain data in, plain data out; no Django).

A proposal's *terms* are the analyzer's words of its compared fields (every field of an
Experience; a Skill's name, description, instructions and validation lines), stemmed the way the
search index stems them, without the query stop words ("the", "of", ...), plus the words of its
*distinguishing* fields (an Experience's lesson; a Skill's name and description) once more in
``EMPHASIS`` tagged copies, so those fields count ``EMPHASIS + 1`` times. A term set is stored
as a bottom-k MinHash *sketch* (the ``SKETCH`` smallest 56-bit hashes: the whole set up to that
many terms).

The score is a weighted Jaccard similarity: each term weighs its inverse document frequency over
the scope's compared window of ``n`` term sets, plus a floor that fades as the window grows
(``ln((1 + n) / (1 + df)) + FLOOR / (FLOOR + n)``), so words that many proposals of the scope
share (a template's boilerplate lines, the scope's jargon) count for less than the words that
make a lesson its own, and a word every proposal of a large window holds counts for almost
nothing (issue 32: with the floor of 1 used before, 1,000 characters of boilerplate a field
outweighed a template-built lesson's own words). In a small window, where a shared word is no
evidence of a template, the floor keeps every word counting. Together the two keep distinct lessons written into
one template apart (they share most words but not their lessons) and keep copies together even
in a scope full of copies (they share their lessons). Calibrated on labelled pairs:
``manage.py eval_near_duplicates`` (``powercontext/evaluation/near_duplicates.py``). With no
window (``Weights.uniform``) the weights are all 1.
"""

from __future__ import annotations

import bisect
import hashlib
import heapq
import itertools
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from powercontext.search.fulltext import analyzer

SKETCH = 256  # bottom-k hashes kept per term set: exact similarity up to this many distinct terms
FLOOR = 50  # window size at which a term's weight floor is halved (see the module docstring)

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
            found = math.log((1 + self.n) / (1 + self.df.get(value, 0))) + FLOOR / (FLOOR + self.n)
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
    ordered: tuple[int, ...] = ()  # the hashes ascending ...
    below: tuple[float, ...] = ()  # ... and the weight of those up to each, inclusive

    def weight_up_to(self, limit: int) -> float:
        """The total weight of the hashes at most ``limit``."""
        at = bisect.bisect_right(self.ordered, limit)
        return self.below[at - 1] if at else 0.0


def sketched(hashes: Sequence[int], count: int, weights: Weights) -> Sketched:
    found = frozenset(hashes)
    ordered = tuple(sorted(found))
    below = tuple(itertools.accumulate(weights.of(value) for value in ordered))
    return Sketched(found, ordered[-1] if ordered else 0, count, below[-1] if below else 0.0, ordered, below)


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
    # Every shared hash is at most both sketches' largest, so the shared weight needs no cut.
    limit = min(a.top, b.top)
    shared = weights.total(a.hashes & b.hashes)
    union = a.weight_up_to(limit) + b.weight_up_to(limit) - shared
    return shared / union if union > 0 else 0.0


def may_reach(a: Sketched, b: Sketched, threshold: float) -> bool:
    """A cheap necessary condition for ``score(a, b) >= threshold`` (exact sets): the lighter
    set must weigh at least ``threshold`` of the heavier."""
    if a.count > SKETCH or b.count > SKETCH:
        return True
    low, high = sorted((a.weight, b.weight))
    return high <= 0 or low >= threshold * high - 1e-9


class PrefixIndex:
    """Which members of a window may reach ``threshold`` with a given one, without scoring every
    pair (weighted prefix filtering).

    Order every hash by weight, heaviest (rarest) first. If ``score(a, b) >= threshold``, the
    hashes the two sketches share weigh at least ``threshold`` times the whole sketch of the one
    with the smaller largest hash (``score`` compares all of that one; exact sets: either one).
    So the first shared hash in that order lies in that sketch's *prefix*: its hashes up to the
    point where what follows weighs less than ``threshold`` of the sketch. Every such pair
    therefore shares a hash that is in one side's prefix, and only those pairs are candidates.
    Boilerplate weighs little, so prefixes hold a proposal's own words and the lists are short.
    """

    def __init__(self, sketches: Sequence[Sketched], weights: Weights, threshold: float) -> None:
        self.holders: dict[int, list[int]] = {}  # hash -> members whose sketch holds it
        self.prefixed: dict[int, list[int]] = {}  # hash -> members whose prefix holds it
        self.prefixes: list[list[int]] = []
        for number, one in enumerate(sketches):
            for value in one.hashes:
                self.holders.setdefault(value, []).append(number)
            prefix = _prefix(one, weights, threshold)
            self.prefixes.append(prefix)
            for value in prefix:
                self.prefixed.setdefault(value, []).append(number)
        self.sketches = sketches

    def candidates(self, number: int) -> set[int]:
        """The members (by position) that may score at least the threshold with member
        ``number``, itself excluded."""
        found: set[int] = set()
        for value in self.prefixes[number]:
            found.update(self.holders.get(value, ()))
        for value in self.sketches[number].hashes:
            found.update(self.prefixed.get(value, ()))
        found.discard(number)
        return found


def _prefix(one: Sketched, weights: Weights, threshold: float) -> list[int]:
    ordered = sorted(one.hashes, key=lambda value: (-weights.of(value), value))
    need = (threshold - 1e-6) * one.weight  # a hair lower: float sums differ by order
    rest = one.weight
    prefix = []
    for value in ordered:
        if rest < need:
            break
        prefix.append(value)
        rest -= weights.of(value)
    return prefix
