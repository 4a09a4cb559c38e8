"""Per-scope BM25 collection statistics for PostgreSQL: document count and average length.

FTS5 keeps these itself; on PostgreSQL they are counted from the index rows of one scope. That
count reads every row of the scope, so the Memory index's figures are cached per process by
(scope, head revision): every Memory write moves the head, and the Memory index holds exactly the
head's active entries, so a cached figure is never used for another set of rows. Reading the head
revision is one indexed lookup of one row. The Experience index has no single revision to key
by and is counted at every search (it is small next to Memory; at 10,000 Experiences the count
is ~1 ms).

The statistics are read just before the ranking statement, not inside it: a write committed in
between can shift scores by one entry's weight, never which rows match or what they cite.
Document frequencies are counted inside the ranking statement (``engines.PostgresEngine``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from django.db import connection
from django.db.models import Avg, Count

from powercontext.models import MEMORY_ARTIFACT_ID, MEMORY_FAMILY, Artifact
from powercontext.search.indexes import MEMORY_INDEX, Index

CACHE_ENTRIES = 4096

_cache: OrderedDict[tuple[str, str, int], tuple[float, float]] = OrderedDict()
_lock = threading.Lock()


def clear_cache() -> None:
    """Forget cached figures (a rebuild may have changed index rows without a head move)."""
    with _lock:
        _cache.clear()


def _count(index: Index, scope_id: str) -> tuple[float, float]:
    figures = index.model._default_manager.filter(scope_id=scope_id).aggregate(
        count=Count("pk"), average=Avg("length")
    )
    return float(figures["count"]), float(figures["average"] or 0.0)


_HEAD_SQL = (
    f"SELECT current_revision FROM {Artifact._meta.db_table}"
    f" WHERE scope_id = %s AND family = '{MEMORY_FAMILY}' AND artifact_id = '{MEMORY_ARTIFACT_ID}'"
)


def _memory_head(scope_id: str) -> int | None:
    # Raw SQL: this runs before every PostgreSQL search, and the ORM would compile it each time.
    with connection.cursor() as cursor:
        cursor.execute(_HEAD_SQL, [scope_id])
        row = cursor.fetchone()
    return None if row is None else int(row[0])


def scope_statistics(index: Index, scope_id: str) -> tuple[float, float]:
    """(number of index rows, their average length in tokens) of one scope of ``index``."""
    if index is not MEMORY_INDEX:
        return _count(index, scope_id)
    revision = _memory_head(scope_id)
    if revision is None:
        return 0.0, 0.0
    key = (index.name, scope_id, revision)
    with _lock:
        cached = _cache.get(key)
        if cached is not None:
            _cache.move_to_end(key)
            return cached
    figures = _count(index, scope_id)
    with _lock:
        _cache[key] = figures
        while len(_cache) > CACHE_ENTRIES:
            _cache.popitem(last=False)
    return figures
