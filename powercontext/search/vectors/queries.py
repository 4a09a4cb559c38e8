"""Vector search over Memory and Experience: the derived embedding index and its exact search.

Storage: one ``MemoryEntryVector`` per entry version that is active in its scope's current head,
written after commit by the embedder (``pending``; or by the writers' transactions with
``POWERCONTEXT_EMBED_WRITES=sync``: ``vector_index.add_vectors``) when the model is available,
rebuilt and verified with the other indexes (``powercontext.search.rebuild``). Entries without a
vector yet are invisible to vector search only.

Search is exact, ranked in process over a cached per-scope matrix (``vector_inprocess``; the
one path on both databases: docs/decisions.md). Hits are then read by one statement that
re-checks that each is still active in the head and reads the head revision, so all hits cite
the revision the ranking saw. The rows read are kept for that revision (``_HeadRows``, in the
vector cache under its bound; at most ``ROWS_KEPT`` a scope): a membership's entry, version and
text never change, so while the head stays at the revision the ranking saw, a hit read before
is not read again.

Experience: one ``ExperienceVector`` per recallable head at its current revision (written by the
same paths). Hybrid search and prepare fuse these rankings with full text (``ranking``).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connection

from powercontext.core.families import MEMORY_ARTIFACT_ID, Family
from powercontext.core.hits import ExperienceHit, MemoryHit
from powercontext.core.models import Artifact, MemoryEntry, MemoryEntryVersion, MemoryMembership
from powercontext.core.sql import one_of
from powercontext.search.fulltext.queries import memory_hit
from powercontext.search.vectors import embedding, vector_inprocess
from powercontext.search.vectors.vector_cache import ScopeLRU

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
    f" AND {{ids}}"
)


@dataclass
class _HeadRows:
    """The hit rows (``_HITS_SQL``'s columns) read so far of one scope's head at ``revision``, by
    membership id, at most ``ROWS_KEPT`` (the first kept go first), under ``_rows_lock``;
    ``size`` counts their bytes (roughly)."""

    revision: int
    rows: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    size: int = 0


# Rows kept per scope: a small scope's whole head, a large one's most recent hits (~1 KiB a row:
# without a bound, a 100k scope's rows would grow towards 100 MB and push its own matrix out).
ROWS_KEPT = 4096
_head_rows: ScopeLRU[_HeadRows] = ScopeLRU("rows", lambda held: held.size)
_rows_lock = threading.Lock()


def clear_rows() -> None:
    """Forget every scope's kept rows (the rest of the vector cache stays)."""
    _head_rows.clear()


def _row_size(row: tuple[Any, ...]) -> int:
    return sys.getsizeof(row) + sys.getsizeof(row[3]) + 200  # the tuple, its text, the rest


def _read_hits(
    scope_id: str, ranked: list[tuple[int, float]], revision: int | None = None
) -> list[MemoryHit]:
    """The hits' rows, in ``ranked`` order, read by one statement (one head revision). With the
    ``revision`` the ranking saw, rows kept for it are not read again, and the rows read citing
    it are kept."""
    if not ranked:
        return []
    found = kept_rows(scope_id, revision, [pk for pk, _ in ranked]) if revision is not None else {}
    wanted = [pk for pk, _ in ranked if pk not in found]
    if wanted:
        with connection.cursor() as cursor:
            ids, params = one_of("m.id", wanted)
            cursor.execute(_HITS_SQL.format(ids=ids), [scope_id, scope_id, *params])
            read = {row[0]: tuple(row) for row in cursor.fetchall()}
        found.update(read)
        if revision is not None:
            keep_rows(scope_id, revision, read)
    return [
        memory_hit(*found[pk], score=score, matched_by=("vector",)) for pk, score in ranked if pk in found
    ]


def kept_rows(scope_id: str, revision: int, ids: Sequence[int]) -> dict[int, tuple[Any, ...]]:
    """The rows (``_HITS_SQL``'s columns) kept for the scope's head at ``revision``, of those of
    ``ids`` that are kept."""
    held = _head_rows.get(scope_id)
    if held is None or held.revision != revision:
        return {}
    with _rows_lock:
        return {pk: held.rows[pk] for pk in ids if pk in held.rows}


def keep_rows(scope_id: str, revision: int, rows: dict[int, tuple[Any, ...]]) -> None:
    """Keep hit rows read citing the scope's head at ``revision`` (``_HITS_SQL``'s columns; rows
    citing another revision are not kept), at most ``ROWS_KEPT``, the first kept going first."""
    fresh = {pk: row for pk, row in rows.items() if row[4] == revision}
    if not fresh:
        return
    held = _head_rows.get(scope_id)
    if held is None or held.revision != revision:
        held = _HeadRows(revision)
    with _rows_lock:
        added = {pk: row for pk, row in fresh.items() if pk not in held.rows}
        held.rows.update(added)
        held.size += sum(_row_size(row) for row in added.values())
        while len(held.rows) > ROWS_KEPT:
            held.size -= _row_size(held.rows.pop(next(iter(held.rows))))
    _head_rows.put(scope_id, held)


def read_hits(scope_id: str, ranked: list[tuple[int, float]]) -> list[MemoryHit]:
    """Hits of active memberships of the scope's current head, by (membership id, score)."""
    return _read_hits(scope_id, ranked)


def vector_state(scope_id: str) -> vector_inprocess.ScopeState | None:
    """The scope's vector freshness (``vector_inprocess.scope_state``, one statement) for a
    caller about to rank both families' vectors; None (nothing read) without the model."""
    return vector_inprocess.scope_state(scope_id) if embedding.embedder() is not None else None


def vector_search_memory(
    scope_id: str, query: str, limit: int, state: vector_inprocess.ScopeState | None = None
) -> list[MemoryHit]:
    """The ``limit`` active entries of the scope's current head nearest to the query (cosine;
    ties by membership id), citing one head revision. Empty when the model is unavailable.
    The ranking is ``vector_inprocess.rank_memory``; ``state``: ``vector_state`` just read."""
    model = embedding.embedder()
    if model is None or limit < 1:
        return []
    query_vector = model.embed_query(query)
    rows: list[MemoryHit] = []
    for _ in range(3):  # a write between the ranking and the rows: read again
        ranking = vector_inprocess.rank_memory(scope_id, model.model_id, query_vector, limit, state)
        state = None
        if ranking is None or not ranking[1]:
            return []
        revision, ranked = ranking
        rows = _read_hits(scope_id, ranked, revision)
        if all(row.revision == revision for row in rows) and len(rows) == len(ranked):
            return rows
    return [row for row in rows if row.revision == rows[0].revision] if rows else []


def vector_search_experience(
    scope_id: str, query: str, limit: int, state: vector_inprocess.ScopeState | None = None
) -> list[ExperienceHit]:
    """The ``limit`` recallable Experience heads of the scope nearest to the query (cosine; ties
    by head pk), each at the revision its vector was computed for. Empty when the model is
    unavailable. ``state``: ``vector_state`` read earlier in the same call (its Experience key)."""
    model = embedding.embedder()
    if model is None or limit < 1:
        return []
    key = state.experience_key if state is not None else None
    return vector_inprocess.rank_experience(scope_id, model.model_id, model.embed_query(query), limit, key)
