"""What prepare's Memory ranking (``rerank``) keeps of one scope's head between calls.

Per scope, for one head revision: the active membership ids in order (the neighbours), and,
filled as calls ask for them, the full-text index rows read (a membership's row never changes
while it is active) and the document frequencies of the terms asked for; the hits read (rows of
entries found by neither ranking) go with the vector hits' rows of the same revision
(``vectors.queries.keep_rows``). A call citing another revision starts afresh, so a write
(which moves the head) never serves what an earlier head held. Entries live in the vector cache
(``vector_cache``: one bound in bytes with the vectors, least recently used scopes first;
cleared with it), so a warm call reads only the frequencies of terms new to the head.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.db import connection

from powercontext.core import models
from powercontext.core.hits import MemoryHit
from powercontext.core.sql import one_of
from powercontext.search.fulltext import analyzer, bm25
from powercontext.search.fulltext.engines import engine
from powercontext.search.fulltext.indexes import MEMORY_INDEX, TOTALS
from powercontext.search.fulltext.queries import memory_hit
from powercontext.search.vectors import queries
from powercontext.search.vectors.vector_cache import ScopeLRU

if TYPE_CHECKING:
    import numpy as np
else:
    from powercontext.search.lazy_numpy import np

_ORDER_SQL = (
    f"SELECT a.current_revision, m.id FROM {models.MemoryMembership._meta.db_table} m"
    f" JOIN {models.Artifact._meta.db_table} a ON a.scope_id = m.scope_id"
    f" AND a.family = '{models.MEMORY_FAMILY}' AND a.artifact_id = '{models.MEMORY_ARTIFACT_ID}'"
    f" WHERE m.scope_id = %s AND m.to_revision IS NULL AND m.state = 'active' ORDER BY m.id"
)
# What changed in a scope's head since a revision (``_moved``): rows (kind, value) of the head's
# revision (0), the memberships closed since (1), the active ones above an id (2), and the
# index's documents (3).
_MOVED_SQL = (
    f"SELECT 0, a.current_revision FROM {models.Artifact._meta.db_table} a WHERE a.scope_id = %s"
    f" AND a.family = '{models.MEMORY_FAMILY}' AND a.artifact_id = '{models.MEMORY_ARTIFACT_ID}'"
    f" UNION ALL SELECT 1, m.id FROM {models.MemoryMembership._meta.db_table} m"
    " WHERE m.scope_id = %s AND m.to_revision > %s"
    f" UNION ALL SELECT 2, m.id FROM {models.MemoryMembership._meta.db_table} m"
    " WHERE m.scope_id = %s AND m.to_revision IS NULL AND m.state = 'active' AND m.id > %s"
    f" UNION ALL SELECT 3, t.documents FROM {TOTALS} t WHERE t.scope_id = %s"
)
_DOCS_SQL = (
    f"SELECT membership_id, length, terms FROM {models.MemorySearchDocument._meta.db_table} WHERE {{ids}}"
)
# Hits as ``vectors.queries.read_hits`` reads them, with their index rows. The scope is compared
# as an expression: SQLite would otherwise walk the scope's whole head by its (scope, to_revision)
# index rather than look the few ids up by primary key (4x slower at 1,000 entries).
_ROWS_SQL = (
    f"SELECT m.id, e.entry_id, v.entry_version_id, v.text, a.current_revision, d.length, d.terms"
    f" FROM {models.MemoryMembership._meta.db_table} m"
    f" JOIN {models.MemoryEntry._meta.db_table} e ON e.id = m.entry_id"
    f" JOIN {models.MemoryEntryVersion._meta.db_table} v ON v.id = m.entry_version_id"
    f" JOIN {models.Artifact._meta.db_table} a ON a.scope_id = m.scope_id"
    f" AND a.family = '{models.MEMORY_FAMILY}' AND a.artifact_id = '{models.MEMORY_ARTIFACT_ID}'"
    f" LEFT JOIN {models.MemorySearchDocument._meta.db_table} d ON d.membership_id = m.id"
    f" WHERE {{ids}} AND m.scope_id || '' = %s AND m.to_revision IS NULL AND m.state = 'active'"
)

Document = tuple[int, str]  # an index row: (length in terms, stored terms)
# Index rows kept per head: a small scope's all, a large one's most recent (~0.5 KiB a row: a
# 100k scope's would otherwise grow towards 50 MB and push its own matrix out of the cache).
DOCS_KEPT = 16384


@dataclass
class Head:
    """One scope's head at ``revision``: its active membership ids, ascending (a membership's
    place in them is its position), and what calls have read of it so far: ``docs`` (at most
    ``DOCS_KEPT``) and ``frequencies``, kept under ``_lock``; ``size`` counts their bytes
    (roughly) with the ids'. The hits read are kept with the vector hits' rows
    (``vectors.queries.keep_rows``)."""

    revision: int
    ids: np.ndarray[Any, np.dtype[np.int64]]
    docs: dict[int, Document] = field(default_factory=dict)  # membership id -> (length, terms)
    frequencies: dict[str, int] = field(default_factory=dict)  # index term -> documents holding it
    size: int = 0


_heads: ScopeLRU[Head] = ScopeLRU("rerank", lambda head: head.size)
_lock = threading.Lock()


def clear_cache() -> None:
    _heads.clear()


def head(scope_id: str, revision: int) -> Head | None:
    """The scope's head at ``revision`` (cached); None when the head has moved on from it."""
    cached = _heads.get(scope_id)
    if cached is not None and cached.revision == revision:
        return cached
    if cached is not None and cached.revision < revision and len(cached.ids):
        found = _moved(scope_id, cached, revision)
        if found is not None:
            _heads.put(scope_id, found)
            return found
    with connection.cursor() as cursor:
        cursor.execute(_ORDER_SQL, [scope_id])
        rows = cursor.fetchall()
    if not rows or int(rows[0][0]) != revision:
        return None
    ids = np.fromiter((row[1] for row in rows), dtype=np.int64, count=len(rows))
    found = Head(revision, ids, size=ids.nbytes + sys.getsizeof(revision))
    _heads.put(scope_id, found)
    return found


def _moved(scope_id: str, cached: Head, revision: int) -> Head | None:
    """The head at ``revision`` from the ``cached`` earlier one by what changed since, read by one
    statement: the memberships closed since (``to_revision`` after the cached revision) leave,
    the active ones added since join (ids above the cached ones: a scope's memberships are
    written under its head's lock, so in id order). None, to read the whole head instead, when
    the head is not at ``revision`` or the result does not hold as many entries as the index
    has rows (the index's totals: a drifted index, or ids out of order)."""
    with connection.cursor() as cursor:
        cursor.execute(
            _MOVED_SQL, [scope_id, scope_id, cached.revision, scope_id, int(cached.ids[-1]), scope_id]
        )
        rows = cursor.fetchall()
    heads = [value for kind, value in rows if kind == 0]
    if heads != [revision]:
        return None
    closed = np.asarray([value for kind, value in rows if kind == 1], dtype=np.int64)
    opened = np.sort(np.asarray([value for kind, value in rows if kind == 2], dtype=np.int64))
    ids = np.concatenate([cached.ids[~np.isin(cached.ids, closed)] if len(closed) else cached.ids, opened])
    if [len(ids)] != [value for kind, value in rows if kind == 3]:
        return None
    gone = set(closed.tolist())
    with _lock:  # the index rows of memberships still active are still theirs
        docs = {pk: doc for pk, doc in cached.docs.items() if pk not in gone}
    size = ids.nbytes + sys.getsizeof(revision) + sum(_doc_size(doc) for doc in docs.values())
    return Head(revision, ids, docs, size=size)


def _grown(scope_id: str, known: Head, added: int) -> None:
    """Count ``added`` bytes more for ``known`` (put again: the cache's sum follows)."""
    with _lock:
        known.size += added
    if _heads.get(scope_id) is known:
        _heads.put(scope_id, known)


def holds(known: Head | None, pk: int) -> bool:
    """Whether ``known`` holds the index row of membership ``pk``."""
    return known is not None and pk in known.docs


def _doc_size(doc: Document) -> int:
    return sys.getsizeof(doc[1]) + 100


def _keep(scope_id: str, known: Head | None, read: dict[int, Document]) -> None:
    """Keep index rows in ``known``: at most ``DOCS_KEPT``, the first kept going first."""
    if known is not None and read:
        with _lock:
            added = {pk: doc for pk, doc in read.items() if pk not in known.docs}
            known.docs.update(added)
            change = sum(_doc_size(doc) for doc in added.values())
            while len(known.docs) > DOCS_KEPT:
                change -= _doc_size(known.docs.pop(next(iter(known.docs))))
        _grown(scope_id, known, change)


def read_rows(
    scope_id: str, membership_ids: Sequence[int], index_ids: Sequence[int], known: Head | None
) -> tuple[list[MemoryHit], dict[int, Document | None]]:
    """The hits of those ``membership_ids`` active in the scope's current head (``read_hits``'s:
    score 0, channel "vector", citing the head revision read), and the index rows (None: none)
    of the ``index_ids`` that ``known`` does not hold; what is not kept (hit rows: with the
    vector hits' rows of ``known``'s revision, ``vectors.queries.kept_rows``; index rows: in
    ``known``) is read by one statement and kept."""
    cached = queries.kept_rows(scope_id, known.revision, membership_ids) if known is not None else {}
    kept = [memory_hit(*row, score=0.0, matched_by=("vector",)) for row in cached.values()]
    wanted = [pk for pk in membership_ids if pk not in cached]
    wanted += [pk for pk in index_ids if not holds(known, pk) and pk not in cached and pk not in wanted]
    if not wanted:
        return kept, {}
    with connection.cursor() as cursor:
        ids, params = one_of("m.id", wanted)
        cursor.execute(_ROWS_SQL.format(ids=ids), [*params, scope_id])
        found = cursor.fetchall()
    hits = [memory_hit(*row[:5], score=0.0, matched_by=("vector",)) for row in found]
    docs = {int(row[0]): (int(row[5]), str(row[6])) if row[5] is not None else None for row in found}
    if known is not None:
        queries.keep_rows(scope_id, known.revision, {int(row[0]): tuple(row[:5]) for row in found})
    _keep(scope_id, known, {pk: doc for pk, doc in docs.items() if doc is not None and not holds(known, pk)})
    return [*kept, *hits], docs


def index_counts(
    scope_id: str,
    membership_ids: Sequence[int],
    terms: Sequence[str],
    known: Head | None = None,
    read: dict[int, Document | None] | None = None,
) -> dict[int, tuple[dict[str, int], int]]:
    """For each membership: (occurrences of each of ``terms`` it holds, its length in terms),
    from its full-text index row (no text analysis): those ``known`` holds or this call ``read``
    already, the others read by one statement (and kept in ``known``). Memberships without an
    index row are absent."""
    if not membership_ids:
        return {}
    docs: dict[int, Document | None] = {pk: read[pk] for pk in membership_ids if read and pk in read}
    if known is not None:
        with _lock:
            docs.update({pk: known.docs[pk] for pk in membership_ids if pk in known.docs})
    missing = [pk for pk in membership_ids if pk not in docs]
    if missing:
        with connection.cursor() as cursor:
            ids, params = one_of("membership_id", missing)
            cursor.execute(_DOCS_SQL.format(ids=ids), params)
            found = {int(pk): (int(length), str(stored)) for pk, length, stored in cursor.fetchall()}
        docs.update(found)
        _keep(scope_id, known, found)
    tokens = dict(zip(analyzer.scope_tokens(scope_id, terms), terms, strict=True))
    db = engine()
    counted: dict[int, tuple[dict[str, int], int]] = {}
    for pk, doc in docs.items():
        if doc is not None:
            length, stored = doc
            counted[pk] = (db.counts(stored, tokens), length)
    return counted


def figures(
    scope_id: str,
    terms: Sequence[str],
    revision: int,
    known: Head | None,
    counted: Mapping[str, int] | None = None,
) -> bm25.ScopeFigures:
    """``bm25.scope_figures`` of the Memory index for ``terms`` at the head ``revision``; the
    frequencies ``known`` holds, and those ``counted`` at that revision by the full-text ranking's
    statement, are not read again (none missing and the totals cached: no statement)."""
    if known is None:
        return bm25.scope_figures(MEMORY_INDEX, scope_id, terms, revision, counted)
    with _lock:
        frequencies = {term: known.frequencies[term] for term in terms if term in known.frequencies}
    missing = [term for term in terms if term not in frequencies]
    read = bm25.scope_figures(MEMORY_INDEX, scope_id, missing, revision, counted)
    if missing:
        with _lock:
            known.frequencies.update(read.frequencies)
        _grown(scope_id, known, sum(sys.getsizeof(term) + 100 for term in missing))
        frequencies.update(read.frequencies)
    return bm25.ScopeFigures(read.count, read.average_length, {term: frequencies[term] for term in terms})
