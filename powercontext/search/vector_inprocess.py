"""Exact vector search in process: the path used when the database offers none of its own.

A scope's Memory vectors are read once into one float32 matrix and cached by (head revision,
largest vector id): any write moves the head and any rebuild adds rows, so a stale matrix is
never used; after a write only what changed since the cached head is read. The query vector is
then multiplied with the matrix (exact cosine: vectors are unit length). Experience vectors are
read per call, uncached (heads are few; docs/retrieval.md "Experience vectors").

The two ranking functions are the interface every vector search path implements
(``powercontext.search.vector_backend`` chooses one): ``rank_memory`` returns the head revision
the ranking saw and (membership id, score) pairs, best first, ties by membership id;
``rank_experience`` returns Experience rows, best first, ties by head pk.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import connection

from powercontext.models import (
    MEMORY_ARTIFACT_ID,
    MEMORY_FAMILY,
    Artifact,
    ArtifactRevision,
    ExperienceVector,
    MemoryEntryVector,
    MemoryMembership,
)
from powercontext.search import embedding
from powercontext.search.queries import ExperienceSearchRow
from powercontext.selectors.artifacts import EXPERIENCE_FAMILY, recallable_experience_sql

CACHE_SCOPES = 32
CACHE_MAX_VECTORS = 200_000  # ~300 MiB of float32 at 384 dimensions


@dataclass(frozen=True)
class _ScopeVectors:
    revision: int
    max_id: int
    membership_ids: np.ndarray[Any, np.dtype[np.int64]]
    matrix: np.ndarray[Any, np.dtype[np.float32]]


_cache: OrderedDict[str, _ScopeVectors] = OrderedDict()
_cache_lock = threading.Lock()


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


def _head_and_max_id(scope_id: str) -> tuple[int, int]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT a.current_revision,"
            f" (SELECT MAX(x.id) FROM {MemoryEntryVector._meta.db_table} x WHERE x.scope_id = %s)"
            f" FROM {Artifact._meta.db_table} a"
            f" WHERE a.scope_id = %s AND a.family = %s AND a.artifact_id = %s",
            [scope_id, scope_id, MEMORY_FAMILY, MEMORY_ARTIFACT_ID],
        )
        row = cursor.fetchone()
    return (int(row[0] or 0), int(row[1] or 0)) if row else (0, 0)


def _matrix(rows: Sequence[tuple[int, Any]]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
    data = b"".join(bytes(row[1]) for row in rows)
    matrix = np.frombuffer(data, dtype="<f4").astype(np.float32).reshape(len(rows), embedding.DIMENSIONS)
    return ids, matrix


_ACTIVE_VECTORS_SQL = (
    f"SELECT m.id, x.vector FROM {MemoryMembership._meta.db_table} m"
    f" JOIN {MemoryEntryVector._meta.db_table} x ON x.entry_version_id = m.entry_version_id"
    f" WHERE m.scope_id = %s AND m.to_revision IS NULL AND m.state = 'active' AND x.model = %s"
)


def _load(scope_id: str, revision: int, max_id: int, model_id: str) -> _ScopeVectors:
    with connection.cursor() as cursor:
        cursor.execute(_ACTIVE_VECTORS_SQL + " ORDER BY m.id", [scope_id, model_id])
        ids, matrix = _matrix(cursor.fetchall())
    return _ScopeVectors(revision, max_id, ids, matrix)


def _refresh(
    cached: _ScopeVectors, scope_id: str, revision: int, max_id: int, model_id: str
) -> _ScopeVectors:
    """Bring a cached matrix from its head to ``revision`` by reading only what changed:
    memberships closed since (``to_revision`` > the cached head) leave, vectors inserted since
    (``id`` > the cached largest id: every write inserts its versions' vectors) of memberships
    still active join, replacing any row of the same membership. O(changes), not O(scope)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT m.id FROM {MemoryMembership._meta.db_table} m WHERE m.scope_id = %s AND m.to_revision > %s",
            [scope_id, cached.revision],
        )
        closed = [row[0] for row in cursor.fetchall()]
        cursor.execute(
            _ACTIVE_VECTORS_SQL + " AND x.id > %s ORDER BY m.id", [scope_id, model_id, cached.max_id]
        )
        added_ids, added = _matrix(cursor.fetchall())
    keep = ~np.isin(cached.membership_ids, np.concatenate([np.asarray(closed, dtype=np.int64), added_ids]))
    return _ScopeVectors(
        revision,
        max_id,
        np.concatenate([cached.membership_ids[keep], added_ids]),
        np.concatenate([cached.matrix[keep], added]),
    )


def _scope_vectors(scope_id: str, model_id: str) -> _ScopeVectors | None:
    revision, max_id = _head_and_max_id(scope_id)
    if revision == 0:
        return None
    with _cache_lock:
        cached = _cache.get(scope_id)
        if cached is not None and (cached.revision, cached.max_id) == (revision, max_id):
            _cache.move_to_end(scope_id)
            return cached
    # A write moves the head; the after-commit embedder only adds vectors (larger ids, inserted
    # under the head's lock, so in commit order): both are caught up by reading what changed.
    if cached is not None and revision >= cached.revision and max_id >= cached.max_id:
        loaded = _refresh(cached, scope_id, revision, max_id, model_id)
    else:  # first read, or vectors changed without a write (a rebuild): read them all
        loaded = _load(scope_id, revision, max_id, model_id)
    with _cache_lock:
        _cache[scope_id] = loaded
        _cache.move_to_end(scope_id)
        while len(_cache) > CACHE_SCOPES or (
            len(_cache) > 1 and sum(len(v.membership_ids) for v in _cache.values()) > CACHE_MAX_VECTORS
        ):
            _cache.popitem(last=False)
    return loaded


def rank_memory(
    scope_id: str, model_id: str, query_vector: np.ndarray[Any, Any], limit: int
) -> tuple[int, list[tuple[int, float]]] | None:
    """The ``limit`` active memberships of the scope's current head nearest to the query vector
    as (membership id, cosine ≥ 0), best first, ties by membership id, with the head revision the
    ranking saw; None when the scope has no Memory head."""
    vectors = _scope_vectors(scope_id, model_id)
    if vectors is None:
        return None
    if not len(vectors.membership_ids):
        return vectors.revision, []
    scores = vectors.matrix @ query_vector
    k = min(limit, len(scores))
    if k < len(scores):
        # Every row scoring at least the k-th best: a tie at the cut is then settled by
        # membership id below, not by where argpartition happened to put it.
        kth = scores[np.argpartition(-scores, k - 1)[k - 1]]
        top = np.flatnonzero(scores >= kth)
    else:
        top = np.arange(len(scores))
    order = sorted(top.tolist(), key=lambda i: (-float(scores[i]), int(vectors.membership_ids[i])))[:k]
    return vectors.revision, [(int(vectors.membership_ids[i]), max(0.0, float(scores[i]))) for i in order]


_EXPERIENCE_VECTORS_SQL = (
    f"SELECT a.id, a.artifact_id, a.current_revision, r.content, x.vector"
    f" FROM {ExperienceVector._meta.db_table} x"
    f" JOIN {Artifact._meta.db_table} a ON a.id = x.head_id AND a.current_revision = x.revision"
    f" JOIN {ArtifactRevision._meta.db_table} r ON r.head_id = a.id AND r.revision = a.current_revision"
    f" WHERE x.scope_id = %s AND a.scope_id = %s AND x.model = %s AND {recallable_experience_sql('a')}"
)


def rank_experience(
    scope_id: str, model_id: str, query_vector: np.ndarray[Any, Any], limit: int
) -> list[ExperienceSearchRow]:
    """The ``limit`` recallable Experience heads of the scope nearest to the query (cosine; ties
    by head pk), each at the revision its vector was computed for. Read in one statement, no
    cache: Experience heads are few (docs/retrieval.md)."""
    with connection.cursor() as cursor:
        cursor.execute(_EXPERIENCE_VECTORS_SQL, [scope_id, scope_id, model_id])
        rows = cursor.fetchall()
    if not rows:
        return []
    _, matrix = _matrix([(row[0], row[4]) for row in rows])
    scores = matrix @ query_vector
    order = sorted(range(len(rows)), key=lambda i: (-float(scores[i]), int(rows[i][0])))[:limit]
    return [
        ExperienceSearchRow(
            artifact_pk=int(rows[i][0]),
            family=EXPERIENCE_FAMILY,
            artifact_id=str(rows[i][1]),
            revision=int(rows[i][2]),
            content=json.loads(rows[i][3]) if isinstance(rows[i][3], str) else rows[i][3],
            score=max(0.0, float(scores[i])),
        )
        for i in order
    ]
