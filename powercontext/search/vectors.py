"""Vector and hybrid search over Memory: the derived embedding index and its exact search.

Storage: one ``MemoryEntryVector`` per entry version that is active in its scope's current head,
written after commit by the embedder (``pending``; or by the writers' transactions with
``POWERCONTEXT_EMBED_WRITES=sync``) when the model is available, rebuilt and verified with the
other indexes (``rebuild``). Entries without a vector yet are invisible to vector search only.

Search is exact, ranked in process over a cached per-scope matrix (``vector_inprocess``; the
one path on both databases: docs/decisions.md). Hits are then read by one statement that
re-checks that each is still active in the head and reads the head revision, so all hits cite
the revision the ranking saw.

``hybrid`` is reciprocal-rank fusion of the ``fts`` and ``vector`` rankings.

Experience: one ``ExperienceVector`` per recallable head at its current revision (written by the
same paths); prepare's Experience window fuses its full-text and vector rankings.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from django.db import connection

from powercontext.core.hits import ExperienceHit, MemoryHit
from powercontext.core.models import (
    MEMORY_ARTIFACT_ID,
    MEMORY_FAMILY,
    Artifact,
    ExperienceVector,
    MemoryEntry,
    MemoryEntryVector,
    MemoryEntryVersion,
    MemoryMembership,
)
from powercontext.search import embedding, vector_cache, vector_inprocess
from powercontext.search.queries import memory_hit, search_context, search_memory

FTS_MODES = ("auto", "fts")
VECTOR_MODES = ("vector", "hybrid")
ALL_MODES = (*FTS_MODES, *VECTOR_MODES)
# Reciprocal-rank fusion, tuned on the LoCoMo dev file (docs/retrieval.md): a small k lets the
# first ranks of either list dominate; the vector ranking weighs a little less than full text.
RRF_K = 5
FTS_WEIGHT = 1.0
VECTOR_WEIGHT = 0.8
FUSION_DEPTH = 50  # candidates taken from each ranking before fusion (docs/retrieval.md)


def available_modes() -> tuple[str, ...]:
    """The search modes this process can serve now (vector modes need the model)."""
    return ALL_MODES if embedding.embedder() is not None else FTS_MODES


def best_mode(query: str | None = None) -> str:
    """What ``auto`` means: hybrid when the model is available (and reads ``query``, when given:
    ``embedding.reads``), else fts."""
    model = embedding.embedder() if query is None else embedding.embedder_for(query)
    return "hybrid" if model is not None else "fts"


# -- writes (inside the writers' transactions) ---------------------------------------------------


def add_vectors(versions: Iterable[MemoryEntryVersion | tuple[int, str, str]]) -> int:
    """Embed and store the vectors of entry versions (objects or (pk, scope id, text)).

    Skipped, returning 0, when the model is unavailable: the index is derived and a write never
    fails for it; ``verify`` reports the missing rows once the model is back.
    """
    model = embedding.embedder()
    items = [(v.pk, v.scope_id, v.text) if isinstance(v, MemoryEntryVersion) else v for v in versions]
    if model is None or not items:
        return 0
    rows = [
        MemoryEntryVector(
            entry_version_id=pk,
            scope_id=scope,
            model=model.model_id,
            vector=embedding.to_bytes(model.embed(text)),
        )
        for pk, scope, text in items
    ]
    MemoryEntryVector.objects.filter(entry_version_id__in=[pk for pk, _, _ in items]).delete()
    MemoryEntryVector.objects.bulk_create(rows)
    return len(rows)


def add_experience_vector(head: Artifact) -> int:
    """Embed and store the vector of a recallable Experience head at its current revision (in
    the writer's transaction); skipped, returning 0, when the model is unavailable."""
    model = embedding.embedder()
    if model is None:
        return 0
    ExperienceVector.objects.filter(head_id=head.pk).delete()
    ExperienceVector.objects.create(
        head_id=head.pk,
        revision=head.current_revision,
        scope_id=head.scope_id,
        model=model.model_id,
        vector=embedding.to_bytes(model.embed(head.searchable_text)),
    )
    return 1


def remove_vectors_of_memberships(membership_ids: Sequence[int]) -> None:
    if membership_ids:
        MemoryEntryVector.objects.filter(
            entry_version_id__in=MemoryMembership.objects.filter(pk__in=membership_ids).values(
                "entry_version_id"
            )
        ).delete()


# -- reads ------------------------------------------------------------------------------------------

_HITS_SQL = (
    f"SELECT m.id, e.entry_id, v.entry_version_id, v.text, a.current_revision"
    f" FROM {MemoryMembership._meta.db_table} m"
    f" JOIN {MemoryEntry._meta.db_table} e ON e.id = m.entry_id"
    f" JOIN {MemoryEntryVersion._meta.db_table} v ON v.id = m.entry_version_id"
    f" JOIN {Artifact._meta.db_table} a ON a.scope_id = %s"
    f" AND a.family = '{MEMORY_FAMILY}' AND a.artifact_id = '{MEMORY_ARTIFACT_ID}'"
    # ``m.scope_id || ''``: the scope test must not pick the index; else SQLite walks the scope's
    # whole head by (scope, to_revision) to find the ids instead of looking each one up. The
    # head is found by the scope itself (its unique key), not through ``m``.
    f" WHERE m.scope_id || '' = %s AND m.to_revision IS NULL AND m.state = 'active'"
    f" AND m.id IN ({{ids}})"
)


def _read_hits(scope_id: str, ranked: list[tuple[int, float]]) -> list[MemoryHit]:
    """The hits' rows, in ``ranked`` order, read by one statement (one head revision)."""
    if not ranked:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            _HITS_SQL.format(ids=", ".join(["%s"] * len(ranked))),
            [scope_id, scope_id, *[pk for pk, _ in ranked]],
        )
        found = {row[0]: row for row in cursor.fetchall()}
    return [
        memory_hit(*found[pk], score=score, matched_by=("vector",)) for pk, score in ranked if pk in found
    ]


def read_hits(scope_id: str, ranked: list[tuple[int, float]]) -> list[MemoryHit]:
    """Hits of active memberships of the scope's current head, by (membership id, score)."""
    return _read_hits(scope_id, ranked)


def vector_search_memory(scope_id: str, query: str, limit: int) -> list[MemoryHit]:
    """The ``limit`` active entries of the scope's current head nearest to the query (cosine;
    ties by membership id), citing one head revision. Empty when the model is unavailable.
    The ranking is ``vector_inprocess.rank_memory``."""
    model = embedding.embedder()
    if model is None or limit < 1:
        return []
    query_vector = model.embed_query(query)
    rows: list[MemoryHit] = []
    for _ in range(3):  # a write between the ranking and the rows: read again
        ranking = vector_inprocess.rank_memory(scope_id, model.model_id, query_vector, limit)
        if ranking is None or not ranking[1]:
            return []
        revision, ranked = ranking
        rows = _read_hits(scope_id, ranked)
        if all(row.revision == revision for row in rows) and len(rows) == len(ranked):
            return rows
    return [row for row in rows if row.revision == rows[0].revision] if rows else []


def vector_search_experience(scope_id: str, query: str, limit: int) -> list[ExperienceHit]:
    """The ``limit`` recallable Experience heads of the scope nearest to the query (cosine; ties
    by head pk), each at the revision its vector was computed for. Empty when the model is
    unavailable."""
    model = embedding.embedder()
    if model is None or limit < 1:
        return []
    return vector_inprocess.rank_experience(scope_id, model.model_id, model.embed_query(query), limit)


def clear_cache() -> None:
    """Forget the cached vectors (tests, rebuild)."""
    vector_cache.clear_cache()


def _fused_order(rankings: Sequence[tuple[float, Sequence[int]]], limit: int) -> list[tuple[int, float]]:
    """Weighted reciprocal-rank fusion of (weight, ranked keys) pairs: score = sum of
    weight / (RRF_K + rank) over the rankings a key is in, scaled into (0, 1]; ties by key."""
    fused: dict[int, float] = {}
    for weight, ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            fused[key] = fused.get(key, 0.0) + weight / (RRF_K + rank)
    best = sum(weight for weight, _ in rankings) / (RRF_K + 1)
    order = sorted(fused, key=lambda key: (-fused[key], key))[:limit]
    return [(key, min(1.0, fused[key] / best)) for key in order]


def fuse(rankings: Sequence[tuple[float, Sequence[MemoryHit]]], limit: int) -> list[MemoryHit]:
    """Weighted reciprocal-rank fusion of Memory rankings (``_fused_order``, keyed by membership
    id); each row carries the channels that found it."""
    rows: dict[int, MemoryHit] = {}
    channels: dict[int, list[str]] = {}
    for _, ranking in rankings:
        for row in ranking:
            rows.setdefault(row.key, row)
            seen = channels.setdefault(row.key, [])
            seen.extend(channel for channel in row.matched_by if channel not in seen)
    order = _fused_order([(weight, [row.key for row in ranking]) for weight, ranking in rankings], limit)
    return [replace(rows[pk], score=score, matched_by=tuple(sorted(channels[pk]))) for pk, score in order]


def fuse_experience(
    rankings: Sequence[tuple[float, Sequence[ExperienceHit]]], limit: int
) -> list[ExperienceHit]:
    """The same fusion over Experience rankings, keyed by head pk."""
    rows: dict[int, ExperienceHit] = {}
    for _, ranking in rankings:
        for row in ranking:
            rows.setdefault(row.key, row)
    order = _fused_order([(weight, [row.key for row in ranking]) for weight, ranking in rankings], limit)
    return [replace(rows[pk], score=score) for pk, score in order]


def _hybrid(
    scope_id: str, query: str, limit: int, experience_limit: int
) -> tuple[list[MemoryHit], list[ExperienceHit]]:
    depth = max(limit, FUSION_DEPTH)
    for _ in range(3):
        lexical, experience = (
            search_context(scope_id, query, memory_limit=depth, experience_limit=experience_limit)
            if experience_limit
            else (search_memory(scope_id, query, depth), [])
        )
        semantic = vector_search_memory(scope_id, query, depth)
        revisions = {row.revision for row in (*lexical, *semantic)}
        if len(revisions) <= 1:
            return fuse([(FTS_WEIGHT, lexical), (VECTOR_WEIGHT, semantic)], limit), experience
    return lexical[:limit], experience  # the head kept moving: lexical alone is consistent


def _hybrid_context(
    scope_id: str, query: str, limit: int, experience_limit: int
) -> tuple[list[MemoryHit], list[ExperienceHit]]:
    """Both windows by fusion; the Experience full-text ranking is read to ``FUSION_DEPTH``."""
    depth = max(limit, FUSION_DEPTH)
    lexical, semantic, experience = _one_head_rankings(scope_id, query, depth, depth, experience_limit)
    # The head kept moving (no semantic ranking): lexical alone is consistent.
    memory = (
        fuse([(FTS_WEIGHT, lexical), (VECTOR_WEIGHT, semantic)], limit)
        if semantic is not None
        else lexical[:limit]
    )
    return memory, experience


def _one_head_rankings(
    scope_id: str, query: str, lexical_depth: int, vector_depth: int, experience_limit: int
) -> tuple[list[MemoryHit], list[MemoryHit] | None, list[ExperienceHit]]:
    """Memory's full-text and vector rankings read from one head (up to three tries; the vector
    ranking is None when the head kept moving), and the Experience window fused."""
    experience_depth = max(experience_limit, FUSION_DEPTH)
    for _ in range(3):
        lexical, experience = search_context(
            scope_id, query, memory_limit=lexical_depth, experience_limit=experience_depth
        )
        semantic = vector_search_memory(scope_id, query, vector_depth)
        consistent = len({row.revision for row in (*lexical, *semantic)}) <= 1
        if consistent:
            break
    experience = fuse_experience(
        [
            (FTS_WEIGHT, experience),
            (VECTOR_WEIGHT, vector_search_experience(scope_id, query, experience_depth)),
        ],
        experience_limit,
    )
    return lexical, semantic if consistent else None, experience


def ranked_context(
    scope_id: str, query: str, *, memory_limit: int, experience_limit: int
) -> tuple[list[MemoryHit], list[ExperienceHit]]:
    """Prepare's candidates: Memory ranked by ``rerank.rank_memory`` over deep full-text and
    vector rankings of one head (neighbour smoothing, speaker prior; rows annotated with their
    similarity and lexical share), Experience by ``fuse_experience`` as in ``hybrid_search_context``."""
    from powercontext.search import rerank

    lexical, semantic, experience = _one_head_rankings(
        scope_id, query, rerank.LEXICAL_DEPTH, rerank.VECTOR_DEPTH, experience_limit
    )
    # The head kept moving (no semantic ranking): lexical alone is consistent.
    memory = rerank.rank_memory(scope_id, query, lexical, semantic or [], memory_limit)
    return memory, experience


def hybrid_search_memory(scope_id: str, query: str, limit: int) -> list[MemoryHit]:
    return _hybrid(scope_id, query, limit, 0)[0]


def hybrid_search_context(
    scope_id: str, query: str, *, memory_limit: int, experience_limit: int
) -> tuple[list[MemoryHit], list[ExperienceHit]]:
    """``search_context`` with both windows ranked by hybrid fusion (Memory and Experience each
    fuse their full-text and vector rankings)."""
    return _hybrid_context(scope_id, query, memory_limit, experience_limit)


def search_memory_mode(scope_id: str, query: str, limit: int, mode: str) -> tuple[str, list[MemoryHit]]:
    """Search in ``mode`` (``auto`` = ``best_mode(query)``); returns the mode used and the rows.
    The caller checks that ``mode`` is available."""
    resolved = best_mode(query) if mode == "auto" else mode
    if resolved == "vector":
        return resolved, vector_search_memory(scope_id, query, limit)
    if resolved == "hybrid":
        return resolved, hybrid_search_memory(scope_id, query, limit)
    return "fts", search_memory(scope_id, query, limit)
