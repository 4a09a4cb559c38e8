"""Per-scope BM25 collection statistics for PostgreSQL: row count and average length.

FTS5 keeps these itself; on PostgreSQL they are counted from the index rows of one scope.

Memory: counting reads every row of the scope, so the figures are cached per process and scope
together with the head (row id, revision) they were counted at, read by the same statement. The
ranking statement reads the head anyway (every hit cites its revision): when it differs from the
cached one, a write came in between, the figures are dropped and the search runs again with
fresh ones (``queries``; at most three times, then the last scores stand). Every
Memory write moves the head and the index holds exactly the head's active entries, so scores
always use the figures of the rows they rank, and a steady-state search costs no extra query.

Experience: no single revision covers the index, so its figures are counted inside the ranking
statement (``engines.PostgresEngine``); a scope's Experience rows are few next to its Memory.

Document frequencies are counted inside the ranking statement.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from django.db import connection

from powercontext.core.models import MEMORY_ARTIFACT_ID, MEMORY_FAMILY, Artifact, MemorySearchDocument

CACHE_SCOPES = 4096


@dataclass(frozen=True)
class Statistics:
    # The Memory head (row id, revision) the figures were counted at; the row id tells a head
    # that was deleted and created again (a restored or flushed database) from the old one.
    head: tuple[int, int] | None
    count: float
    average_length: float


_cache: OrderedDict[str, Statistics] = OrderedDict()
_lock = threading.Lock()

# The head revision and the figures, read by one statement (one snapshot).
_COUNT_SQL = (
    f"SELECT h.id, h.current_revision, d.n, d.avgdl FROM"
    f" (SELECT count(*) AS n, avg(length) AS avgdl FROM {MemorySearchDocument._meta.db_table}"
    f" WHERE scope_id = %s) d LEFT JOIN {Artifact._meta.db_table} h ON h.scope_id = %s"
    f" AND h.family = '{MEMORY_FAMILY}' AND h.artifact_id = '{MEMORY_ARTIFACT_ID}'"
)


def clear_cache() -> None:
    """Forget every scope's figures (a rebuild may change index rows without a head move)."""
    with _lock:
        _cache.clear()


def forget(scope_id: str) -> None:
    with _lock:
        _cache.pop(scope_id, None)


def _count(scope_id: str) -> Statistics:
    with connection.cursor() as cursor:
        cursor.execute(_COUNT_SQL, [scope_id, scope_id])
        pk, revision, count, average = cursor.fetchone()
    head = None if pk is None else (int(pk), int(revision))
    return Statistics(head, float(count), float(average or 0.0))


def memory_statistics(scope_id: str) -> Statistics:
    """The scope's Memory index figures: cached, or counted now (one statement)."""
    with _lock:
        cached = _cache.get(scope_id)
        if cached is not None:
            _cache.move_to_end(scope_id)
            return cached
    counted = _count(scope_id)
    with _lock:
        _cache[scope_id] = counted
        while len(_cache) > CACHE_SCOPES:
            _cache.popitem(last=False)
    return counted
