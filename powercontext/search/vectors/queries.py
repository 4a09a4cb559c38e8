"""Vector search over Memory and Experience: the derived embedding index and its exact search.

Storage: one ``MemoryEntryVector`` per entry version that is active in its scope's current head,
written after commit by the embedder (``pending``; or by the writers' transactions with
``POWERCONTEXT_EMBED_WRITES=sync``: ``vector_index.add_vectors``) when the model is available,
rebuilt and verified with the other indexes (``powercontext.search.rebuild``). Entries without a
vector yet are invisible to vector search only.

Search is exact, ranked in process over a cached per-scope matrix (``vector_inprocess``; the
one path on both databases: docs/decisions.md). Hits are then read by one statement that
re-checks that each is still active in the head and reads the head revision, so all hits cite
the revision the ranking saw.

Experience: one ``ExperienceVector`` per recallable head at its current revision (written by the
same paths). Hybrid search and prepare fuse these rankings with full text (``ranking``).
"""

from __future__ import annotations

from django.db import connection

from powercontext.core.families import MEMORY_ARTIFACT_ID, Family
from powercontext.core.hits import ExperienceHit, MemoryHit
from powercontext.core.models import Artifact, MemoryEntry, MemoryEntryVersion, MemoryMembership
from powercontext.search.fulltext.queries import memory_hit
from powercontext.search.vectors import embedding, vector_inprocess

_HITS_SQL = (
    f"SELECT m.id, e.entry_id, v.entry_version_id, v.text, a.current_revision"
    f" FROM {MemoryMembership._meta.db_table} m"
    f" JOIN {MemoryEntry._meta.db_table} e ON e.id = m.entry_id"
    f" JOIN {MemoryEntryVersion._meta.db_table} v ON v.id = m.entry_version_id"
    f" JOIN {Artifact._meta.db_table} a ON a.scope_id = %s"
    f" AND a.family = '{Family.MEMORY.value}' AND a.artifact_id = '{MEMORY_ARTIFACT_ID}'"
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
