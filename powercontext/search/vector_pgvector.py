"""Exact vector search in PostgreSQL with pgvector, when the operator's database has it.

Storage: two side tables mirror the vector tables (``MemoryEntryVector``, ``ExperienceVector``)
row for row as pgvector ``vector(384)`` columns, keyed by the vector row's id. They are created
outside Django's migrations, because the extension can be installed after ``migrate``: by
``setup`` (run by ``rebuild_search_index``, by ``--repair``, and after ``migrate`` when the
extension is there), idempotent, in one transaction that also fills them. The bytea vector
tables stay the authority; the mirror is derived like every other index row:

* inserts: every path that inserts vector rows calls ``mirror`` in the same transaction (one
  helper: it copies the given rows that have no mirror row yet);
* deletes: statement triggers on the vector tables delete the mirror rows of deleted vector
  rows (transition tables) and empty the mirror when a vector table is truncated (``flush``).
  A foreign key with ``ON DELETE CASCADE`` would do the deletes, but it makes ``TRUNCATE`` of
  the vector tables (Django's ``flush``) fail;
* vector rows are never updated (writers delete and insert), so no update trigger.

Search is exact: the distance to every active vector of the scope (``<#>``, the negated inner
product: vectors are unit length, so -distance is the cosine), ordered by distance then
membership id, top ``limit``; no approximate index. The Memory ranking reads the head revision
in the same statement, so the ranking and the revision come from one snapshot.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from django.db import ProgrammingError, connection, transaction

from powercontext.hits import ExperienceHit
from powercontext.models import (
    MEMORY_ARTIFACT_ID,
    MEMORY_FAMILY,
    SCOPE_MAX_LENGTH,
    Artifact,
    ArtifactRevision,
    ExperienceVector,
    MemoryEntryVector,
    MemoryMembership,
)
from powercontext.search import embedding, vector_inprocess
from powercontext.search.queries import experience_row

logger = logging.getLogger("powercontext.search")

MEMORY_TABLE = "powercontext_pgvector_memory"
EXPERIENCE_TABLE = "powercontext_pgvector_experience"
FILL_BATCH = 1000

_VECTORS = MemoryEntryVector._meta.db_table
_EXPERIENCE_VECTORS = ExperienceVector._meta.db_table


# The two mirrors: (mirror table, source table, the source's key column, extra copied columns).
_MIRRORS = (
    (MEMORY_TABLE, _VECTORS, "entry_version_id", ()),
    (EXPERIENCE_TABLE, _EXPERIENCE_VECTORS, "head_id", ("revision",)),
)


_COMPLETE_SQL = (
    "SELECT COUNT(*) FROM pg_attribute WHERE attname = 'embedding' AND NOT attisdropped"
    " AND attrelid IN (to_regclass(%s), to_regclass(%s))"
)


def is_set_up() -> bool:
    """Whether both side tables exist with their ``embedding`` column in the current database
    (one catalog query; ``DROP EXTENSION vector CASCADE`` drops the columns, not the tables)."""
    with connection.cursor() as cursor:
        cursor.execute(_COMPLETE_SQL, [MEMORY_TABLE, EXPERIENCE_TABLE])
        row = cursor.fetchone()
    return bool(row and row[0] == 2)


def _ddl() -> list[str]:
    statements = [
        f"CREATE TABLE IF NOT EXISTS {MEMORY_TABLE} ("
        " vector_id bigint PRIMARY KEY, entry_version_id bigint NOT NULL,"
        f" scope_id varchar({SCOPE_MAX_LENGTH}) NOT NULL, model varchar(64) NOT NULL,"
        f" embedding vector({embedding.DIMENSIONS}) NOT NULL)",
        f"CREATE INDEX IF NOT EXISTS {MEMORY_TABLE}_scope ON {MEMORY_TABLE} (scope_id, entry_version_id)",
        f"CREATE TABLE IF NOT EXISTS {EXPERIENCE_TABLE} ("
        " vector_id bigint PRIMARY KEY, head_id bigint NOT NULL, revision integer NOT NULL,"
        f" scope_id varchar({SCOPE_MAX_LENGTH}) NOT NULL, model varchar(64) NOT NULL,"
        f" embedding vector({embedding.DIMENSIONS}) NOT NULL)",
        f"CREATE INDEX IF NOT EXISTS {EXPERIENCE_TABLE}_scope ON {EXPERIENCE_TABLE} (scope_id)",
    ]
    for mirror_table, source, _, _ in _MIRRORS:
        # The trigger functions do nothing once the mirror table is gone (dropped by hand), so
        # vector deletes never fail for the mirror's sake.
        statements += [
            f"CREATE OR REPLACE FUNCTION {mirror_table}_gone() RETURNS trigger LANGUAGE plpgsql AS $$"
            f" BEGIN IF to_regclass('{mirror_table}') IS NOT NULL THEN"
            f" DELETE FROM {mirror_table} WHERE vector_id IN (SELECT id FROM gone); END IF; RETURN NULL; END $$",
            f"CREATE OR REPLACE FUNCTION {mirror_table}_truncated() RETURNS trigger LANGUAGE plpgsql AS $$"
            f" BEGIN IF to_regclass('{mirror_table}') IS NOT NULL THEN TRUNCATE {mirror_table}; END IF;"
            " RETURN NULL; END $$",
            f"DROP TRIGGER IF EXISTS {mirror_table}_gone ON {source}",
            f"CREATE TRIGGER {mirror_table}_gone AFTER DELETE ON {source}"
            f" REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION {mirror_table}_gone()",
            f"DROP TRIGGER IF EXISTS {mirror_table}_truncated ON {source}",
            f"CREATE TRIGGER {mirror_table}_truncated AFTER TRUNCATE ON {source}"
            f" FOR EACH STATEMENT EXECUTE FUNCTION {mirror_table}_truncated()",
        ]
    return statements


def setup() -> int:
    """Create the side tables and triggers (idempotent) and copy every vector row that has no
    mirror row yet, in one transaction; returns the rows copied. Needs the extension.

    The vector tables are locked in SHARE mode first: a writer that inserted vector rows before
    commits before the copy reads (so they are copied); one that inserts after waits for this
    commit and then sees the tables (``mirror`` copies its rows)."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(f"LOCK TABLE {_VECTORS}, {_EXPERIENCE_VECTORS} IN SHARE MODE")
            for mirror_table, *_ in _MIRRORS:  # left without its column by a dropped extension
                cursor.execute(_COMPLETE_SQL, [mirror_table, mirror_table])
                if cursor.fetchone()[0] == 0:
                    cursor.execute(f"DROP TABLE IF EXISTS {mirror_table}")
            for statement in _ddl():
                cursor.execute(statement)
        copied = sync()
    from powercontext.search import vector_backend

    vector_backend.forget_detection()
    return copied


def teardown() -> None:
    """Drop the side tables, their triggers and functions (vector search goes back in process);
    ``setup`` builds them again."""
    with transaction.atomic(), connection.cursor() as cursor:
        for mirror_table, source, _, _ in _MIRRORS:
            cursor.execute(f"DROP TRIGGER IF EXISTS {mirror_table}_gone ON {source}")
            cursor.execute(f"DROP TRIGGER IF EXISTS {mirror_table}_truncated ON {source}")
            cursor.execute(f"DROP FUNCTION IF EXISTS {mirror_table}_gone(), {mirror_table}_truncated()")
            cursor.execute(f"DROP TABLE IF EXISTS {mirror_table}")
    from powercontext.search import vector_backend

    vector_backend.forget_detection()


def _literal(vector: bytes | memoryview) -> str:
    """pgvector's text form of a stored float32 vector; each float32 is written as its shortest
    double repr, which reads back as the same float32."""
    return "[" + ",".join(map(repr, embedding.from_bytes(vector).astype(np.float64).tolist())) + "]"


def _copy(
    mirror_table: str, source: str, key: str, extra: tuple[str, ...], where: str, params: list[Any]
) -> int:
    """Copy the source rows matching ``where`` that have no mirror row; the one insert path."""
    columns = ["id", key, *extra, "scope_id", "model", "vector"]
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {', '.join('x.' + c for c in columns)} FROM {source} x"
            f" WHERE {where} AND NOT EXISTS (SELECT 1 FROM {mirror_table} p WHERE p.vector_id = x.id)"
            " ORDER BY x.id",
            params,
        )
        copied = 0
        while rows := cursor.fetchmany(FILL_BATCH):
            with connection.cursor() as insert:
                insert.executemany(
                    f"INSERT INTO {mirror_table} (vector_id, {key}, {''.join(c + ', ' for c in extra)}"
                    f"scope_id, model, embedding) VALUES ({', '.join(['%s'] * (len(columns) - 1))}, %s::vector)"
                    " ON CONFLICT (vector_id) DO NOTHING",
                    [(*row[:-1], _literal(row[-1])) for row in rows],
                )
            copied += len(rows)
    return copied


class MirrorGone(Exception):
    """The side tables (or the extension) were removed since this process saw them."""


@contextmanager
def _guard() -> Iterator[None]:
    """Run statements on the side tables in a savepoint: when they fail because the tables or
    the extension are gone (an operator's ``teardown`` or ``DROP EXTENSION`` while this process
    had them cached), roll back to it, forget the detection and raise ``MirrorGone``, so the
    caller's write or search goes on without pgvector instead of failing."""
    try:
        with transaction.atomic():
            yield
    except ProgrammingError:
        if is_set_up():
            raise
        from powercontext.search import vector_backend

        logger.warning("the pgvector side tables are gone: vector search is in process again")
        vector_backend.forget_detection()
        raise MirrorGone() from None


def mirror(*, entry_version_ids: Iterable[int] = (), head_ids: Iterable[int] = ()) -> int:
    """Copy the vector rows of these entry versions and Experience heads into the mirror, in the
    caller's transaction, after it inserted them. Does nothing (no query) unless the database
    has pgvector, and nothing but a catalog query unless the mirror is set up."""
    from powercontext.search.vector_backend import vector_backend

    versions, heads = sorted(set(entry_version_ids)), sorted(set(head_ids))
    if not (versions or heads) or not vector_backend().pgvector_set_up:
        return 0
    copied = 0
    try:
        with _guard():
            for (mirror_table, source, key, extra), keys in zip(_MIRRORS, (versions, heads), strict=True):
                if keys:
                    copied += _copy(mirror_table, source, key, extra, f"x.{key} = ANY(%s)", [keys])
    except MirrorGone:
        return 0
    return copied


def sync(scope_id: str | None = None) -> int:
    """Make the mirror equal to the vector tables (all scopes, or one): delete rows that are
    extra or differ, copy the missing ones; returns the rows copied."""
    copied = 0
    with transaction.atomic():
        drift = compare(scope_id)
        with connection.cursor() as cursor:
            for (mirror_table, *_), stale in zip(_MIRRORS, drift.stale_ids, strict=True):
                if stale:
                    cursor.execute(f"DELETE FROM {mirror_table} WHERE vector_id = ANY(%s)", [sorted(stale)])
        for mirror_table, source, key, extra in _MIRRORS:
            where, params = ("x.scope_id = %s", [scope_id]) if scope_id is not None else ("TRUE", [])
            copied += _copy(mirror_table, source, key, extra, where, params)
    return copied


class Drift:
    """How the mirror differs from the vector tables (counts; ids only to repair)."""

    def __init__(self) -> None:
        self.checked = 0
        self.missing = 0
        self.extra = 0
        self.mismatched = 0
        self.stale_ids: tuple[set[int], set[int]] = (set(), set())

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.mismatched)

    def as_dict(self) -> dict[str, int]:
        return {
            "checked": self.checked,
            "missing": self.missing,
            "extra": self.extra,
            "mismatched": self.mismatched,
        }


def compare(scope_id: str | None = None) -> Drift:
    """Merge-compare each mirror with its vector table by vector id: a vector row without a
    mirror row is missing, a mirror row without a vector row is extra, one whose copied columns
    or embedding (read back with ``vector_send``: big-endian float32) differ is mismatched."""
    drift = Drift()
    for index, (mirror_table, source, key, extra) in enumerate(_MIRRORS):
        cols = [key, *extra, "scope_id", "model"]
        filter_sql = "WHERE scope_id = %s" if scope_id is not None else ""
        params = [scope_id] if scope_id is not None else []
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT id, {', '.join(cols)}, vector FROM {source} {filter_sql} ORDER BY id", params
            )
            want = {int(row[0]): row for row in cursor.fetchall()}
            cursor.execute(
                f"SELECT vector_id, {', '.join(cols)}, vector_send(embedding) FROM {mirror_table}"
                f" {filter_sql} ORDER BY vector_id",
                params,
            )
            have = {int(row[0]): row for row in cursor.fetchall()}
        for vector_id, row in want.items():
            drift.checked += 1
            got = have.get(vector_id)
            if got is None:
                drift.missing += 1
            elif tuple(got[1:-1]) != tuple(row[1:-1]) or not _same(row[-1], got[-1]):
                drift.mismatched += 1
                drift.stale_ids[index].add(vector_id)
        for vector_id in have.keys() - want.keys():
            drift.extra += 1
            drift.stale_ids[index].add(vector_id)
    return drift


def _same(stored: bytes | memoryview, sent: bytes | memoryview) -> bool:
    """A bytea vector (little-endian float32) and pgvector's binary form (int16 dimensions,
    int16 unused, big-endian float32) hold the same numbers."""
    sent = bytes(sent)
    if int.from_bytes(sent[:2], "big") != embedding.DIMENSIONS or len(sent) != 4 + 4 * embedding.DIMENSIONS:
        return False
    return bool(np.array_equal(embedding.from_bytes(stored), np.frombuffer(sent[4:], dtype=">f4")))


# -- ranking ---------------------------------------------------------------------------------------

_MEMORY_SQL = (
    f"SELECT a.current_revision, hit.id, hit.distance FROM {Artifact._meta.db_table} a"
    f" LEFT JOIN LATERAL (SELECT m.id, p.embedding <#> %(q)s::vector AS distance"
    f" FROM {MEMORY_TABLE} p JOIN {MemoryMembership._meta.db_table} m"
    f" ON m.entry_version_id = p.entry_version_id AND m.scope_id = p.scope_id"
    f" WHERE p.scope_id = a.scope_id AND p.model = %(model)s"
    f" AND m.to_revision IS NULL AND m.state = 'active'"
    f" ORDER BY distance, m.id LIMIT %(limit)s) hit ON TRUE"
    f" WHERE a.scope_id = %(scope)s AND a.family = '{MEMORY_FAMILY}' AND a.artifact_id = '{MEMORY_ARTIFACT_ID}'"
    f" ORDER BY hit.distance, hit.id"
)


def _query_literal(query_vector: np.ndarray[Any, Any]) -> str:
    return (
        "["
        + ",".join(map(repr, np.asarray(query_vector, dtype=np.float32).astype(np.float64).tolist()))
        + "]"
    )


def rank_memory(
    scope_id: str, model_id: str, query_vector: np.ndarray[Any, Any], limit: int
) -> tuple[int, list[tuple[int, float]]] | None:
    """As ``vector_inprocess.rank_memory``: (head revision, [(membership id, cosine ≥ 0)]) best
    first, ties by membership id; None when the scope has no Memory head. One statement."""
    try:
        with _guard(), connection.cursor() as cursor:
            cursor.execute(
                _MEMORY_SQL,
                {"q": _query_literal(query_vector), "model": model_id, "limit": limit, "scope": scope_id},
            )
            rows = cursor.fetchall()
    except MirrorGone:
        return vector_inprocess.rank_memory(scope_id, model_id, query_vector, limit)
    if not rows:
        return None
    return int(rows[0][0]), [(int(row[1]), max(0.0, -float(row[2]))) for row in rows if row[1] is not None]


_EXPERIENCE_SQL = (
    f"SELECT a.id, a.artifact_id, a.current_revision, r.content, p.embedding <#> %(q)s::vector AS distance"
    f" FROM {EXPERIENCE_TABLE} p"
    f" JOIN {Artifact._meta.db_table} a ON a.id = p.head_id AND a.current_revision = p.revision"
    f" JOIN {ArtifactRevision._meta.db_table} r ON r.head_id = a.id AND r.revision = a.current_revision"
    f" WHERE p.scope_id = %(scope)s AND a.scope_id = %(scope)s AND p.model = %(model)s"
    " AND a.recallable"
    f" ORDER BY distance, a.id LIMIT %(limit)s"
)


def rank_experience(
    scope_id: str, model_id: str, query_vector: np.ndarray[Any, Any], limit: int
) -> list[ExperienceHit]:
    """As ``vector_inprocess.rank_experience``: recallable heads nearest to the query, best
    first, ties by head pk, each at the revision its vector was computed for."""
    try:
        with _guard(), connection.cursor() as cursor:
            cursor.execute(
                _EXPERIENCE_SQL,
                {"q": _query_literal(query_vector), "model": model_id, "limit": limit, "scope": scope_id},
            )
            rows: Sequence[Any] = cursor.fetchall()
    except MirrorGone:
        return vector_inprocess.rank_experience(scope_id, model_id, query_vector, limit)
    return [experience_row(row[0], row[1], row[2], row[3], max(0.0, -float(row[4]))) for row in rows]
