"""Rebuild and verify: recompute index rows from authoritative rows at any time.

Only derived rows change, so citations are untouched; each scope is rebuilt in one transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import models, transaction

from powercontext.search.engines import Engine, engine
from powercontext.search.indexes import INDEXES, REBUILD_BATCH, Index


def count_expected(scope_id: str | None = None) -> int:
    return sum(1 for index in INDEXES for _ in index.expected(scope_id))


def _rebuild_scope(index: Index, scope: str, db: Engine, progress: Callable[[int], None] | None) -> int:
    written = 0
    with transaction.atomic():
        index.model._default_manager.filter(scope_id=scope).delete()
        batch: list[models.Model] = []
        for pk, doc_scope, terms in index.expected(scope):
            batch.append(
                index.model(**{"pk": pk, "scope_id": doc_scope, "terms": db.document_terms(doc_scope, terms)})
            )
            if len(batch) >= REBUILD_BATCH:
                index.model._default_manager.bulk_create(batch)
                written += len(batch)
                if progress:
                    progress(len(batch))
                batch = []
        if batch:
            index.model._default_manager.bulk_create(batch)
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
                index.model._default_manager.exclude(scope_id__in=scopes).delete()
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
    actual_rows = index.model._default_manager.all()
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
