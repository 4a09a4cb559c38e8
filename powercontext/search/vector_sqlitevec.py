"""Exact vector search in SQLite with sqlite-vec: the path used when the extension is loaded.

The stored vectors (``MemoryEntryVector.vector``, ``ExperienceVector.vector``: float32,
little-endian) are already sqlite-vec's vector format, so its scalar ``vec_distance_cosine``
ranks them where they are: no extra table to keep in step with writes, rebuilds and verify. Each
ranking is one statement (one read snapshot): the active memberships of the head with a vector
of the model, ordered by distance then membership id, with the head revision read alongside.
Score = 1 - cosine distance, clamped at 0 like the in-process path; a vector of norm zero (which
verify reports as damaged) has no cosine and scores 0 there too.

Same contract as ``powercontext.search.vector_inprocess`` (see ``vector_backend.Ranker``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from django.db import connection

from powercontext.hits import ExperienceHit
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
from powercontext.search.queries import experience_row

# Cosine distance in [0, 2]; NULL (a zero vector) counts as orthogonal, like the in-process dot.
_DISTANCE = "COALESCE(vec_distance_cosine(x.vector, %s), 1.0)"

_MEMORY_SQL = (
    f"WITH ranked AS MATERIALIZED ("
    f"SELECT m.id AS id, {_DISTANCE} AS distance"
    f" FROM {MemoryMembership._meta.db_table} m"
    f" JOIN {MemoryEntryVector._meta.db_table} x ON x.entry_version_id = m.entry_version_id"
    f" WHERE m.scope_id = %s AND m.to_revision IS NULL AND m.state = 'active' AND x.model = %s"
    f" ORDER BY distance, m.id LIMIT %s)"
    f" SELECT a.current_revision, ranked.id, ranked.distance"
    f" FROM {Artifact._meta.db_table} a LEFT JOIN ranked ON 1 = 1"
    f" WHERE a.scope_id = %s AND a.family = %s AND a.artifact_id = %s"
    f" ORDER BY ranked.distance, ranked.id"
)


def _score(distance: float) -> float:
    return max(0.0, 1.0 - float(distance))


def rank_memory(
    scope_id: str, model_id: str, query_vector: np.ndarray[Any, Any], limit: int
) -> tuple[int, list[tuple[int, float]]] | None:
    """The ``limit`` active memberships of the scope's current head nearest to the query vector
    as (membership id, cosine ≥ 0), best first, ties by membership id, with the head revision the
    ranking saw (same statement); None when the scope has no Memory head."""
    with connection.cursor() as cursor:
        cursor.execute(
            _MEMORY_SQL,
            [
                embedding.to_bytes(query_vector),
                scope_id,
                model_id,
                limit,
                scope_id,
                MEMORY_FAMILY,
                MEMORY_ARTIFACT_ID,
            ],
        )
        rows = cursor.fetchall()
    if not rows:
        return None
    return int(rows[0][0]), [(int(row[1]), _score(row[2])) for row in rows if row[1] is not None]


_EXPERIENCE_SQL = (
    f"SELECT a.id, a.artifact_id, a.current_revision, r.content, {_DISTANCE} AS distance"
    f" FROM {ExperienceVector._meta.db_table} x"
    f" JOIN {Artifact._meta.db_table} a ON a.id = x.head_id AND a.current_revision = x.revision"
    f" JOIN {ArtifactRevision._meta.db_table} r ON r.head_id = a.id AND r.revision = a.current_revision"
    f" WHERE x.scope_id = %s AND a.scope_id = %s AND x.model = %s AND a.recallable"
    f" ORDER BY distance, a.id LIMIT %s"
)


def rank_experience(
    scope_id: str, model_id: str, query_vector: np.ndarray[Any, Any], limit: int
) -> list[ExperienceHit]:
    """The ``limit`` recallable Experience heads of the scope nearest to the query (cosine; ties
    by head pk), each at the revision its vector was computed for, read by one statement."""
    with connection.cursor() as cursor:
        cursor.execute(
            _EXPERIENCE_SQL, [embedding.to_bytes(query_vector), scope_id, scope_id, model_id, limit]
        )
        rows = cursor.fetchall()
    return [experience_row(row[0], row[1], row[2], row[3], _score(row[4])) for row in rows]
