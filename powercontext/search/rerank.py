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

import bisect
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache

from django.db import connection

from powercontext.core.hits import MemoryHit
from powercontext.core.models import (
    MEMORY_ARTIFACT_ID,
    MEMORY_FAMILY,
    Artifact,
    MemoryEntryVersion,
    MemoryMembership,
    MemorySearchDocument,
)
from powercontext.search import analyzer, embedding, relevance, vector_inprocess
from powercontext.search.engines import scope_tokens
from powercontext.search.indexes import MEMORY_INDEX

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

_order_cache: OrderedDict[str, tuple[int, list[int]]] = OrderedDict()
_lock = threading.Lock()


def clear_cache() -> None:
    with _lock:
        _order_cache.clear()


def _active_order(scope_id: str, revision: int) -> list[int] | None:
    """The head's active membership ids in order (cached per scope and head revision); None when
    the head has moved on from ``revision``."""
    with _lock:
        cached = _order_cache.get(scope_id)
        if cached is not None and cached[0] == revision:
            _order_cache.move_to_end(scope_id)
            return cached[1]
    with connection.cursor() as cursor:
        cursor.execute(_ORDER_SQL, [scope_id])
        rows = cursor.fetchall()
    if not rows or int(rows[0][0]) != revision:
        return None
    ids = [int(row[1]) for row in rows]
    with _lock:
        _order_cache[scope_id] = (revision, ids)
        while len(_order_cache) > CACHE_SCOPES:
            _order_cache.popitem(last=False)
    return ids


def _neighbours(order: list[int], pk: int) -> list[tuple[int, float]]:
    """(membership id, weight) of the entries within ``NEIGHBOUR_SPAN`` of ``pk`` in ``order``."""
    at = bisect.bisect_left(order, pk)
    if at >= len(order) or order[at] != pk:
        return []
    found = []
    for distance in range(1, NEIGHBOUR_SPAN + 1):
        weight = NEIGHBOUR_DECAY ** (distance - 1)
        for index in (at - distance, at + distance):
            if 0 <= index < len(order):
                found.append((order[index], weight))
    return found


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


def _top(scores: dict[int, float], depth: int) -> list[int]:
    return sorted((pk for pk, value in scores.items() if value > 0), key=lambda pk: (-scores[pk], pk))[:depth]


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


def _cosines(scope_id: str, query: str, pks: Sequence[int], rows: dict[int, MemoryHit]) -> dict[int, float]:
    """Raw cosines by membership id: from the in-process matrix that ranked the vectors (a
    product over the candidates), else read from the stored vectors of the rows known."""
    model = embedding.embedder()
    if model is None or not pks:
        return {}
    by_pk = vector_inprocess.memory_cosines(scope_id, model.model_id, model.embed_query(query), pks)
    if by_pk is not None:
        return by_pk
    known = [rows[pk] for pk in pks if pk in rows]
    by_version = relevance.memory_similarities(scope_id, query, known)
    return {row.key: by_version[row.entry_version_id] for row in known if row.entry_version_id in by_version}


_TEXTS_SQL = (
    f"SELECT m.id, v.text FROM {MemoryMembership._meta.db_table} m"
    f" JOIN {MemoryEntryVersion._meta.db_table} v ON v.id = m.entry_version_id"
    f" WHERE m.scope_id = %s AND m.to_revision IS NULL AND m.state = 'active' AND m.id IN ({{ids}})"
)


def _texts(scope_id: str, pks: Sequence[int]) -> dict[int, str]:
    """The texts of active memberships of the scope's current head (one statement)."""
    if not pks:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(_TEXTS_SQL.format(ids=", ".join(["%s"] * len(pks))), [scope_id, *pks])
        return {int(pk): str(text) for pk, text in cursor.fetchall()}


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
    bm25 = {row.key: relevance.bm25(figures, query_terms, row.text, counted.get(row.key)) for row in lexical}
    pool = list(
        dict.fromkeys([row.key for row in lexical[:POOL_DEPTH]] + [row.key for row in semantic[:POOL_DEPTH]])
    )
    texts = {pk: row.text for pk, row in rows.items()}
    order = _active_order(scope_id, revision)
    adjacent: dict[int, list[tuple[int, float]]] = {}
    if order is not None:
        adjacent = {pk: _neighbours(order, pk) for pk in pool}
        # Found by neither ranking: only their texts now (the speaker prior); full rows are read
        # for those that make the window.
        texts.update(
            _texts(scope_id, sorted({pk for around in adjacent.values() for pk, _ in around} - texts.keys()))
        )
    candidates = [
        pk
        for pk in dict.fromkeys([*pool, *(p for around in adjacent.values() for p, _ in around)])
        if pk in texts
    ]
    if order is not None:  # the neighbours' own neighbours count too (where their scores are known)
        adjacent.update({pk: _neighbours(order, pk) for pk in candidates if pk not in adjacent})
    # Raw cosines of every candidate (the vector hits' scores are their cosines, clamped at 0).
    cosine = _cosines(scope_id, query, candidates, rows)

    def smoothed(values: dict[int, float], weight: float, pk: int) -> float:
        around = sum(share * values.get(p, 0.0) for p, share in adjacent.get(pk, ()))
        return values.get(pk, 0.0) + weight * around

    cos_values = {pk: max(0.0, cosine[pk]) for pk in candidates if pk in cosine}
    lexical_rank = _top({pk: smoothed(bm25, LEXICAL_NEIGHBOUR_WEIGHT, pk) for pk in candidates}, POOL_DEPTH)
    vector_rank = _top(
        {pk: smoothed(cos_values, VECTOR_NEIGHBOUR_WEIGHT, pk) for pk in candidates}, POOL_DEPTH
    )
    fused: dict[int, float] = {}
    for weight, ranking in ((vectors.FTS_WEIGHT, lexical_rank), (vectors.VECTOR_WEIGHT, vector_rank)):
        for rank, pk in enumerate(ranking, start=1):
            fused[pk] = fused.get(pk, 0.0) + weight / (vectors.RRF_K + rank)
    best = (vectors.FTS_WEIGHT + (vectors.VECTOR_WEIGHT if vector_rank else 0.0)) / (vectors.RRF_K + 1)
    query_words = set(analyzer.analyze(query))
    weights = relevance.idf_weights(figures, relevance.content_terms(query))
    scored = {
        pk: value / best + (SPEAKER_PRIOR if speaker_named(texts[pk], query_words) else 0.0)
        for pk, value in fused.items()
    }
    channels = {row.key: set(row.matched_by) for row in lexical}
    for row in semantic:
        channels.setdefault(row.key, set()).update(row.matched_by)
    ranked = sorted(scored, key=lambda pk: (-scored[pk], pk))[:limit]
    for row in vectors.read_hits(scope_id, [(pk, 0.0) for pk in ranked if pk not in rows]):
        if row.revision == revision:  # matched_by set below
            rows[row.key] = row
    ranked = [pk for pk in ranked if pk in rows]  # a neighbour gone since: left out
    counted.update(index_counts(scope_id, [pk for pk in ranked if pk not in counted], query_terms))
    held = {pk: set(counts) for pk, (counts, _) in counted.items()}
    return [
        replace(
            rows[pk],
            score=min(1.0, scored[pk] / (1.0 + SPEAKER_PRIOR)),
            matched_by=tuple(sorted(channels.get(pk, ()))) or ("neighbour",),
            similarity=cosine.get(pk),
            lexical_share=relevance.lexical_share(weights, [rows[pk].text], held=held.get(pk)),
        )
        for pk in ranked
    ]
