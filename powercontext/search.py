"""Full-text search over derived index rows: SQLite FTS5 and PostgreSQL full text.

Both backends index the same terms (``powercontext.analyzer``) as opaque, scope-keyed ASCII
tokens, so they agree on what matches; each ranks with its own engine (FTS5 ``bm25``,
PostgreSQL ``ts_rank_cd``). Scope and head filtering happen inside the one SQL statement that
ranks, and that statement also reads the head revision, so every hit of one search cites the
revision that statement saw.

Two indexes share this machinery: Memory (one row per active membership of each scope's current
head) and Experience (one row per approved, current Experience head, from its
``searchable_text``). Writers maintain rows in their own transaction; ``rebuild_*`` and
``verify_*`` recompute them from authoritative rows at any time.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, models, transaction

from powercontext import analyzer
from powercontext.models import (
    MEMORY_ARTIFACT_ID,
    MEMORY_FAMILY,
    Artifact,
    ArtifactRevision,
    ExperienceSearchDocument,
    MemoryEntry,
    MemoryEntryVersion,
    MemoryMembership,
    MemorySearchDocument,
)
from powercontext.selectors.artifacts import (
    EXPERIENCE_FAMILY,
    is_recallable_experience,
    recallable_experience_heads,
    recallable_experience_sql,
)

MAX_POSITIONS_PER_LEXEME = 255
MAX_POSITION = 16383
REBUILD_BATCH = 2000


# --- engines -----------------------------------------------------------------------------------


def _tokens(scope_id: str, terms: Iterable[str]) -> list[str]:
    key = analyzer.scope_key(scope_id)
    return [analyzer.index_token(key, term) for term in terms]


def _score(raw: float) -> float:
    """Map an engine relevance (>= 0, higher is better) into [0, 1)."""
    raw = max(0.0, float(raw))
    return raw / (1.0 + raw)


class Engine:
    """How one database stores index rows and ranks matches."""

    vendor = ""

    def document_terms(self, scope_id: str, terms: Iterable[str]) -> str:
        raise NotImplementedError

    def top_sql(self, index: Index) -> str:
        """SQL for the ``limit`` best matches of one scope: rows (doc_key, relevance), best
        first, ties by key. Ranking happens inside the engine before any join, so its cost per
        match stays that of the engine's own scoring."""
        raise NotImplementedError

    def top_params(self, tokens: list[str], scope_id: str, limit: int) -> list[Any]:
        raise NotImplementedError

    def relevance(self, raw: float) -> float:
        raise NotImplementedError

    def engine_problems(self, index: Index) -> list[str]:
        return []

    def repair_engine(self, index: Index) -> None:
        """Rebuild engine structures from the document rows."""


class SqliteEngine(Engine):
    vendor = "sqlite"

    def document_terms(self, scope_id: str, terms: Iterable[str]) -> str:
        return " ".join(_tokens(scope_id, terms))

    def top_sql(self, index: Index) -> str:
        # Tokens carry the scope key, so the MATCH itself reads only this scope's postings.
        fts = index.fts_table
        return (
            f"SELECT {fts}.rowid AS doc_key, -bm25({fts}) AS relevance FROM {fts}"
            f" WHERE {fts} MATCH %s ORDER BY relevance DESC, {fts}.rowid LIMIT %s"
        )

    def top_params(self, tokens: list[str], scope_id: str, limit: int) -> list[Any]:
        return [" OR ".join(f'"{token}"' for token in tokens), limit]

    def relevance(self, raw: float) -> float:
        return float(raw)

    def engine_problems(self, index: Index) -> list[str]:
        fts = index.fts_table
        try:
            with connection.cursor() as cursor:
                cursor.execute(f"INSERT INTO {fts}({fts}, rank) VALUES ('integrity-check', 1)")
        except Exception as exc:  # FTS5 reports a damaged index as a database error
            return [f"{index.name}: fts5 integrity-check failed ({type(exc).__name__})"]
        return []

    def repair_engine(self, index: Index) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {index.fts_table}({index.fts_table}) VALUES ('rebuild')")


class PostgresEngine(Engine):
    vendor = "postgresql"

    def document_terms(self, scope_id: str, terms: Iterable[str]) -> str:
        positions: dict[str, list[int]] = {}
        for index, token in enumerate(_tokens(scope_id, terms), start=1):
            slots = positions.setdefault(token, [])
            if len(slots) < MAX_POSITIONS_PER_LEXEME:
                slots.append(min(index, MAX_POSITION))
        # Tokens are ASCII alphanumeric: no quoting needed in a tsvector literal.
        return " ".join(f"{token}:{','.join(map(str, sorted(set(p))))}" for token, p in positions.items())

    def top_sql(self, index: Index) -> str:
        docs, key = index.model._meta.db_table, index.key
        return (
            f"SELECT t.{key} AS doc_key, ts_rank_cd(t.document, q.query) AS relevance"
            f" FROM (SELECT %s::tsquery AS query) q, {docs} t"
            f" WHERE t.document @@ q.query AND t.scope_id = %s ORDER BY relevance DESC, t.{key} LIMIT %s"
        )

    def top_params(self, tokens: list[str], scope_id: str, limit: int) -> list[Any]:
        return [" | ".join(tokens), scope_id, limit]

    def relevance(self, raw: float) -> float:
        return float(raw)

    def engine_problems(self, index: Index) -> list[str]:
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT count(*) FROM {index.model._meta.db_table} WHERE document IS DISTINCT FROM terms::tsvector"
            )
            (count,) = cursor.fetchone()
        return [f"{index.name}: {count} tsvector values differ from their terms"] if count else []


def engine() -> Engine:
    if connection.vendor == "postgresql":
        return PostgresEngine()
    if connection.vendor == "sqlite":
        return SqliteEngine()
    raise RuntimeError("unsupported database vendor")


# --- the two indexes ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Index:
    name: str
    model: type[models.Model]
    key: str  # the document's primary-key column (= the FTS5 rowid)
    fts_table: str
    # Yields (document pk, scope id, terms) for every authoritative row, ordered by pk.
    expected: Callable[[str | None], Iterator[tuple[int, str, list[str]]]]
    scopes: Callable[[], list[str]]


def _batched(rows: Any, pk: str) -> Iterator[Any]:
    last = 0
    while True:
        batch = list(rows.filter(**{f"{pk}__gt": last}).order_by(pk)[:REBUILD_BATCH])
        if not batch:
            return
        yield from batch
        last = batch[-1][0]


def _expected_memory(scope_id: str | None) -> Iterator[tuple[int, str, list[str]]]:
    rows = MemoryMembership.objects.filter(to_revision__isnull=True, state=MemoryMembership.State.ACTIVE)
    if scope_id is not None:
        rows = rows.filter(scope_id=scope_id)
    for pk, scope, text in _batched(rows.values_list("pk", "scope_id", "entry_version__text"), "pk"):
        yield pk, scope, analyzer.analyze(text)


def _expected_experience(scope_id: str | None) -> Iterator[tuple[int, str, list[str]]]:
    rows = recallable_experience_heads()
    if scope_id is not None:
        rows = rows.filter(scope_id=scope_id)
    for pk, scope, text in _batched(rows.values_list("pk", "scope_id", "searchable_text"), "pk"):
        yield pk, scope, text.split()


def _memory_scopes() -> list[str]:
    return list(
        Artifact.objects.filter(family=MEMORY_FAMILY, artifact_id=MEMORY_ARTIFACT_ID)
        .order_by("scope_id")
        .values_list("scope_id", flat=True)
    )


def _experience_scopes() -> list[str]:
    return list(
        Artifact.objects.filter(family=EXPERIENCE_FAMILY)
        .order_by("scope_id")
        .values_list("scope_id", flat=True)
        .distinct()
    )


MEMORY_INDEX = Index(
    "memory", MemorySearchDocument, "membership_id", "memory_fts", _expected_memory, _memory_scopes
)
EXPERIENCE_INDEX = Index(
    "experience",
    ExperienceSearchDocument,
    "head_id",
    "experience_fts",
    _expected_experience,
    _experience_scopes,
)
INDEXES = (MEMORY_INDEX, EXPERIENCE_INDEX)
experience_heads = recallable_experience_heads


# --- search --------------------------------------------------------------------------------------


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


@dataclass(frozen=True)
class ExperienceSearchRow:
    artifact_pk: int
    family: str
    artifact_id: str
    revision: int
    content: dict[str, Any]
    score: float


@dataclass(frozen=True)
class _Ranked:
    """One ranked, scope- and head-filtered query over one index (a SELECT with ORDER/LIMIT).

    Every query selects the same ten columns, with typed NULLs where a source has no value, so
    that Memory and Experience can be read by one statement (one snapshot): source tag, pk, id,
    version id, version, kind, text, head revision, content, relevance.
    """

    index: Index
    tag: str
    select: str
    joins: str
    where: str

    def sql(self, db: Engine) -> str:
        docs, key = self.index.model._meta.db_table, self.index.key
        return (
            f"SELECT '{self.tag}' AS src, {self.select}, top.relevance AS relevance"
            f" FROM ({db.top_sql(self.index)}) top JOIN {docs} d ON d.{key} = top.doc_key {self.joins}"
            f" WHERE d.scope_id = %s AND {self.where}"
        )

    @staticmethod
    def params(db: Engine, scope_id: str, tokens: list[str], limit: int) -> list[Any]:
        # The joins re-check scope and head: index rows exist only for the scope's current,
        # active rows, so these conditions never drop a row unless the index has drifted (which
        # ``verify_index`` reports).
        return [*db.top_params(tokens, scope_id, limit), scope_id, scope_id]


_MEMORY_QUERY = _Ranked(
    MEMORY_INDEX,
    "m",
    "m.id, e.entry_id, v.entry_version_id, v.version, v.kind, v.text, a.current_revision, CAST(NULL AS jsonb)",
    f" JOIN {MemoryMembership._meta.db_table} m ON m.id = d.membership_id"
    f" JOIN {MemoryEntry._meta.db_table} e ON e.id = m.entry_id"
    f" JOIN {MemoryEntryVersion._meta.db_table} v ON v.id = m.entry_version_id"
    f" JOIN {Artifact._meta.db_table} a ON a.scope_id = m.scope_id"
    f" AND a.family = '{MEMORY_FAMILY}' AND a.artifact_id = '{MEMORY_ARTIFACT_ID}'",
    "m.scope_id = %s AND m.to_revision IS NULL AND m.state = 'active'",
)
_EXPERIENCE_QUERY = _Ranked(
    EXPERIENCE_INDEX,
    "e",
    "a.id, a.artifact_id, CAST(NULL AS text), CAST(NULL AS integer), CAST(NULL AS text), CAST(NULL AS text),"
    " a.current_revision, r.content",
    f" JOIN {Artifact._meta.db_table} a ON a.id = d.head_id"
    f" JOIN {ArtifactRevision._meta.db_table} r ON r.head_id = a.id AND r.revision = a.current_revision",
    f"a.scope_id = %s AND {recallable_experience_sql('a')}",
)


def _search(
    scope_id: str, query: str, limits: list[tuple[_Ranked, int]]
) -> tuple[list[MemorySearchRow], list[ExperienceSearchRow]]:
    """Run the ranked queries with a positive limit as ONE statement (one snapshot)."""
    terms = analyzer.query_terms(query)
    wanted = [(ranked, limit) for ranked, limit in limits if limit >= 1]
    if not terms or not wanted:
        return [], []
    db = engine()
    tokens = _tokens(scope_id, terms)
    sql = " UNION ALL ".join(
        f"SELECT * FROM ({ranked.sql(db)}) AS q{n}" for n, (ranked, _) in enumerate(wanted)
    )
    sql += " ORDER BY 1, 10 DESC, 2"
    params: list[Any] = []
    for ranked, limit in wanted:
        params.extend(ranked.params(db, scope_id, tokens, limit))
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    memory: list[MemorySearchRow] = []
    experience: list[ExperienceSearchRow] = []
    for r in rows:
        if r[0] == "m":
            memory.append(
                MemorySearchRow(
                    membership_id=r[1],
                    entry_id=r[2],
                    entry_version_id=r[3],
                    version=r[4],
                    kind=r[5],
                    text=r[6],
                    head_revision=r[7],
                    score=_score(db.relevance(r[9])),
                )
            )
        else:
            experience.append(
                ExperienceSearchRow(
                    artifact_pk=r[1],
                    family=EXPERIENCE_FAMILY,
                    artifact_id=r[2],
                    revision=r[7],
                    content=json.loads(r[8]) if isinstance(r[8], str) else r[8],
                    score=_score(db.relevance(r[9])),
                )
            )
    return memory, experience


def search_memory(scope_id: str, query: str, limit: int) -> list[MemorySearchRow]:
    """Ranked active entries of the scope's current Memory head, with the head's revision."""
    return _search(scope_id, query, [(_MEMORY_QUERY, limit)])[0]


def search_experience(scope_id: str, query: str, limit: int) -> list[ExperienceSearchRow]:
    """Ranked approved, current Experience heads of the scope, with their current content."""
    return _search(scope_id, query, [(_EXPERIENCE_QUERY, limit)])[1]


def search_context(
    scope_id: str, query: str, *, memory_limit: int, experience_limit: int
) -> tuple[list[MemorySearchRow], list[ExperienceSearchRow]]:
    """Memory and Experience candidates for one prepare, read by one statement: one snapshot,
    one round trip. Each source keeps its own ranking and limit."""
    return _search(scope_id, query, [(_MEMORY_QUERY, memory_limit), (_EXPERIENCE_QUERY, experience_limit)])


# --- maintenance inside the writers' transactions ------------------------------------------------


def index_memberships(items: Iterable[tuple[MemoryMembership, str]]) -> None:
    """Add index rows for active memberships; ``items`` pairs each membership with its text."""
    db = engine()
    MemorySearchDocument.objects.bulk_create(
        [
            MemorySearchDocument(
                membership_id=membership.pk,
                scope_id=membership.scope_id,
                terms=db.document_terms(membership.scope_id, analyzer.analyze(text)),
            )
            for membership, text in items
        ]
    )


def unindex_memberships(membership_ids: Iterable[int]) -> None:
    ids = list(membership_ids)
    if ids:
        MemorySearchDocument.objects.filter(membership_id__in=ids).delete()


def index_experience_head(head: Artifact) -> None:
    """Make the Experience index row of ``head`` match its current ``searchable_text``."""
    ExperienceSearchDocument.objects.filter(head_id=head.pk).delete()
    if is_recallable_experience(head):
        ExperienceSearchDocument.objects.create(
            head_id=head.pk,
            scope_id=head.scope_id,
            terms=engine().document_terms(head.scope_id, head.searchable_text.split()),
        )


# --- rebuild and verify ----------------------------------------------------------------------------


def count_expected(scope_id: str | None = None) -> int:
    return sum(1 for index in INDEXES for _ in index.expected(scope_id))


def _rebuild_scope(index: Index, scope: str, db: Engine, progress: Callable[[int], None] | None) -> int:
    written = 0
    with transaction.atomic():
        index.model.objects.filter(scope_id=scope).delete()
        batch: list[models.Model] = []
        for pk, doc_scope, terms in index.expected(scope):
            batch.append(
                index.model(**{"pk": pk, "scope_id": doc_scope, "terms": db.document_terms(doc_scope, terms)})
            )
            if len(batch) >= REBUILD_BATCH:
                index.model.objects.bulk_create(batch)
                written += len(batch)
                if progress:
                    progress(len(batch))
                batch = []
        if batch:
            index.model.objects.bulk_create(batch)
            written += len(batch)
            if progress:
                progress(len(batch))
    return written


def rebuild_index(*, scope_id: str | None = None, progress: Callable[[int], None] | None = None) -> int:
    """Recompute the index rows of one scope (or every scope) from authoritative rows.

    Each scope is rebuilt in one transaction, so a concurrent reader sees the old or the new
    rows, never a half-built index; citations are untouched because only derived rows change.
    Returns the number of rows written (Memory and Experience together).
    """
    db = engine()
    written = 0
    for index in INDEXES:
        scopes = [scope_id] if scope_id is not None else index.scopes()
        for scope in scopes:
            written += _rebuild_scope(index, scope, db, progress)
        if scope_id is None:
            with transaction.atomic():
                # Rows of scopes without authoritative rows cannot come from the services, but
                # a full rebuild must converge whatever the index held.
                index.model.objects.exclude(scope_id__in=scopes).delete()
                db.repair_engine(index)
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


def _verify(index: Index, scope_id: str | None, report: VerifyReport, db: Engine) -> set[str]:
    """Merge-compare expected and actual rows (both ordered by pk); return drifted scopes."""
    drifted: set[str] = set()
    actual_rows = index.model.objects.all()
    if scope_id is not None:
        actual_rows = actual_rows.filter(scope_id=scope_id)
    actual_iter = iter(
        actual_rows.order_by("pk").values_list("pk", "scope_id", "terms").iterator(chunk_size=REBUILD_BATCH)
    )
    actual = next(actual_iter, None)
    for pk, scope, terms in index.expected(scope_id):
        report.checked += 1
        while actual is not None and actual[0] < pk:
            report.extra += 1
            drifted.add(actual[1])
            actual = next(actual_iter, None)
        if actual is None or actual[0] != pk:
            report.missing += 1
            drifted.add(scope)
            continue
        if actual[1] != scope or actual[2] != db.document_terms(scope, terms):
            report.mismatched += 1
            drifted.update({scope, actual[1]})
        actual = next(actual_iter, None)
    while actual is not None:
        report.extra += 1
        drifted.add(actual[1])
        actual = next(actual_iter, None)
    return drifted


def verify_index(*, scope_id: str | None = None, repair: bool = False) -> VerifyReport:
    """Compare both indexes with authoritative rows; optionally rebuild what drifted.

    The report carries counts only: no scope ids, entry ids or text.
    """
    report = VerifyReport()
    db = engine()
    drifted = {index.name: _verify(index, scope_id, report, db) for index in INDEXES}
    broken = []
    for index in INDEXES:
        problems = db.engine_problems(index)
        report.engine.extend(problems)
        if problems:
            broken.append(index)
    if repair and not report.ok:
        for index in INDEXES:
            for scope in sorted(drifted[index.name]):
                _rebuild_scope(index, scope, db, None)
        for index in broken:
            with transaction.atomic():
                db.repair_engine(index)
        report.repaired = True
    return report
