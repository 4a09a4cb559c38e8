"""Prepare's Memory ranking: deep hybrid pools, neighbour smoothing, a speaker prior.

Tuned on the LoCoMo dev file, leave-one-conversation-out (``docs/retrieval.md``, "Relevance
floor and ranking"). Given the full-text ranking (``LEXICAL_DEPTH`` rows, BM25) and the vector
ranking (``VECTOR_DEPTH`` rows, cosine) of one head (``ranked_context``, prepare's entry, reads
both: ``fusion.one_head_rankings``):

1. **Pool**: the first ``POOL_DEPTH`` of each, plus each one's neighbours: the
   ``NEIGHBOUR_SPAN`` active entries remembered just before and just after it in the scope
   (adjacent membership ids of the head).
   A fact is often split over consecutive entries (a question and its answer, a turn and its
   follow-up); the neighbours let one carry the other in.
2. **Smoothed scores**: each pool entry's BM25 plus ``LEXICAL_NEIGHBOUR_WEIGHT`` times its
   neighbours' (0 where outside the full-text ranking), and its cosine plus
   ``VECTOR_NEIGHBOUR_WEIGHT`` times its neighbours' cosines; a neighbour at distance d counts
   ``NEIGHBOUR_DECAY ** (d - 1)``. These are ranking keys only: the
   entry's stored text and citation stay its own, and the relevance floor judges the entry's
   own similarity and lexical share.
3. **Fusion**: weighted reciprocal-rank fusion of the two smoothed rankings (the first
   ``POOL_DEPTH`` of each; full text weight 1, vectors ``fusion.VECTOR_WEIGHT``, k
   ``fusion.RRF_K``), scaled by the best possible score into (0, 1].
4. **Speaker prior**: ``SPEAKER_PRIOR`` is added when the entry starts with a speaker label
   (``Name:``) whose words the query names ("What did Caroline research?" prefers Caroline's
   own turns).

Every returned row carries its raw ``similarity`` and ``lexical_share`` (``relevance``) and its
``position`` in the head's order (the pack's cut reads which hits are neighbours).

Cost (issue 19's latency): the candidates are slots of value arrays laid out in the head's order,
so neighbours are offsets and both smoothings one numpy pass; cosines come by id from the matrix
the vector ranking just used (``vector_inprocess.memory_vectors``); the order, index rows, term
frequencies and rows read are kept per head revision (``rerank_state``); only the entries that
could still make the window (with the prior) get the prior, a row, an index row, a similarity.
The result is the one the steps above give, float for float (``tests/powercontext/test_rerank``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from powercontext.core.hits import ExperienceHit, MemoryHit
from powercontext.search.fulltext import analyzer, bm25, language_id
from powercontext.search.ranking import fusion, relevance, rerank_state
from powercontext.search.vectors import embedding, queries, vector_inprocess

if TYPE_CHECKING:
    import numpy as np
else:
    from powercontext.search.lazy_numpy import np

LEXICAL_DEPTH = 100  # full-text rows read (their BM25 feeds the neighbours' smoothed scores)
VECTOR_DEPTH = 50
POOL_DEPTH = 50  # per channel, before and after smoothing
NEIGHBOUR_SPAN = 2
NEIGHBOUR_DECAY = 0.5
LEXICAL_NEIGHBOUR_WEIGHT = 0.5
VECTOR_NEIGHBOUR_WEIGHT = 0.2
SPEAKER_PRIOR = 0.2
_SPEAKER = re.compile(r"\s*([^\s:][^:\n]{0,40}):\s")


def clear_cache() -> None:
    """Forget what ranking keeps per head: the ranking state and the hits' rows."""
    rerank_state.clear_cache()
    queries.clear_rows()


def _positions(ids: np.ndarray[Any, Any], keys: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Each key's position in the ascending ``ids``, -1 where it is not there."""
    if not len(ids):
        return np.full(len(keys), -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(ids, keys), len(ids) - 1)
    return np.where(ids[at] == keys, at, -1)


@lru_cache(maxsize=4096)
def _speaker_words(label: str) -> tuple[str, ...]:
    return tuple(analyzer.analyze(label))


def speaker_named(text: str, query_terms: set[str]) -> bool:
    """Whether ``text`` starts with a speaker label (``Name:``) whose words the query names."""
    if ":" not in text:  # no label (the quick test)
        return False
    match = _SPEAKER.match(text)
    if match is None:
        return False
    words = _speaker_words(match.group(1))
    return bool(words) and all(word in query_terms for word in words)


def _matrix_cosines(
    into: np.ndarray[Any, Any],
    ids: np.ndarray[Any, Any],
    vectors: vector_inprocess.MemoryVectors,
    query_vector: np.ndarray[Any, Any],
) -> None:
    """Put into ``into`` the cosine of each of ``ids`` that has a row of the scope's matrix
    ``vectors``, by one product over those rows in matrix order."""
    at = _positions(vectors.sorted_ids, ids)
    known = np.flatnonzero(at >= 0)
    rows = vectors.by_id[at[known]]
    by_row = np.argsort(rows)
    into[known[by_row]] = vectors.matrix[rows[by_row]] @ query_vector


def _cosines(
    scope_id: str, query: str, ids: np.ndarray[Any, Any], rows: dict[int, MemoryHit], revision: int | None
) -> np.ndarray[Any, Any]:
    """Raw cosines of the memberships ``ids`` (NaN: unknown): from the in-process matrix that
    ranked the vectors (``revision``: the head that ranking saw; a product over the candidates'
    rows), else read from the stored vectors of the rows known."""
    found = np.full(len(ids), np.nan)
    model = embedding.embedder()
    if model is None or not len(ids):
        return found
    vectors = vector_inprocess.memory_vectors(scope_id, model.model_id, revision)
    if vectors is not None:
        if vectors.live:
            _matrix_cosines(found, ids, vectors, model.embed_query(query))
        return found
    keys = ids.tolist()
    known = [rows[pk] for pk in keys if pk in rows]
    by_version = relevance.memory_similarities(scope_id, query, known)
    for i, pk in enumerate(keys):
        if pk in rows and rows[pk].entry_version_id in by_version:
            found[i] = by_version[rows[pk].entry_version_id]
    return found


# Neighbour offsets in the order their shares are added: distance 1 before and after, then 2...
_AROUND = tuple(offset for d in range(1, NEIGHBOUR_SPAN + 1) for offset in (-d, d))
_PAD = NEIGHBOUR_SPAN
_WEIGHTS = (LEXICAL_NEIGHBOUR_WEIGHT, VECTOR_NEIGHBOUR_WEIGHT)


@dataclass(frozen=True)
class _Slots:
    """Where values sit in one rank's arrays: ``_PAD`` zeros, the head's active entries in
    order, ``_PAD`` zeros, then the pool's entries outside that order (none unless the head
    moved). A neighbour beyond either end, or any neighbour of an entry outside the order,
    reads a zero: it adds nothing, as an absent neighbour does."""

    order: np.ndarray[Any, Any]  # the head's active membership ids, ascending
    outside: np.ndarray[Any, Any]  # pool membership ids not in it, ascending

    @property
    def size(self) -> int:
        return len(self.order) + 2 * _PAD + len(self.outside)

    def ids(self, at: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """The membership ids in the slots ``at`` (none of them padding)."""
        pad = np.zeros(_PAD, dtype=np.int64)
        ids: np.ndarray[Any, Any] = np.concatenate([pad, self.order, pad, self.outside])[at]
        return ids

    def of(self, keys: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """The slot of each membership id (-1: none)."""
        at = _positions(self.order, keys)
        if not len(self.outside):
            return np.where(at >= 0, at + _PAD, -1)
        beyond = _positions(self.outside, keys)
        return np.where(at >= 0, at + _PAD, np.where(beyond >= 0, beyond + len(self.order) + 2 * _PAD, -1))

    def place(
        self, into: np.ndarray[Any, Any], keys: np.ndarray[Any, Any], values: np.ndarray[Any, Any]
    ) -> None:
        """Put ``values`` in the slots of ``keys`` (those with a slot) of ``into``."""
        slots = self.of(keys)
        into[slots[slots >= 0]] = values[slots >= 0]


def _pool_and_neighbours(
    order: rerank_state.Head | None, pool: list[int]
) -> tuple[_Slots, np.ndarray[Any, Any]]:
    """The slots, and the candidates as slots: the pool's entries and their neighbours (within
    ``NEIGHBOUR_SPAN`` in the order), ascending."""
    ids = order.ids if order is not None else np.zeros(0, dtype=np.int64)
    keys = np.asarray(pool, dtype=np.int64)
    at = _positions(ids, keys)
    slots = _Slots(ids, np.sort(keys[at < 0]))
    near = np.zeros(len(ids) + 2 * _PAD, dtype=bool)  # by slot
    for offset in range(-NEIGHBOUR_SPAN, NEIGHBOUR_SPAN + 1):
        near[at[at >= 0] + _PAD + offset] = True
    near[:_PAD] = near[len(ids) + _PAD :] = False
    inside = np.flatnonzero(near)
    beyond = np.arange(len(ids) + 2 * _PAD, slots.size)
    return slots, np.concatenate([inside, beyond])


def _smoothed(
    values: np.ndarray[Any, Any], slots: _Slots, at: np.ndarray[Any, Any], weights: np.ndarray[Any, Any]
) -> np.ndarray[Any, Any]:
    """Per row of ``values`` (one value by slot) and candidate: its value plus the row's weight
    times its neighbours' (a neighbour at distance d counts ``NEIGHBOUR_DECAY ** (d - 1)``),
    added in the order ``_AROUND`` lists them."""
    inside = at < len(slots.order) + _PAD  # outside the order: no neighbours
    near = values[:, np.where(inside, at + np.asarray(_AROUND)[:, None], 0)]  # (rows, offsets, candidates)
    around = near[:, 0]  # the first share is 1 (distance 1)
    for i, offset in enumerate(_AROUND[1:], start=1):
        around = around + NEIGHBOUR_DECAY ** (abs(offset) - 1) * near[:, i]
    smoothed: np.ndarray[Any, Any] = values[:, at] + weights[:, None] * around
    return smoothed


def _top(ids: np.ndarray[Any, Any], scores: np.ndarray[Any, Any], depth: int) -> np.ndarray[Any, Any]:
    """Indexes of the ``depth`` best positive scores, best first, ties by membership id."""
    positive = np.flatnonzero(scores > 0)
    return positive[np.lexsort((ids[positive], -scores[positive]))][:depth]


def _fused(
    ids: np.ndarray[Any, Any], rankings: Sequence[tuple[float, np.ndarray[Any, Any]]]
) -> np.ndarray[Any, Any]:
    """Weighted reciprocal-rank fusion over the candidates (0: in no ranking)."""
    fused = np.zeros(len(ids))
    for weight, ranking in rankings:
        fused[ranking] = fused[ranking] + weight / (fusion.RRF_K + np.arange(1, len(ranking) + 1))
    return fused


def _content_terms(groups: list[analyzer.Group], words: list[str], language: str) -> list[analyzer.Group]:
    """``relevance.content_terms`` of the query with these ``analyzer.query_groups`` and
    ``analyzer.analyze`` results, without analysing it again: its groups when it has any words
    besides stop words (``query_groups`` then keeps exactly those), else none."""
    return groups if analyzer.content_words(words, language) else []


def _annotated(row: MemoryHit, **figures: Any) -> MemoryHit:
    """``dataclasses.replace(row, **figures)`` without its checks of every field (the window's
    rows are built on every prepare)."""
    return MemoryHit(**{**vars(row), **figures})


def _text(pk: int, rows: dict[int, MemoryHit], texts: dict[int, str]) -> str:
    row = rows.get(pk)
    return row.text if row is not None else texts.get(pk, "")


def rank_memory(
    scope_id: str,
    query: str,
    lexical: Sequence[MemoryHit],
    semantic: Sequence[MemoryHit],
    limit: int,
    document_counts: Mapping[str, int] | None = None,
) -> list[MemoryHit]:
    """The fused, smoothed, annotated ranking of one head's full-text and vector rankings (both
    citing one head revision), best first, at most ``limit`` rows. ``document_counts``:
    document frequencies of query terms the full-text ranking's statement counted at that head (not read
    again)."""
    rows: dict[int, MemoryHit] = {}
    for row in (*lexical, *semantic):
        rows.setdefault(row.key, row)
    if not rows:
        return []
    revision = next(iter(rows.values())).revision
    if revision is None:  # search hits always cite their head; nothing to rank without one
        return []
    # BM25 again with the scope's own document count and average length (FTS5 counts the whole
    # table's): the smoothing adds scores across entries, so their scale matters, not only order.
    words = analyzer.analyze(query)  # the query is analysed once
    language = language_id.identify(query)
    groups = analyzer.query_groups(words, language)
    query_terms = analyzer.forms(groups)
    known = rerank_state.head(scope_id, revision)
    figures = rerank_state.figures(scope_id, query_terms, revision, known, document_counts)
    counted = rerank_state.index_counts(scope_id, [row.key for row in lexical], query_terms, known)
    lexical_scores = [bm25.score(figures, query_terms, row.text, counted.get(row.key)) for row in lexical]
    pool = list(
        dict.fromkeys([row.key for row in lexical[:POOL_DEPTH]] + [row.key for row in semantic[:POOL_DEPTH]])
    )
    slots, at = _pool_and_neighbours(known, pool)
    ids = slots.ids(at)
    # Raw cosines of every candidate (the vector hits' scores are their cosines, clamped at 0);
    # the vector ranking just read the matrix at this revision when it found anything.
    cosine = _cosines(scope_id, query, ids, rows, revision if semantic else None)
    values = np.zeros((2, slots.size))  # BM25, cosine clamped at 0
    slots.place(
        values[0], np.asarray([row.key for row in lexical], dtype=np.int64), np.asarray(lexical_scores)
    )
    has_cosine = ~np.isnan(cosine)
    values[1, at[has_cosine]] = np.maximum(cosine[has_cosine], 0.0)
    smoothed = _smoothed(values, slots, at, np.asarray(_WEIGHTS))
    lexical_rank = _top(ids, smoothed[0], POOL_DEPTH)
    vector_rank = _top(ids, smoothed[1], POOL_DEPTH)
    fused = _fused(ids, [(fusion.FTS_WEIGHT, lexical_rank), (fusion.VECTOR_WEIGHT, vector_rank)])
    best = (fusion.FTS_WEIGHT + (fusion.VECTOR_WEIGHT if len(vector_rank) else 0.0)) / (fusion.RRF_K + 1)
    found = np.flatnonzero(fused > 0)
    keys, scores = ids[found].tolist(), (fused[found] / best).tolist()
    query_words = set(words)
    # From here only the entries that could make the window with the prior count: their rows
    # (found by neither ranking: for the speaker prior) and index rows not yet known are read.
    prior = SPEAKER_PRIOR if query_words else 0.0
    cut = sorted(scores)[-limit] if len(scores) >= limit > 0 else -math.inf
    near = {pk: score for pk, score in zip(keys, scores, strict=True) if score + prior >= cut}
    hits, docs = rerank_state.read_rows(
        scope_id,
        [pk for pk in near if pk not in rows],
        [pk for pk in near if pk not in counted],
        known,
    )
    texts = {row.key: row.text for row in hits}
    for row in hits:
        if row.key not in rows and row.revision == revision:  # matched_by set below
            rows[row.key] = row
    scored = {
        pk: score + (SPEAKER_PRIOR if speaker_named(_text(pk, rows, texts), query_words) else 0.0)
        for pk, score in near.items()
    }
    ranked = sorted(scored, key=lambda pk: (-scored[pk], pk))[:limit]
    ranked = [pk for pk in ranked if pk in rows]  # a neighbour gone since: left out
    similarity = dict(zip(keys, cosine[found].tolist(), strict=True))  # NaN: none
    # Outside the full-text ranking an entry can hold only the terms some entry outside it holds
    # (fewer in it than the scope's documents with the term): only those are looked for.
    holders = {term: sum(1 for counts, _ in counted.values() if term in counts) for term in query_terms}
    elsewhere = [term for term in query_terms if figures.frequencies[term] > holders[term]]
    counted.update(
        rerank_state.index_counts(
            scope_id, [pk for pk in ranked if pk not in counted], elsewhere, known, docs
        )
    )
    held = {pk: set(counted[pk][0]) for pk in ranked if pk in counted}
    weights = relevance.rarity_weighted(
        bm25.idf_weights(figures, _content_terms(groups, words, language)), words, language
    )
    shares: dict[frozenset[str], float] = {}  # by terms held: rows often hold the same ones

    def share(text: str, terms: set[str] | None) -> float:
        if terms is None:  # no index row: read from the text
            return relevance.lexical_share(weights, [text])
        key = frozenset(terms)
        if key not in shares:
            shares[key] = relevance.lexical_share(weights, [], held=key)
        return shares[key]

    channels: dict[int, set[str]] = {}
    for row in (*lexical, *semantic):
        if row.key in held or row.key in scored:
            channels.setdefault(row.key, set()).update(row.matched_by)
    positions = _positions(slots.order, np.asarray(ranked, dtype=np.int64)).tolist()
    return [
        _annotated(
            rows[pk],
            score=min(1.0, scored[pk] / (1.0 + SPEAKER_PRIOR)),
            matched_by=tuple(sorted(channels.get(pk, ()))) or ("neighbour",),
            similarity=None if math.isnan(similarity[pk]) else similarity[pk],
            lexical_share=share(rows[pk].text, held.get(pk)),
            position=position if position >= 0 else None,
        )
        for pk, position in zip(ranked, positions, strict=True)
    ]


def ranked_context(
    scope_id: str, query: str, *, memory_limit: int, experience_limit: int
) -> tuple[list[MemoryHit], list[ExperienceHit]]:
    """Prepare's candidates: Memory ranked by ``rank_memory`` over deep full-text and vector
    rankings of one head (neighbour smoothing, speaker prior; rows annotated with their
    similarity and lexical share), Experience by ``fusion.fuse_experience`` as in
    ``fusion.hybrid_search_context``."""
    lexical, semantic, experience, document_counts = fusion.one_head_rankings(
        scope_id, query, LEXICAL_DEPTH, VECTOR_DEPTH, experience_limit
    )
    # The head kept moving (no semantic ranking): lexical alone is consistent.
    memory = rank_memory(scope_id, query, lexical, semantic or [], memory_limit, document_counts)
    return memory, experience
