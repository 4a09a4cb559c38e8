"""Full-text search over derived index rows: SQLite FTS5 and PostgreSQL full text.

Both backends index the same terms (``powercontext.analyzer``) as opaque, scope-keyed ASCII
tokens, so they agree on what matches; each ranks with its own engine (FTS5 ``bm25``,
PostgreSQL ``ts_rank_cd``). Scope and head filtering happen inside the one SQL statement that
ranks, and the statement also reads the head revision, so every hit of one search carries a
citation of the revision that statement saw.

Index rows exist only for active memberships of each scope's current head; writes maintain them
in their own transaction and ``rebuild``/``verify`` recompute them from authoritative rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from django.db import connection, transaction

from powercontext import analyzer
from powercontext.models import (
    MEMORY_ARTIFACT_ID,
    MEMORY_FAMILY,
    Artifact,
    MemoryEntry,
    MemoryEntryVersion,
    MemoryMembership,
    MemorySearchDocument,
)

FTS_TABLE = "memory_fts"
MAX_POSITIONS_PER_LEXEME = 255
MAX_POSITION = 16383
REBUILD_BATCH = 2000


@dataclass(frozen=True)
class MemorySearchRow:
    membership_id: int
    entry_id: str
    entry_version_id: str
    version: int
    kind: str
    text: str
    score: float
    head_revision: int


def _tokens(scope_id: str, terms: Iterable[str]) -> list[str]:
    key = analyzer.scope_key(scope_id)
    return [analyzer.index_token(key, term) for term in terms]


def _score(raw: float) -> float:
    """Map an engine relevance (>= 0, higher is better) into [0, 1)."""
    raw = max(0.0, float(raw))
    return raw / (1.0 + raw)


class SearchBackend:
    vendor = ""

    def document_terms(self, scope_id: str, text: str) -> str:
        raise NotImplementedError

    def search_memory(self, scope_id: str, query: str, limit: int) -> list[MemorySearchRow]:
        terms = analyzer.query_terms(query)
        if not terms or limit < 1:
            return []
        tokens = _tokens(scope_id, terms)
        with connection.cursor() as cursor:
            cursor.execute(self._memory_sql(), self._memory_params(scope_id, tokens, limit))
            rows = cursor.fetchall()
        return [
            MemorySearchRow(
                membership_id=row[0],
                entry_id=row[1],
                entry_version_id=row[2],
                version=row[3],
                kind=row[4],
                text=row[5],
                score=_score(self._relevance(row[6])),
                head_revision=row[7],
            )
            for row in rows
        ]

    # --- engine specifics -----------------------------------------------------------------
    def _memory_sql(self) -> str:
        raise NotImplementedError

    def _memory_params(self, scope_id: str, tokens: list[str], limit: int) -> list[object]:
        raise NotImplementedError

    def _relevance(self, raw: float) -> float:
        raise NotImplementedError

    def engine_problems(self) -> list[str]:
        """Problems the engine itself reports about its index structures."""
        return []

    def repair_engine(self) -> None:
        """Rebuild engine structures from the document rows."""

    def _joins(self) -> str:
        membership = MemoryMembership._meta.db_table
        entry = MemoryEntry._meta.db_table
        version = MemoryEntryVersion._meta.db_table
        artifact = Artifact._meta.db_table
        return (
            f" JOIN {membership} m ON m.id = d.membership_id"
            f" JOIN {entry} e ON e.id = m.entry_id"
            f" JOIN {version} v ON v.id = m.entry_version_id"
            f" JOIN {artifact} a ON a.scope_id = m.scope_id"
            f" AND a.family = '{MEMORY_FAMILY}' AND a.artifact_id = '{MEMORY_ARTIFACT_ID}'"
        )


class SqliteBackend(SearchBackend):
    vendor = "sqlite"

    def document_terms(self, scope_id: str, text: str) -> str:
        return " ".join(_tokens(scope_id, analyzer.analyze(text)))

    def _memory_sql(self) -> str:
        docs = MemorySearchDocument._meta.db_table
        return (
            f"SELECT m.id, e.entry_id, v.entry_version_id, v.version, v.kind, v.text,"
            f" bm25({FTS_TABLE}) AS relevance, a.current_revision"
            f" FROM {FTS_TABLE} JOIN {docs} d ON d.membership_id = {FTS_TABLE}.rowid"
            f"{self._joins()}"
            f" WHERE {FTS_TABLE} MATCH %s AND d.scope_id = %s AND m.scope_id = %s"
            f" AND m.to_revision IS NULL AND m.state = 'active'"
            f" ORDER BY relevance ASC, m.id ASC LIMIT %s"
        )

    def _memory_params(self, scope_id: str, tokens: list[str], limit: int) -> list[object]:
        match = " OR ".join(f'"{token}"' for token in tokens)
        return [match, scope_id, scope_id, limit]

    def _relevance(self, raw: float) -> float:
        return -float(raw)  # FTS5 bm25 is negative; more negative is more relevant

    def engine_problems(self) -> list[str]:
        try:
            with connection.cursor() as cursor:
                cursor.execute(
                    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rank) VALUES ('integrity-check', 1)"
                )
        except Exception as exc:  # the FTS5 check reports corruption as a database error
            return [f"fts5 integrity-check failed: {type(exc).__name__}"]
        return []

    def repair_engine(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')")


class PostgresBackend(SearchBackend):
    vendor = "postgresql"

    def document_terms(self, scope_id: str, text: str) -> str:
        positions: dict[str, list[int]] = {}
        for index, token in enumerate(_tokens(scope_id, analyzer.analyze(text)), start=1):
            slots = positions.setdefault(token, [])
            if len(slots) < MAX_POSITIONS_PER_LEXEME:
                slots.append(min(index, MAX_POSITION))
        # Tokens are ASCII alphanumeric, so they need no quoting in a tsvector literal.
        return " ".join(f"{token}:{','.join(map(str, sorted(set(p))))}" for token, p in positions.items())

    def _memory_sql(self) -> str:
        docs = MemorySearchDocument._meta.db_table
        return (
            f"SELECT m.id, e.entry_id, v.entry_version_id, v.version, v.kind, v.text,"
            f" ts_rank_cd(d.document, q.query) AS relevance, a.current_revision"
            f" FROM (SELECT %s::tsquery AS query) q, {docs} d"
            f"{self._joins()}"
            f" WHERE d.document @@ q.query AND d.scope_id = %s AND m.scope_id = %s"
            f" AND m.to_revision IS NULL AND m.state = 'active'"
            f" ORDER BY relevance DESC, m.id ASC LIMIT %s"
        )

    def _memory_params(self, scope_id: str, tokens: list[str], limit: int) -> list[object]:
        return [" | ".join(tokens), scope_id, scope_id, limit]

    def _relevance(self, raw: float) -> float:
        return float(raw)

    def engine_problems(self) -> list[str]:
        docs = MemorySearchDocument._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {docs} WHERE document IS DISTINCT FROM terms::tsvector")
            (count,) = cursor.fetchone()
        return [f"{count} tsvector values differ from their terms"] if count else []


def backend() -> SearchBackend:
    if connection.vendor == "postgresql":
        return PostgresBackend()
    if connection.vendor == "sqlite":
        return SqliteBackend()
    raise RuntimeError("unsupported database vendor")


# --- index maintenance (called inside the writers' transactions) -----------------------------


def index_memberships(items: Iterable[tuple[MemoryMembership, str]]) -> None:
    """Add index rows for active memberships; ``items`` pairs each membership with its text."""
    engine = backend()
    MemorySearchDocument.objects.bulk_create(
        [
            MemorySearchDocument(
                membership_id=membership.pk,
                scope_id=membership.scope_id,
                terms=engine.document_terms(membership.scope_id, text),
            )
            for membership, text in items
        ]
    )


def unindex_memberships(membership_ids: Iterable[int]) -> None:
    ids = list(membership_ids)
    if ids:
        MemorySearchDocument.objects.filter(membership_id__in=ids).delete()


# --- rebuild and verify ----------------------------------------------------------------------


def _expected_documents(scope_id: str | None) -> Iterator[tuple[int, str, str]]:
    """(membership id, scope id, terms) for every active open membership, by membership id."""
    engine = backend()
    rows = MemoryMembership.objects.filter(to_revision__isnull=True, state=MemoryMembership.State.ACTIVE)
    if scope_id is not None:
        rows = rows.filter(scope_id=scope_id)
    last = 0
    while True:
        batch = list(
            rows.filter(pk__gt=last)
            .order_by("pk")
            .values_list("pk", "scope_id", "entry_version__text")[:REBUILD_BATCH]
        )
        if not batch:
            return
        for pk, scope, text in batch:
            yield pk, scope, engine.document_terms(scope, text)
        last = batch[-1][0]


def _scopes_with_memory() -> list[str]:
    return list(
        Artifact.objects.filter(family=MEMORY_FAMILY, artifact_id=MEMORY_ARTIFACT_ID)
        .order_by("scope_id")
        .values_list("scope_id", flat=True)
    )


def count_expected(scope_id: str | None = None) -> int:
    rows = MemoryMembership.objects.filter(to_revision__isnull=True, state=MemoryMembership.State.ACTIVE)
    if scope_id is not None:
        rows = rows.filter(scope_id=scope_id)
    return rows.count()


def rebuild_memory_index(
    *, scope_id: str | None = None, progress: Callable[[int], None] | None = None
) -> int:
    """Recompute the index rows of one scope (or every scope) from authoritative rows.

    Each scope is rebuilt in one transaction, so a concurrent reader sees the old or the new
    rows, never a half-built index; citations are untouched because only derived rows change.
    Returns the number of rows written.
    """
    scopes = [scope_id] if scope_id is not None else _scopes_with_memory()
    written = 0
    for scope in scopes:
        with transaction.atomic():
            MemorySearchDocument.objects.filter(scope_id=scope).delete()
            batch: list[MemorySearchDocument] = []
            for pk, doc_scope, terms in _expected_documents(scope):
                batch.append(MemorySearchDocument(membership_id=pk, scope_id=doc_scope, terms=terms))
                if len(batch) >= REBUILD_BATCH:
                    MemorySearchDocument.objects.bulk_create(batch)
                    written += len(batch)
                    if progress:
                        progress(len(batch))
                    batch = []
            if batch:
                MemorySearchDocument.objects.bulk_create(batch)
                written += len(batch)
                if progress:
                    progress(len(batch))
    if scope_id is None:
        with transaction.atomic():
            # Rows of scopes that no longer have memberships (cannot happen through the
            # services, but a rebuild must converge whatever the index held).
            MemorySearchDocument.objects.exclude(scope_id__in=scopes).delete()
            backend().repair_engine()
    return written


@dataclass
class VerifyReport:
    checked: int = 0
    missing: int = 0
    extra: int = 0
    mismatched: int = 0
    engine: list[str] = field(default_factory=list)
    repaired: bool = False

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.mismatched or self.engine)

    def as_dict(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "checked": self.checked,
            "missing": self.missing,
            "extra": self.extra,
            "mismatched": self.mismatched,
            "engine": list(self.engine),
            "repaired": self.repaired,
        }


def verify_memory_index(*, scope_id: str | None = None, repair: bool = False) -> VerifyReport:
    """Compare index rows with authoritative rows; optionally rebuild what drifted.

    The report carries counts only: no scope ids, entry ids or text.
    """
    report = VerifyReport()
    drifted: set[str] = set()
    actual_rows = MemorySearchDocument.objects.all()
    if scope_id is not None:
        actual_rows = actual_rows.filter(scope_id=scope_id)
    actual_iter = iter(actual_rows.order_by("membership_id").values_list("membership_id", "scope_id", "terms").iterator(chunk_size=REBUILD_BATCH))
    actual = next(actual_iter, None)
    for pk, scope, terms in _expected_documents(scope_id):
        report.checked += 1
        while actual is not None and actual[0] < pk:
            report.extra += 1
            drifted.add(actual[1])
            actual = next(actual_iter, None)
        if actual is None or actual[0] != pk:
            report.missing += 1
            drifted.add(scope)
            continue
        if actual[1] != scope or actual[2] != terms:
            report.mismatched += 1
            drifted.update({scope, actual[1]})
        actual = next(actual_iter, None)
    while actual is not None:
        report.extra += 1
        drifted.add(actual[1])
        actual = next(actual_iter, None)
    report.engine = backend().engine_problems()
    if repair and not report.ok:
        for scope in sorted(drifted):
            rebuild_memory_index(scope_id=scope)
        if report.engine:
            with transaction.atomic():
                backend().repair_engine()
        report.repaired = True
    return report
