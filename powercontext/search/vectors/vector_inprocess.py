"""Vector search in process: the one vector search path, on both databases (docs/decisions.md);
exact up to ``POWERCONTEXT_VECTOR_EXACT_ROWS`` active vectors a scope, over a shortlist above
(``shortlist``).

A scope's Memory vectors are read once into one float32 matrix and cached by (head revision,
largest vector id): any write moves the head and any rebuild adds rows, so a stale matrix is
never used; after a write only what changed since the cached head is read. The query vector is
then multiplied with the matrix (exact cosine: vectors are unit length), or with the rows of a
large scope's shortlist.

A scope's Experience vectors are cached too, as (head pk, artifact id, revision, vector) rows,
keyed by the ids of all the scope's ``ExperienceVector`` rows: a row is never updated, only
deleted, or inserted with an id never handed out before, so the ids differ whenever the set of
rows does (a count and the largest id would not: writers of two heads of one scope commit in
either order on PostgreSQL). A warm call is one statement: the ids, aggregated into one text,
and the content of the best heads of the cached ranking; a head is kept only while it is
recallable at the revision its vector was computed for. After a change only the rows added
since are read, and the ranking is done again.

Both caches share one bound in bytes (``POWERCONTEXT_VECTOR_CACHE_MB``; ``ScopeLRU``): least
recently used scopes' entries go first; an entry larger than the whole bound is used for the call
that read it and not kept. ``cache_stats`` reports the bytes held and the bound.

``rank_memory`` returns the head revision the ranking saw and (membership id, score) pairs, best
first, ties by membership id; ``rank_experience`` returns Experience rows, best first, ties by
head pk.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import compress
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import DatabaseError, OperationalError, connection, transaction

from powercontext.core.hits import ExperienceHit
from powercontext.core.models import (
    MEMORY_ARTIFACT_ID,
    MEMORY_FAMILY,
    Artifact,
    ArtifactRevision,
    ExperienceVector,
    MemoryEntryVector,
    MemoryMembership,
)
from powercontext.core.sql import one_of
from powercontext.search.fulltext.queries import experience_row
from powercontext.search.vectors import embedding, shortlist
from powercontext.search.vectors.vector_cache import ScopeLRU, nbytes

if TYPE_CHECKING:
    import numpy as np
else:
    from powercontext.search.lazy_numpy import np


class _Room:
    """The float32 rows (and, for a shortlisted scope, the sign codes) of one scope's matrices,
    with room to grow: successive matrices of the scope share it, each viewing its first
    ``size`` rows. Rows are written only past ``filled``, the end of the newest matrix's rows,
    and only by the matrix that ends there, so no matrix's rows ever change under a reader."""

    def __init__(self, matrix: np.ndarray[Any, Any], bits: np.ndarray[Any, Any] | None, filled: int) -> None:
        self.matrix = matrix
        self.bits = bits
        self.filled = filled

    @property
    def nbytes(self) -> int:
        return int(self.matrix.nbytes + (self.bits.nbytes if self.bits is not None else 0))


@dataclass(frozen=True)
class MemoryVectors:
    """One scope's Memory vectors at (``revision``, ``max_id``): row i of ``matrix`` is the
    vector of membership ``membership_ids[i]``; rows of memberships that left since the matrix
    was read hold -1 there and are never ranked (``live`` rows are not), until a refresh
    compacts them away."""

    revision: int
    max_id: int
    membership_ids: np.ndarray[Any, np.dtype[np.int64]]
    matrix: np.ndarray[Any, np.dtype[np.float32]]  # the first len(membership_ids) rows of room.matrix
    room: _Room
    live: int
    by_id: np.ndarray[Any, np.dtype[np.int64]]  # rows in ascending membership id
    sorted_ids: np.ndarray[Any, np.dtype[np.int64]]  # membership_ids[by_id]
    codes: shortlist.Codes | None = None  # above POWERCONTEXT_VECTOR_EXACT_ROWS rows

    def dead(self) -> np.ndarray[Any, np.dtype[np.bool_]] | None:
        """Which rows no longer count (None: all do)."""
        return None if self.live == len(self.membership_ids) else self.membership_ids < 0

    def live_rows(self) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """(membership ids, matrix) of the rows that count, in row order."""
        dead = self.dead()
        if dead is None:
            return self.membership_ids, self.matrix
        return self.membership_ids[~dead], self.matrix[~dead]


_cache: ScopeLRU[MemoryVectors] = ScopeLRU(
    "memory",
    lambda v: (
        nbytes(v.revision, v.max_id, v.membership_ids, v.by_id, v.sorted_ids)
        + v.room.nbytes
        + (v.codes.total.nbytes + v.codes.centre.nbytes if v.codes else 0)
    ),
)

# A matrix is read without room (most scopes are read far more than written). A write that
# finds no room copies the rows into a matrix with room for the rows later writes add: one in
# ``ROOM_SHARE`` more (a 100,000-entry scope: 6,250 rows, 9.6 MB). Rows of memberships that left
# are compacted away (the same copy) once they are more than one in ``DEAD_SHARE`` of the live
# rows, and more than ``DEAD_MIN``.
ROOM_SHARE = 16
DEAD_SHARE = 8
DEAD_MIN = 16


def _room_for(rows: int) -> int:
    return rows + rows // ROOM_SHARE + 1


def _snapshot(
    revision: int, max_id: int, ids: np.ndarray[Any, Any], room: _Room, codes: shortlist.Codes | None
) -> MemoryVectors:
    by_id = np.argsort(ids, kind="stable")  # a run of ascending ids sorts in linear time
    live = len(ids) - int(np.count_nonzero(ids < 0))
    return MemoryVectors(revision, max_id, ids, room.matrix[: len(ids)], room, live, by_id, ids[by_id], codes)


def _in_room(
    revision: int,
    max_id: int,
    ids: np.ndarray[Any, Any],
    matrix: np.ndarray[Any, Any],
    codes: shortlist.Codes | None,
) -> MemoryVectors:
    """A matrix of the rows ``ids`` (all live), held in the first rows of ``matrix`` (any rows
    after them are room for more), with their ``codes`` given the same room."""
    size = len(ids)
    bits = None
    if codes is not None:
        bits = np.empty((len(matrix), codes.bits.shape[1]), dtype=np.uint64)
        bits[:size] = codes.bits
        codes = shortlist.Codes(codes.total, codes.centre, bits[:size])
    return _snapshot(revision, max_id, ids, _Room(matrix, bits, size), codes)


def _exact(rows: int) -> bool:
    """Whether a scope of ``rows`` active vectors is ranked over all of them (else by shortlist)."""
    return rows <= int(settings.POWERCONTEXT_VECTOR_EXACT_ROWS)


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


@dataclass(frozen=True)
class ScopeState:
    """What says whether this process's vectors of a scope are current, read in one statement:
    the Memory head revision (0: no head) and largest Memory vector id (``rank_memory``), and the
    Experience vectors' key (``rank_experience``)."""

    revision: int
    max_id: int
    experience_key: str


def scope_state(scope_id: str) -> ScopeState:
    """The scope's ``ScopeState`` (one statement: a prepare that ranks both families' vectors
    reads this once instead of one statement each)."""
    ids = _IDS_AGGREGATE[connection.vendor]
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT a.current_revision FROM {Artifact._meta.db_table} a"
            f" WHERE a.scope_id = %s AND a.family = %s AND a.artifact_id = %s),"
            f" (SELECT MAX(x.id) FROM {MemoryEntryVector._meta.db_table} x WHERE x.scope_id = %s),"
            f" (SELECT {ids} FROM {ExperienceVector._meta.db_table} x WHERE x.scope_id = %s)",
            [scope_id, MEMORY_FAMILY, MEMORY_ARTIFACT_ID, scope_id, scope_id],
        )
        revision, max_id, key = cursor.fetchone()
    return ScopeState(int(revision or 0), int(max_id or 0), key or "")


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


# The vectors inserted since a cached matrix's largest id (``_refresh``), of memberships still
# active: found by the scope's vector index (``memory_vector_scope_id``: scope, id), each joined to
# its membership by version. ``m.scope_id || ''`` keeps the index of active memberships by scope
# (``membership_active``) out of SQLite's choice: with it SQLite walked every active membership
# of the scope to probe its vector, ~30 ms at 100,000 entries on every prepare after a write.
# PostgreSQL chooses this plan either way. A vector is of its version's scope, as are its
# memberships: the scope test on both sides finds the same rows.
_ADDED_VECTORS_SQL = (
    f"SELECT m.id, x.vector FROM {MemoryEntryVector._meta.db_table} x"
    f" JOIN {MemoryMembership._meta.db_table} m ON m.entry_version_id = x.entry_version_id"
    " WHERE x.scope_id = %s AND x.id > %s AND x.model = %s"
    " AND m.scope_id || '' = %s AND m.to_revision IS NULL AND m.state = 'active' ORDER BY m.id"
)

# Rows converted to Python objects at a time when a whole scope is read: a 100,000-entry scope
# read with one fetchall held ~3x its matrix at once (the rows' bytes, their join, a copy), and
# the heap kept most of it after the read.
READ_CHUNK_ROWS = 2048
# On PostgreSQL, scopes with more active vectors than this are read through a server-side cursor.
SERVER_SIDE_ROWS = 20_000


def _read_matrix(cursor: Any, expected: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The (membership id, vector) rows of the statement ``cursor`` ran, read ``READ_CHUNK_ROWS``
    at a time into arrays made for ``expected`` rows (grown if more arrive, trimmed if fewer).
    No room for later writes: a scope's first write after its read makes that room."""
    ids = np.empty(expected, dtype=np.int64)
    matrix = np.empty((expected, embedding.DIMENSIONS), dtype=np.float32)
    filled = 0
    while rows := cursor.fetchmany(READ_CHUNK_ROWS):
        end = filled + len(rows)
        if end > len(ids):  # rows written since the count
            room = max(end, 2 * len(ids))
            ids = np.concatenate([ids[:filled], np.empty(room - filled, dtype=np.int64)])
            matrix = np.concatenate(
                [matrix[:filled], np.empty((room - filled, embedding.DIMENSIONS), np.float32)]
            )
        chunk_ids, chunk = _matrix(rows)
        ids[filled:end] = chunk_ids
        matrix[filled:end] = chunk
        filled = end
    if filled < len(ids):
        return ids[:filled].copy(), matrix[:filled].copy()
    return ids, matrix


def _load(scope_id: str, revision: int, max_id: int, model_id: str) -> MemoryVectors:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM ({_ACTIVE_VECTORS_SQL}) v", [scope_id, model_id])
        expected = int(cursor.fetchone()[0])
    # A large scope on PostgreSQL is read through a server-side cursor: the client then holds
    # READ_CHUNK_ROWS rows at a time, not the whole result (a cold 100,000-entry scope: peak 571
    # -> 252 MiB, private memory after 519 -> 224 MiB). Not for smaller scopes (the cursor's
    # extra round trips made a cold 1,000-entry read ~10 ms slower), nor with
    # DISABLE_SERVER_SIDE_CURSORS (a pooler in transaction mode).
    chunked = (
        connection.vendor == "postgresql"
        and expected > SERVER_SIDE_ROWS
        and not connection.settings_dict.get("DISABLE_SERVER_SIDE_CURSORS")
    )
    with (
        transaction.atomic(savepoint=False) if chunked else contextlib.nullcontext(),
        connection.chunked_cursor() if chunked else connection.cursor() as cursor,
    ):
        if chunked:  # plan for every row, not the first tenth a cursor is planned for by default
            with connection.cursor() as setting:
                setting.execute("SET LOCAL cursor_tuple_fraction = 1.0")
        cursor.execute(_ACTIVE_VECTORS_SQL + " ORDER BY m.id", [scope_id, model_id])
        ids, matrix = _read_matrix(cursor, expected)
    codes = None if _exact(len(ids)) else shortlist.build(matrix[: len(ids)])
    return _in_room(revision, max_id, ids, matrix, codes)


def _refresh(
    cached: MemoryVectors, scope_id: str, revision: int, max_id: int, model_id: str
) -> MemoryVectors:
    """Bring a cached matrix from its head to ``revision`` by reading only what changed:
    memberships closed since (``to_revision`` > the cached head) leave, vectors inserted since
    (``id`` > the cached largest id: every write inserts its versions' vectors) of memberships
    still active join, replacing any row of the same membership. O(changes), not O(scope): the
    rows that join are written into the matrix's room and the rows that leave are marked
    (``membership_ids`` -1), so the matrix is copied only when its room is full or its marked
    rows are many (then without them: ``DEAD_SHARE``)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT m.id FROM {MemoryMembership._meta.db_table} m WHERE m.scope_id = %s AND m.to_revision > %s",
            [scope_id, cached.revision],
        )
        closed = [row[0] for row in cursor.fetchall()]
        cursor.execute(_ADDED_VECTORS_SQL, [scope_id, cached.max_id, model_id, scope_id])
        added_ids, added = _matrix(cursor.fetchall())
    ids = cached.membership_ids
    leaving = np.concatenate([np.asarray(closed, dtype=np.int64), added_ids])
    gone = np.isin(ids, leaving) if len(leaving) else np.zeros(len(ids), dtype=bool)
    live = cached.live - int(np.count_nonzero(gone)) + len(added_ids)
    marked = len(ids) - live + len(added_ids)
    room, size, end = cached.room, len(ids), len(ids) + len(added_ids)
    exact = _exact(live)
    if (
        room.filled != size  # a newer matrix has written past this one: its room is not ours
        or end > len(room.matrix)
        or marked > max(DEAD_MIN, live // DEAD_SHARE)
        or exact != (cached.codes is None)
        or (cached.codes is None) != (room.bits is None)
    ):
        keep = (ids >= 0) & ~gone
        kept = int(np.count_nonzero(keep))
        matrix = np.empty((_room_for(kept + len(added_ids)), embedding.DIMENSIONS), dtype=np.float32)
        np.compress(keep, cached.matrix, axis=0, out=matrix[:kept])
        matrix[kept : kept + len(added_ids)] = added
        rows = matrix[: kept + len(added_ids)]
        codes = None
        if not exact:
            codes = (
                shortlist.build(rows)
                if cached.codes is None
                else shortlist.update(cached.codes, keep, cached.matrix[gone], rows)
            )
        return _in_room(revision, max_id, np.concatenate([ids[keep], added_ids]), matrix, codes)
    room.matrix[size:end] = added
    codes = cached.codes
    if codes is not None and room.bits is not None:
        codes, room.bits = shortlist.appended(
            codes, cached.matrix[gone], room.matrix[:end], size, live, room.bits
        )
    room.filled = end
    marked_ids = ids.copy()
    marked_ids[gone] = -1
    return _snapshot(revision, max_id, np.concatenate([marked_ids, added_ids]), room, codes)


class _Stripe:
    """One lock of the scope reads, and how many reads under it the database failed."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.failures = 0


# One scope's matrix is read by one thread of a process at a time: the threads of a worker that
# ask a cold scope at once wait for the first one's read instead of each reading it (for a
# 100,000-entry scope, 4 threads held 4 copies). Locks by stripe, so their number is fixed.
_STRIPES = tuple(_Stripe() for _ in range(64))


@contextlib.contextmanager
def _reading(scope_id: str) -> Iterator[None]:
    """Hold the scope's stripe. A thread that waited for a read the database failed (a hung
    server: the reader gave up at the answer limit) fails at once instead of waiting its own
    answer limit again, so a request still answers within one limit."""
    stripe = _STRIPES[hash(scope_id) % len(_STRIPES)]
    seen = stripe.failures
    with stripe.lock:
        if stripe.failures != seen:
            raise OperationalError("the database did not answer a read this request waited for")
        try:
            yield
        except DatabaseError:
            stripe.failures += 1
            raise


def _scope_vectors(scope_id: str, model_id: str, state: ScopeState | None = None) -> MemoryVectors | None:
    revision, max_id = _head_and_max_id(scope_id) if state is None else (state.revision, state.max_id)
    if revision == 0:
        return None
    cached = _cache.get(scope_id)
    if cached is not None and (cached.revision, cached.max_id) == (revision, max_id):
        return cached
    with _reading(scope_id):
        cached = _cache.get(scope_id)  # another thread may have read it meanwhile
        if cached is not None and (cached.revision, cached.max_id) == (revision, max_id):
            return cached
        # A write moves the head; the after-commit embedder only adds vectors (larger ids,
        # inserted under the head's lock, so in commit order): both are caught up by reading
        # what changed.
        if cached is not None and revision >= cached.revision and max_id >= cached.max_id:
            loaded = _refresh(cached, scope_id, revision, max_id, model_id)
        else:  # first read, or vectors changed without a write (a rebuild): read them all
            loaded = _load(scope_id, revision, max_id, model_id)
        _cache.put(scope_id, loaded)
    return loaded


def rank_memory(
    scope_id: str,
    model_id: str,
    query_vector: np.ndarray[Any, Any],
    limit: int,
    state: ScopeState | None = None,
) -> tuple[int, list[tuple[int, float]]] | None:
    """The ``limit`` active memberships of the scope's current head nearest to the query vector
    as (membership id, cosine ≥ 0), best first, ties by membership id, with the head revision the
    ranking saw; None when the scope has no Memory head. ``state``: the scope's ``scope_state``
    when just read (else the head is read here)."""
    vectors = _scope_vectors(scope_id, model_id, state)
    if vectors is None:
        return None
    if not vectors.live:
        return vectors.revision, []
    dead = vectors.dead()
    if vectors.codes is None:
        rows = None
        scores = vectors.matrix @ query_vector
        if dead is not None:
            scores[dead] = -np.inf
    else:  # a large scope: exact cosines of its shortlist
        rows = shortlist.shortlist(
            vectors.codes, query_vector, max(limit, shortlist.depth_for(vectors.live)), dead
        )
        scores = shortlist.cosines(vectors.matrix, rows, query_vector)
    ids = vectors.membership_ids if rows is None else vectors.membership_ids[rows]
    k = min(limit, len(scores) if rows is not None else vectors.live)
    if k < len(scores):
        # Every row scoring at least the k-th best: a tie at the cut is then settled by
        # membership id below, not by where argpartition happened to put it.
        kth = scores[np.argpartition(-scores, k - 1)[k - 1]]
        top = np.flatnonzero(scores >= kth)
    else:
        top = np.arange(len(scores))
    order = sorted(top.tolist(), key=lambda i: (-float(scores[i]), int(ids[i])))[:k]
    return vectors.revision, [(int(ids[i]), max(0.0, float(scores[i]))) for i in order]


# -- Experience -------------------------------------------------------------------------------------

# An ExperienceVector row is never updated, and its id is never handed out again (SQLite:
# AUTOINCREMENT, which Django declares for BigAutoField; PostgreSQL: a sequence): the ids of a
# scope's rows name its set of vectors.


@dataclass(frozen=True)
class _ScopeExperience:
    model_id: str
    key: tuple[int, ...]  # the ids of every vector row of the scope (any model), ascending
    key_text: str  # the same as the key query reads them: comma-separated, ascending
    vector_ids: np.ndarray[Any, np.dtype[np.int64]]  # the rows of ``model_id``, one per matrix row
    head_pks: np.ndarray[Any, np.dtype[np.int64]]
    revisions: np.ndarray[Any, np.dtype[np.int64]]
    artifact_ids: tuple[str, ...]
    matrix: np.ndarray[Any, np.dtype[np.float32]]


_experience_cache: ScopeLRU[_ScopeExperience] = ScopeLRU(
    "experience",
    lambda v: nbytes(
        v.model_id, v.key, v.key_text, v.vector_ids, v.head_pks, v.revisions, v.artifact_ids, v.matrix
    ),
)

# The key: the scope's vector ids as one comma-separated text, aggregated in the database (SQLite
# reads them from the scope index alone). Equal texts are equal sets of ids whatever the order.
_EXPERIENCE_KEY_SQL = (
    "SELECT {ids} AS ids FROM " + ExperienceVector._meta.db_table + " x WHERE x.scope_id = %s"
)
_IDS_AGGREGATE = {
    "postgresql": "string_agg(CAST(x.id AS text), ',' ORDER BY x.id)",
    "sqlite": "group_concat(x.id, ',')",  # in index order: ascending ids
}
_EXPERIENCE_HITS_SQL = (
    f"SELECT a.id, a.current_revision, r.content FROM {Artifact._meta.db_table} a"
    f" JOIN {ArtifactRevision._meta.db_table} r ON r.head_id = a.id AND r.revision = a.current_revision"
    " WHERE a.scope_id = %s AND a.recallable AND {pks}"
)
_EXPERIENCE_ROWS_SQL = (
    f"SELECT x.id, x.head_id, x.revision, x.model, a.artifact_id, x.vector"
    f" FROM {ExperienceVector._meta.db_table} x JOIN {Artifact._meta.db_table} a ON a.id = x.head_id"
    f" WHERE x.scope_id = %s"
)
_DELTA_MAX = 256  # more rows added than this since the cached read: read the scope again

_Hits = dict[int, tuple[int, Any]]  # head pk -> (current revision, content) of recallable heads


def _key_and_hits(scope_id: str, pks: Sequence[int]) -> tuple[str, _Hits]:
    """The scope's key and the hits among ``pks`` (none: the key alone), in one statement (one
    snapshot): the warm call's only read."""
    sql = _EXPERIENCE_KEY_SQL.format(ids=_IDS_AGGREGATE[connection.vendor])
    params: list[Any] = [scope_id]
    if pks:
        condition, listed = one_of("a.id", pks)
        hits = _EXPERIENCE_HITS_SQL.format(pks=condition)
        sql = f"SELECT k.ids, NULL, NULL, NULL FROM ({sql}) k UNION ALL SELECT NULL, h.* FROM ({hits}) h"
        params = [scope_id, scope_id, *listed]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    # The key's row (NULL: the scope has no vector) and the hits' rows, in any order.
    key = next((row[0] for row in rows if row[0] is not None), "")
    return key, {row[1]: (row[2], row[3]) for row in rows if len(row) > 1 and row[1] is not None}


def _key_text(ids: Iterable[int]) -> str:
    return ",".join(map(str, ids))


def _key_ids(text: str) -> tuple[int, ...]:
    return tuple(sorted(int(part) for part in text.split(","))) if text else ()


def _hits(scope_id: str, pks: Sequence[int]) -> _Hits:
    with connection.cursor() as cursor:
        condition, listed = one_of("a.id", pks)
        cursor.execute(_EXPERIENCE_HITS_SQL.format(pks=condition), [scope_id, *listed])
        return {row[0]: (row[1], row[2]) for row in cursor.fetchall()}


def _experience_entry(model_id: str, kept: _ScopeExperience | None, rows: Sequence[Any]) -> _ScopeExperience:
    """The entry holding ``kept``'s matrix rows plus ``rows`` (id, head pk, revision, model,
    artifact id, vector); its key lists exactly the rows it was built from."""
    own = [r for r in rows if r[3] == model_id]
    ids, matrix = _matrix([(r[0], r[5]) for r in own])
    key = tuple(int(r[0]) for r in rows)
    fresh = _ScopeExperience(
        model_id,
        key,
        _key_text(key),
        ids,
        np.fromiter((r[1] for r in own), dtype=np.int64, count=len(own)),
        np.fromiter((r[2] for r in own), dtype=np.int64, count=len(own)),
        tuple(str(r[4]) for r in own),
        matrix,
    )
    if kept is None:
        return fresh
    merged = tuple(sorted((*kept.key, *fresh.key)))
    return _ScopeExperience(
        model_id,
        merged,
        _key_text(merged),
        np.concatenate([kept.vector_ids, fresh.vector_ids]),
        np.concatenate([kept.head_pks, fresh.head_pks]),
        np.concatenate([kept.revisions, fresh.revisions]),
        kept.artifact_ids + fresh.artifact_ids,
        np.concatenate([kept.matrix, fresh.matrix]),
    )


def _without(cached: _ScopeExperience, gone: Iterable[int]) -> _ScopeExperience:
    """``cached`` without the rows of the vector ids ``gone``."""
    gone_set = set(gone)
    keep = ~np.isin(cached.vector_ids, np.asarray(sorted(gone_set), dtype=np.int64))
    ids = tuple(pk for pk in cached.key if pk not in gone_set)
    return _ScopeExperience(
        cached.model_id,
        ids,
        _key_text(ids),
        cached.vector_ids[keep],
        cached.head_pks[keep],
        cached.revisions[keep],
        tuple(compress(cached.artifact_ids, keep.tolist())),
        cached.matrix[keep],
    )


def _read_experience(
    scope_id: str, model_id: str, cached: _ScopeExperience | None, key: tuple[int, ...]
) -> _ScopeExperience:
    """A new entry for the scope: ``cached`` without the rows missing from ``key`` plus the rows
    added in it (O(changes)), or, with no usable entry or much added, every row. The entry's key
    is built from what was read, so a write racing the reads only makes the next call read again."""
    added = sorted(set(key) - set(cached.key)) if cached is not None else []
    with connection.cursor() as cursor:
        if cached is not None and len(added) <= _DELTA_MAX:
            rows: list[Any] = []
            if added:
                condition, listed = one_of("x.id", added)
                cursor.execute(_EXPERIENCE_ROWS_SQL + f" AND {condition} ORDER BY x.id", [scope_id, *listed])
                rows = cursor.fetchall()
            loaded = _experience_entry(model_id, _without(cached, set(cached.key) - set(key)), rows)
        else:
            cursor.execute(_EXPERIENCE_ROWS_SQL + " ORDER BY x.id", [scope_id])
            loaded = _experience_entry(model_id, None, cursor.fetchall())
    _experience_cache.put(scope_id, loaded)
    return loaded


def rank_experience(
    scope_id: str,
    model_id: str,
    query_vector: np.ndarray[Any, Any],
    limit: int,
    key_text: str | None = None,
) -> list[ExperienceHit]:
    """The ``limit`` recallable Experience heads of the scope nearest to the query (cosine; ties
    by head pk), each at the revision its vector was computed for.

    Warm, one statement: the cached vectors are ranked, then the scope's key and the best
    ``limit`` heads are read together; if the key is the cached one those heads are the answer,
    else the change is read and the ranking done again. With ``key_text`` (the key just read by
    ``scope_state``) only the heads are read, and nothing when the scope has no vectors. Cold:
    every row, then the heads. A head not recallable at its vector's revision (a write since the
    vectors were read) is passed over for the next best, so the answer is the ranking of the
    rows the heads read agrees with."""
    if limit < 1:
        return []
    cached = _experience_cache.get(scope_id)
    vectors = cached if cached is not None and cached.model_id == model_id else None
    if vectors is None:
        vectors = _read_experience(scope_id, model_id, None, ())
    heads: _Hits | None = None
    order, scores = _experience_order(vectors, query_vector)
    if vectors is cached:
        if key_text is None:
            key_text, heads = _key_and_hits(scope_id, vectors.head_pks[order[:limit]].tolist())
        key = vectors.key if key_text == vectors.key_text else _key_ids(key_text)
        if key != vectors.key:
            vectors, heads = _read_experience(scope_id, model_id, vectors, key), None
            order, scores = _experience_order(vectors, query_vector)
    found: list[ExperienceHit] = []
    start, chunk = 0, limit
    while len(found) < limit and start < len(order):
        batch = order[start : start + chunk]
        start, chunk = start + chunk, chunk * 2
        pks, revisions = vectors.head_pks[batch].tolist(), vectors.revisions[batch].tolist()
        if heads is None:
            heads = _hits(scope_id, pks)
        for i, pk, revision in zip(batch, pks, revisions, strict=True):
            head = heads.get(pk)
            if head is None or head[0] != revision or len(found) == limit:
                continue
            content = head[1]
            found.append(
                experience_row(pk, vectors.artifact_ids[i], revision, content, max(0.0, float(scores[i])))
            )
        heads = None
    return found


def _experience_order(
    vectors: _ScopeExperience, query_vector: np.ndarray[Any, Any]
) -> tuple[list[int], np.ndarray[Any, Any]]:
    """Matrix rows by cosine to the query, best first, ties by head pk; and the cosines."""
    scores = vectors.matrix @ query_vector
    order: list[int] = np.lexsort((vectors.head_pks, -scores)).tolist()
    return order, scores


def memory_vectors(scope_id: str, model_id: str, revision: int | None = None) -> MemoryVectors | None:
    """The scope's Memory matrix as ``rank_memory`` uses it (``membership_ids``, ``matrix``): the
    cached one of ``revision`` as it is (a ranking of the caller's just read it), else read as
    ``rank_memory`` reads it; None when the scope has no Memory head."""
    cached = _cache.get(scope_id) if revision is not None else None
    return (
        cached if cached is not None and cached.revision == revision else _scope_vectors(scope_id, model_id)
    )


def memory_ranking(scope_id: str) -> dict[str, int | None] | None:
    """How this process ranks the scope's Memory vectors, from its cached matrix: ``rows``, and
    ``shortlist``: how many rows at the least each query's exact cosines are computed for (None:
    all of them, the scope is ranked exactly). None when nothing of the scope is cached."""
    cached = _cache.get(scope_id)
    if cached is None:
        return None
    rows = cached.live
    return {"rows": rows, "shortlist": None if cached.codes is None else shortlist.depth_for(rows)}


def preload(scope_id: str, model_id: str, room_bytes: int) -> bool:
    """Warm-up: a first ranking's reads and cache keys, if the active vectors fit in ``room_bytes``."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM ({_ACTIVE_VECTORS_SQL}) v", [scope_id, model_id])
        rows = int(cursor.fetchone()[0])
    row_bytes = (
        embedding.DIMENSIONS * 4 + 8 + (0 if _exact(rows) else shortlist.code_bytes(embedding.DIMENSIONS))
    )
    fits = rows * row_bytes <= room_bytes
    if not fits or _scope_vectors(scope_id, model_id) is None:
        return False
    rank_experience(scope_id, model_id, np.zeros(embedding.DIMENSIONS, dtype=np.float32), 1)
    return True
