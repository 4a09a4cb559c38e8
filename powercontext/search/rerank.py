"""Prepare's Memory ranking: deep hybrid pools, neighbour smoothing, a speaker prior.

Tuned on the LoCoMo dev file, leave-one-conversation-out (``docs/retrieval.md``, "Relevance
floor and ranking"). Given the full-text ranking (``LEXICAL_DEPTH`` rows, BM25) and the vector
ranking (``VECTOR_DEPTH`` rows, cosine) of one head:

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
   ``POOL_DEPTH`` of each; full text weight 1, vectors ``vectors.VECTOR_WEIGHT``, k
   ``vectors.RRF_K``), scaled by the best possible score into (0, 1].
4. **Speaker prior**: ``SPEAKER_PRIOR`` is added when the entry starts with a speaker label
   (``Name:``) whose words the query names ("What did Caroline research?" prefers Caroline's
   own turns).

Every returned row carries its raw ``similarity`` and ``lexical_share`` (``relevance``).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from django.db import connection

from powercontext.core.hits import MemoryHit
from powercontext.core.models import (
    MEMORY_ARTIFACT_ID,
    MEMORY_FAMILY,
    Artifact,
    MemoryMembership,
    MemorySearchDocument,
)
from powercontext.search import analyzer, embedding, relevance, vector_inprocess
from powercontext.search.engines import scope_tokens
from powercontext.search.indexes import MEMORY_INDEX

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
CACHE_SCOPES = 256
_SPEAKER = re.compile(r"\s*([^\s:][^:\n]{0,40}):\s")

_ORDER_SQL = (
    f"SELECT a.current_revision, m.id FROM {MemoryMembership._meta.db_table} m"
    f" JOIN {Artifact._meta.db_table} a ON a.scope_id = m.scope_id"
    f" AND a.family = '{MEMORY_FAMILY}' AND a.artifact_id = '{MEMORY_ARTIFACT_ID}'"
    f" WHERE m.scope_id = %s AND m.to_revision IS NULL AND m.state = 'active' ORDER BY m.id"
)


@dataclass(frozen=True)
class _Order:
    """A head's active membership ids, ascending (a membership id's place in it is its
    position)."""

    revision: int
    ids: np.ndarray[Any, np.dtype[np.int64]]


_order_cache: OrderedDict[str, _Order] = OrderedDict()
_lock = threading.Lock()


def clear_cache() -> None:
    with _lock:
        _order_cache.clear()


def _active_order(scope_id: str, revision: int) -> _Order | None:
    """The head's active membership ids in order (cached per scope and head revision); None when
    the head has moved on from ``revision``."""
    with _lock:
        cached = _order_cache.get(scope_id)
        if cached is not None and cached.revision == revision:
            _order_cache.move_to_end(scope_id)
            return cached
    with connection.cursor() as cursor:
        cursor.execute(_ORDER_SQL, [scope_id])
        rows = cursor.fetchall()
    if not rows or int(rows[0][0]) != revision:
        return None
    order = _Order(revision, np.fromiter((row[1] for row in rows), dtype=np.int64, count=len(rows)))
    with _lock:
        _order_cache[scope_id] = order
        while len(_order_cache) > CACHE_SCOPES:
            _order_cache.popitem(last=False)
    return order


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
    match = _SPEAKER.match(text)
    if match is None:
        return False
    words = _speaker_words(match.group(1))
    return bool(words) and all(word in query_terms for word in words)


_DOCS_SQL = (
    f"SELECT membership_id, length, terms FROM {MemorySearchDocument._meta.db_table}"
    f" WHERE membership_id IN ({{ids}})"
)


def _token_count(terms: str, token: str, postgres: bool) -> int:
    """Occurrences of ``token`` in a document's stored ``terms`` (``engines``' formats)."""
    if not postgres:  # space-separated tokens
        return terms.split().count(token)
    at = f" {terms}".find(f" {token}:")  # "token:1,5,9 other:2"
    if at < 0:
        return 0
    positions = terms[at + len(token) + 1 :].split(" ", 1)[0]
    return positions.count(",") + 1


def index_counts(
    scope_id: str, membership_ids: Sequence[int], terms: Sequence[str]
) -> dict[int, tuple[dict[str, int], int]]:
    """For each membership: (occurrences of each of ``terms`` it holds, its length in terms),
    read from its full-text index row (one statement; no text analysis). Memberships without
    an index row are absent."""
    if not membership_ids:
        return {}
    tokens = dict(zip(scope_tokens(scope_id, terms), terms, strict=True))
    postgres = connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute(_DOCS_SQL.format(ids=", ".join(["%s"] * len(membership_ids))), list(membership_ids))
        found = cursor.fetchall()
    counted: dict[int, tuple[dict[str, int], int]] = {}
    for pk, length, stored in found:
        counts = {term: n for token, term in tokens.items() if (n := _token_count(stored, token, postgres))}
        counted[int(pk)] = (counts, int(length))
    return counted


def _cosines(
    scope_id: str, query: str, ids: np.ndarray[Any, Any], rows: dict[int, MemoryHit], revision: int | None
) -> np.ndarray[Any, Any]:
    """Raw cosines of the memberships ``ids`` (NaN: unknown): from the in-process matrix that
    ranked the vectors (a product over the candidates; ``revision``: the head that ranking saw),
    else read from the stored vectors of the rows known."""
    found = np.full(len(ids), np.nan)
    model = embedding.embedder()
    if model is None or not len(ids):
        return found
    by_id = vector_inprocess.memory_cosines(scope_id, model.model_id, model.embed_query(query), ids, revision)
    if by_id is not None:
        return by_id
    keys = ids.tolist()
    known = [rows[pk] for pk in keys if pk in rows]
    by_version = relevance.memory_similarities(scope_id, query, known)
    for i, pk in enumerate(keys):
        if pk in rows and rows[pk].entry_version_id in by_version:
            found[i] = by_version[rows[pk].entry_version_id]
    return found


_AROUND = (-1, 1, -2, 2)  # neighbour offsets, in the order their shares are added
_PAD = NEIGHBOUR_SPAN


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
        return np.concatenate([pad, self.order, pad, self.outside])[at]

    def of(self, keys: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """The slot of each membership id (-1: none)."""
        at = _positions(self.order, keys)
        beyond = _positions(self.outside, keys)
        return np.where(at >= 0, at + _PAD, np.where(beyond >= 0, beyond + len(self.order) + 2 * _PAD, -1))

    def values(self, keys: np.ndarray[Any, Any], values: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """An array holding ``values`` at the slots of ``keys`` (those with a slot), 0 elsewhere."""
        out = np.zeros(self.size)
        slots = self.of(keys)
        out[slots[slots >= 0]] = values[slots >= 0]
        return out


def _pool_and_neighbours(order: _Order | None, pool: list[int]) -> tuple[_Slots, np.ndarray[Any, Any]]:
    """The slots, and the candidates as slots: the pool's entries and their neighbours (within
    ``NEIGHBOUR_SPAN`` in the order), ascending."""
    ids = order.ids if order is not None else np.zeros(0, dtype=np.int64)
    keys = np.asarray(pool, dtype=np.int64)
    at = _positions(ids, keys)
    slots = _Slots(ids, np.unique(keys[at < 0]))
    near = (at[at >= 0][:, None] + np.arange(-NEIGHBOUR_SPAN, NEIGHBOUR_SPAN + 1)).ravel()
    inside = np.unique(near[(near >= 0) & (near < len(ids))]) + _PAD
    beyond = np.arange(len(ids) + 2 * _PAD, slots.size)
    return slots, np.concatenate([inside, beyond])


def _smoothed(
    values: np.ndarray[Any, Any], slots: _Slots, at: np.ndarray[Any, Any], weight: float
) -> np.ndarray[Any, Any]:
    """Each candidate's value plus ``weight`` times its neighbours' (a neighbour at distance d
    counts ``NEIGHBOUR_DECAY ** (d - 1)``), added in the order ``_AROUND`` lists them."""
    inside = at < len(slots.order) + _PAD  # outside the order: no neighbours
    around = np.zeros(len(at))
    for offset in _AROUND:
        share = NEIGHBOUR_DECAY ** (abs(offset) - 1)
        around = around + share * values[np.where(inside, at + offset, 0)]
    return values[at] + weight * around


def _top(ids: np.ndarray[Any, Any], scores: np.ndarray[Any, Any], depth: int) -> np.ndarray[Any, Any]:
    """Indexes of the ``depth`` best positive scores, best first, ties by membership id."""
    positive = np.flatnonzero(scores > 0)
    return positive[np.lexsort((ids[positive], -scores[positive]))][:depth]


def _fused(
    ids: np.ndarray[Any, Any], rankings: Sequence[tuple[float, np.ndarray[Any, Any]]]
) -> np.ndarray[Any, Any]:
    """Weighted reciprocal-rank fusion over the candidates (0: in no ranking)."""
    from powercontext.search import vectors  # vectors imports this module's callers

    fused = np.zeros(len(ids))
    for weight, ranking in rankings:
        fused[ranking] = fused[ranking] + weight / (vectors.RRF_K + np.arange(1, len(ranking) + 1))
    return fused


def rank_memory(
    scope_id: str,
    query: str,
    lexical: Sequence[MemoryHit],
    semantic: Sequence[MemoryHit],
    limit: int,
) -> list[MemoryHit]:
    """The fused, smoothed, annotated ranking of one head's full-text and vector rankings (both
    citing one head revision), best first, at most ``limit`` rows."""
    from powercontext.search import vectors  # vectors imports this module's callers

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
    query_terms = analyzer.query_terms(query)
    figures = relevance.scope_figures(MEMORY_INDEX, scope_id, query_terms, revision)
    counted = index_counts(scope_id, [row.key for row in lexical], query_terms)
    bm25 = [relevance.bm25(figures, query_terms, row.text, counted.get(row.key)) for row in lexical]
    pool = list(
        dict.fromkeys([row.key for row in lexical[:POOL_DEPTH]] + [row.key for row in semantic[:POOL_DEPTH]])
    )
    slots, at = _pool_and_neighbours(_active_order(scope_id, revision), pool)
    ids = slots.ids(at)
    # Raw cosines of every candidate (the vector hits' scores are their cosines, clamped at 0);
    # the vector ranking just read the matrix at this revision when it found anything.
    cosine = _cosines(scope_id, query, ids, rows, revision if semantic else None)
    lexical_values = slots.values(np.asarray([row.key for row in lexical], dtype=np.int64), np.asarray(bm25))
    known = ~np.isnan(cosine)
    cos_values = np.zeros(slots.size)
    cos_values[at[known]] = np.maximum(cosine[known], 0.0)
    lexical_rank = _top(ids, _smoothed(lexical_values, slots, at, LEXICAL_NEIGHBOUR_WEIGHT), POOL_DEPTH)
    vector_rank = _top(ids, _smoothed(cos_values, slots, at, VECTOR_NEIGHBOUR_WEIGHT), POOL_DEPTH)
    fused = _fused(ids, [(vectors.FTS_WEIGHT, lexical_rank), (vectors.VECTOR_WEIGHT, vector_rank)])
    best = (vectors.FTS_WEIGHT + (vectors.VECTOR_WEIGHT if len(vector_rank) else 0.0)) / (vectors.RRF_K + 1)
    found = np.flatnonzero(fused > 0)
    scores = fused[found] / best
    query_words = set(analyzer.analyze(query))
    # Rows for the entries found by neither ranking (their texts for the speaker prior), read
    # only for those that could make the window with the prior.
    prior = SPEAKER_PRIOR if query_words else 0.0
    cut = np.sort(scores)[-limit] if len(scores) >= limit > 0 else -np.inf
    wanted = [
        pk
        for pk, score in zip(ids[found].tolist(), scores.tolist(), strict=True)
        if pk not in rows and score + prior >= cut
    ]
    texts = {pk: row.text for pk, row in rows.items()}
    for row in vectors.read_hits(scope_id, [(pk, 0.0) for pk in wanted]):
        texts[row.key] = row.text
        if row.revision == revision:  # matched_by set below
            rows[row.key] = row
    keys = ids[found].tolist()
    scored = {
        pk: score + (SPEAKER_PRIOR if pk in texts and speaker_named(texts[pk], query_words) else 0.0)
        for pk, score in zip(keys, scores.tolist(), strict=True)
    }
    similarity = dict(zip(ids[known].tolist(), cosine[known].tolist(), strict=True))
    weights = relevance.idf_weights(figures, relevance.content_terms(query))
    channels = {row.key: set(row.matched_by) for row in lexical}
    for row in semantic:
        channels.setdefault(row.key, set()).update(row.matched_by)
    ranked = sorted(scored, key=lambda pk: (-scored[pk], pk))[:limit]
    ranked = [pk for pk in ranked if pk in rows]  # a neighbour gone since: left out
    counted.update(index_counts(scope_id, [pk for pk in ranked if pk not in counted], query_terms))
    held = {pk: set(counts) for pk, (counts, _) in counted.items()}
    return [
        replace(
            rows[pk],
            score=min(1.0, scored[pk] / (1.0 + SPEAKER_PRIOR)),
            matched_by=tuple(sorted(channels.get(pk, ()))) or ("neighbour",),
            similarity=similarity.get(pk),
            lexical_share=relevance.lexical_share(weights, [rows[pk].text], held=held.get(pk)),
        )
        for pk in ranked
    ]
